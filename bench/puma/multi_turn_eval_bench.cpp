// The multi-turn track played by an in-process PUMA model (issue 40 item 3, docs/puma.md "Multi-turn"): the cpu
// preset's SFT model (puma/cpu_experiment's pipeline directory, trained here first when it is missing) as the puma
// agent against the scripted user, 10 steps, the whole test split, with the runner's episodes sharing the model's
// forward passes (`--concurrency 32`: local_model.cpp batches the requests that wait while a batch runs).
// Beside it, in the same run: the same agent one episode at a time on the first kPairedTasks test tasks, and the
// batched run's records of those tasks, which must be identical (greedy decoding).
// Checks: the whole split in at most 30 minutes; identical records. Extras: seconds and generations/s both ways, the
// speed-up, Avg. Steps, endings, the diagnosis's flags (`pwab score --data`: step_cap, repeated_call, ignored_answer,
// …) as shares of the tasks, R. Acc by type.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "core/sys.h"

namespace pwab::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path root(const Context& ctx) { return ctx.out_dir / "puma-multi-eval"; }
fs::path cpu_run(const Context& ctx) { return ctx.out_dir / "puma-cpu" / "run"; }
Json read_json(const fs::path& file) { return Json::parse(read_file(file)); }
constexpr int kSteps = 10, kPairedTasks = 60, kConcurrency = 32;

double whole_seconds = 0;
int whole_tasks = 0;

// `pwab run` of the puma agent on the SFT model; "" tasks = the whole split.
std::string run_command(const Context& ctx, const fs::path& out, int concurrency, const std::string& tasks) {
  const fs::path model = cpu_run(ctx) / "sft" / "model";
  return fmt::format("{} run --quiet --data {} --track multi --user-sim scripted --agent puma --model puma-sft "
                     "--local-model {} --agent-opt tokenizer={} --memory-length 20 --agent-opt memory_tokens=64 "
                     "--agent-opt recommend_memory=numbered --agent-opt recommend_memory_tokens=128 --max-steps {} "
                     "--concurrency {} {} --out {} >> {} 2>&1",
                     pwab_binary(ctx).string(), full_dataset_dir(ctx).string(), model.string(), model.string(), kSteps,
                     concurrency, tasks.empty() ? "" : "--tasks " + tasks, out.string(),
                     (root(ctx) / "log.txt").string());
}

// Task key → the record's actions and observations (the part of a record that greedy decoding decides).
std::map<std::string, Json> records(const fs::path& run) {
  std::map<std::string, Json> out;
  std::istringstream in(read_file(run / "results.jsonl"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json r = Json::parse(line);
    out[r.at("task").get<std::string>()] = Json{{"actions", r.at("actions")}, {"ending", r.at("ending")}};
  }
  return out;
}

int generations(const fs::path& run) {
  int n = 0;
  std::istringstream in(read_file(run / "results.jsonl"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) n += Json::parse(line).at("steps").get<int>() + 1;  // each step + the function turn
  return n;
}

const int registered = add({
    "puma/multi_turn_eval",
    "the multi-turn test split (10 steps, scripted user) played by the cpu preset's SFT model in-process, the "
    "episodes batched (concurrency 32), beside one episode at a time on the first 60 tasks (identical records)",
    1,
    [](const Context& ctx) {
      fs::create_directories(root(ctx));
      const std::string pwab = pwab_binary(ctx).string();
      if (!fs::exists(cpu_run(ctx) / "sft" / "eval" / ".done"))  // the CPU experiment's SFT, when it has not run
        time_command(fmt::format("{} puma eval-sft --data {} --out {} --preset cpu > {} 2>&1", pwab,
                                 full_dataset_dir(ctx).string(), cpu_run(ctx).string(),
                                 (root(ctx) / "sft-log.txt").string()));
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      const fs::path one = root(ctx) / "one-at-a-time", paired = root(ctx) / "batched-first",
                     whole = root(ctx) / "batched";
      for (const fs::path& d : {one, paired, whole}) fs::remove_all(d);
      const std::string first = fmt::format("0:{}", kPairedTasks);
      const double one_s = time_command(run_command(ctx, one, 1, first));
      const double paired_s = time_command(run_command(ctx, paired, kConcurrency, first));
      whole_seconds = time_command(run_command(ctx, whole, kConcurrency, ""));
      Json s = read_json(whole / "summary.json");
      whole_tasks = s["groups"]["overall"].value("n_tasks", 0);
      extras.push_back({"one_at_a_time_s", one_s, "s"});
      extras.push_back({"batched_first_s", paired_s, "s"});
      extras.push_back({"speedup_first", one_s / std::max(1e-9, paired_s), "x"});
      extras.push_back({"whole_split_s", whole_seconds, "s"});
      extras.push_back({"whole_tasks", static_cast<double>(whole_tasks), ""});
      extras.push_back({"whole_generations_per_s", generations(whole) / std::max(1e-9, whole_seconds), "1/s"});
      extras.push_back({"one_at_a_time_generations_per_s", generations(one) / std::max(1e-9, one_s), "1/s"});
      extras.push_back({"avg_steps", s["groups"]["overall"]["avg_steps"]["value"].get<double>(), ""});
      extras.push_back({"r_acc", s["groups"]["overall"]["r_acc"]["value"].get<double>(), ""});
      extras.push_back({"f_acc", s["groups"]["overall"]["f_acc"]["value"].get<double>(), ""});
      for (const char* type : {"search", "recommend", "review"})
        extras.push_back({std::string("r_acc_") + type, s["groups"][type]["r_acc"]["value"].get<double>(), ""});
      // the diagnosis's flags (docs/metrics.md): step_cap, repeated_call, ignored_answer, … as shares of the tasks
      const fs::path diagnosis = root(ctx) / "diagnosis.json";
      time_command(fmt::format("{} score {} --data {} --format json --bootstrap 0 > {} 2>> {}",
                               pwab_binary(ctx).string(), whole.string(), full_dataset_dir(ctx).string(),
                               diagnosis.string(), (root(ctx) / "log.txt").string()));
      const Json overall = read_json(diagnosis)["diagnosis"]["categories"]["overall"];
      for (const char* flag : {"step_cap", "repeated_call", "ignored_answer", "wrong_function", "tool_error"})
        extras.push_back({std::string("flag_") + flag,
                          overall["flags"].value(flag, 0) / std::max(1.0, overall.value("records", 0.0)), ""});
      std::map<std::string, int> endings;
      for (const auto& [key, r] : records(whole)) ++endings[r.at("ending").get<std::string>()];
      for (const auto& [ending, n] : endings)
        extras.push_back({"ending_" + ending, static_cast<double>(n) / std::max(1, whole_tasks), ""});
      return whole_seconds;
    },
    [](const Context& ctx) -> std::string {
      if (whole_seconds > 1800) return fmt::format("the whole split took {:.0f} s > 1800 s", whole_seconds);
      const auto a = records(root(ctx) / "one-at-a-time"), b = records(root(ctx) / "batched-first");
      if (a.size() != static_cast<std::size_t>(kPairedTasks) || b.size() != a.size())
        return fmt::format("{} and {} records of the first {} tasks", a.size(), b.size(), kPairedTasks);
      for (const auto& [key, r] : a)
        if (b.at(key) != r) return "task " + key + ": the batched episode differs from the one-at-a-time one";
      return "";
    },
    /*warm_up=*/false,
});

}  // namespace
}  // namespace pwab::bench
