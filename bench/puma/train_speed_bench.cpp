// PUMA's training and sampling throughput against PyTorch eager (issue 18): the same SFT step and the same DPO step
// on the same rows (the tiny preset's SFT data on the mini dataset: its tokenizer, model shape, batch, AdamW, padding
// to each batch's longest row), once in pwab's C++ loop (PumaModel::sft / dpo) and once as a plain PyTorch-eager loop
// (bench/puma/eager_sft.py under Debian's python3-torch: the same libtorch 1.13). The checks require pwab's loop to
// be at least as fast. Sampling: candidates per second, beam-sample (the tiny and paper presets) and independent
// samples (the cpu preset).
#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "core/sys.h"
#include "puma/model.h"
#include "puma/prepare.h"
#include "tok/tokenizer.h"

namespace pwab::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr int kSteps = 200;     // optimizer steps timed in each loop
constexpr int kDpoSteps = 100;

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path root(const Context& ctx) { return ctx.out_dir / "puma-speed"; }
fs::path anchor_script() { return fs::path(PWAB_SOURCE_DIR) / "bench" / "puma" / "eager_sft.py"; }

std::vector<puma::TrainPair> sft_rows;
std::vector<puma::PreferenceExample> dpo_rows;
double pwab_steps_per_s = 0, eager_steps_per_s = 0, pwab_dpo_steps_per_s = 0, eager_dpo_steps_per_s = 0;
// Every run's rate (the warm-up's too): the checks compare medians, since one run of either loop on a shared 2-core VM
// moves by ±15% and the two loops are within that of each other.
std::vector<double> pwab_sft_runs, eager_sft_runs, pwab_dpo_runs, eager_dpo_runs;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

std::string slower_message(const char* what, const std::vector<double>& pwab, const std::vector<double>& eager) {
  const double p = median(pwab), e = median(eager);
  return p >= e ? "" : fmt::format("pwab {:.2f} {} steps/s < PyTorch eager {:.2f} (medians of {} runs)", p, what, e,
                                   pwab.size());
}
bool have_python_torch = false;

// The tiny preset's SFT rows (4 copies of each function example, then the parameter examples) (each loop shuffles them every epoch),
// and their token ids for the anchor (BOS + prompt, target + EOS, cut at 384 tokens as the preset's max length).
void prepare_rows(const Context& ctx) {
  const fs::path mini = root(ctx) / "mini", run = root(ctx) / "run";
  const std::string pwab = pwab_binary(ctx).string();
  if (!fs::exists(mini / "user_instructions.json"))
    time_command(fmt::format("{} data synth --out {} --scale mini --seed 5 > /dev/null", pwab, mini.string()));
  if (!fs::exists(run / "data" / ".done"))
    time_command(fmt::format("{} puma prepare --data {} --out {} --embedder hashing > /dev/null 2>&1", pwab,
                             mini.string(), run.string()));
  sft_rows.clear();
  auto functions = puma::read_examples(run / "data" / "function_train.jsonl");
  for (int copy = 0; copy < 4; ++copy)
    for (const auto& e : functions) sft_rows.push_back({e.prompt, e.target});
  auto params = puma::read_examples(run / "data" / "param_train.jsonl");
  for (const auto& e : params) sft_rows.push_back({e.prompt, e.target});
  dpo_rows.clear();
  for (std::size_t i = 0; i < params.size(); ++i)
    dpo_rows.push_back({params[i].prompt, params[i].target, params[(i + 1) % params.size()].target});
  auto tokenizer = tok::load_tokenizer(run / "base");
  auto ids = [&](const std::string& text, bool prompt) {
    std::vector<int32_t> v = tokenizer->encode(text, prompt, false);
    if (!prompt) v.push_back(tokenizer->eos_id());
    return v;
  };
  auto cut = [](std::vector<int32_t> p, std::vector<int32_t> t) {
    if (p.size() + t.size() > 384) t.resize(p.size() < 384 ? 384 - p.size() : 0);
    return Json::array({p, t});
  };
  Json rows = Json::array(), pairs = Json::array();
  for (const auto& r : sft_rows) rows.push_back(cut(ids(r.prompt, true), ids(r.target, false)));
  for (const auto& r : dpo_rows) pairs.push_back(Json::array({ids(r.prompt, true), ids(r.chosen, false), ids(r.rejected, false)}));
  write_file_atomic(root(ctx) / "rows.json", Json{{"rows", rows}, {"pairs", pairs}}.dump());
  have_python_torch = std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
}

puma::TrainOptions tiny_sft() {
  puma::TrainOptions o;  // the tiny preset's SFT (run.cpp)
  o.epochs = 4;
  o.learning_rate = 3e-3;
  o.batch_size = 8;
  o.accumulation_steps = 1;
  o.warmup_ratio = 0.05;
  o.max_length = 384;
  o.lora = false;
  o.checkpoint_every = 0;
  o.log_every = 0;
  return o;
}

Json run_anchor(const Context& ctx, const std::string& mode, int steps, int batch) {
  const std::string cmd = fmt::format("/usr/bin/python3 {} {} --mode {} --steps {} --batch {} --threads {} --vocab 2000",
                                      anchor_script().string(), (root(ctx) / "rows.json").string(), mode, steps, batch,
                                      hardware_threads());
  std::string out = run_capture(cmd);
  return Json::parse(out.substr(out.find('{')));
}

const int kSft = add({
    "puma/sft_step_vs_eager",
    fmt::format("{} SFT steps of the tiny preset (mini dataset, batch 8, AdamW, pad to the batch's longest row) in "
                "pwab's loop; extra: tokens/s, steps/s and the same in PyTorch eager",
                kSteps),
    3,
    [](const Context& ctx) { prepare_rows(ctx); },
    [](const Context& ctx, std::vector<Extra>& extras) {
      auto model = puma::PumaModel::create_tiny(root(ctx) / "run" / "base");
      puma::TrainOptions o = tiny_sft();
      o.stop_after_steps = kSteps;
      fs::remove_all(root(ctx) / "work");
      Stopwatch clock;
      puma::TrainReport r = model->sft(sft_rows, {}, root(ctx) / "work", o);
      const double seconds = clock.seconds();
      pwab_steps_per_s = kSteps / seconds;
      pwab_sft_runs.push_back(pwab_steps_per_s);
      extras.push_back({"pwab_steps_per_s", pwab_steps_per_s, "1/s"});
      extras.push_back({"pwab_tokens_per_s", static_cast<double>(r.tokens) / seconds, "tokens/s"});
      extras.push_back({"pwab_loop_seconds", r.seconds, "s"});
      if (have_python_torch) {
        Json eager = run_anchor(ctx, "sft", kSteps, 8);
        eager_steps_per_s = eager["steps_per_s"].get<double>();
        eager_sft_runs.push_back(eager_steps_per_s);
        extras.push_back({"median pwab / eager", median(pwab_sft_runs) / median(eager_sft_runs), "x"});
        extras.push_back({"eager_steps_per_s", eager_steps_per_s, "1/s"});
        extras.push_back({"eager_tokens_per_s", eager["tokens_per_s"].get<double>(), "tokens/s"});
        extras.push_back({"pwab / eager", pwab_steps_per_s / eager_steps_per_s, "x"});
      }
      // the same steps with group_by_length (the cpu preset's setting): less padding per step
      auto grouped_model = puma::PumaModel::create_tiny(root(ctx) / "run" / "base");
      o.group_by_length = true;
      fs::remove_all(root(ctx) / "work");
      Stopwatch grouped;
      grouped_model->sft(sft_rows, {}, root(ctx) / "work", o);
      extras.push_back({"pwab_grouped_steps_per_s", kSteps / grouped.seconds(), "1/s"});
      return seconds;
    },
    [](const Context&) -> std::string {
      if (!have_python_torch) return "";  // the anchor needs Debian's python3-torch (make bench installs it)
      return slower_message("SFT", pwab_sft_runs, eager_sft_runs);
    },
});

const int kDpo = add({
    "puma/dpo_step_vs_eager",
    fmt::format("{} DPO steps (4 pairs a step, all weights, the reference cached) in pwab's loop; extra: tokens/s and "
                "the same in PyTorch eager",
                kDpoSteps),
    3,
    [](const Context& ctx) {
      if (sft_rows.empty()) prepare_rows(ctx);
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      auto model = puma::PumaModel::create_tiny(root(ctx) / "run" / "base");
      puma::TrainOptions o = tiny_sft();
      o.batch_size = 4;
      o.epochs = 1;
      o.stop_after_steps = kDpoSteps;
      fs::remove_all(root(ctx) / "dpo-work");
      fs::create_directories(root(ctx) / "dpo-work");
      // the reference pass is outside the timed loop in both (pwab caches it; the anchor uses a constant)
      model->dpo(dpo_rows, {}, root(ctx) / "dpo-work", [&] {
        puma::TrainOptions once = o;
        once.stop_after_steps = 1;
        return once;
      }());
      fs::remove(root(ctx) / "dpo-work" / "checkpoint.pt");
      Stopwatch clock;
      puma::TrainReport r = model->dpo(dpo_rows, {}, root(ctx) / "dpo-work", o);
      const double seconds = clock.seconds();
      pwab_dpo_steps_per_s = kDpoSteps / seconds;
      pwab_dpo_runs.push_back(pwab_dpo_steps_per_s);
      extras.push_back({"pwab_steps_per_s", pwab_dpo_steps_per_s, "1/s"});
      extras.push_back({"pwab_tokens_per_s", static_cast<double>(r.tokens) / seconds, "tokens/s"});
      if (have_python_torch) {
        Json eager = run_anchor(ctx, "dpo", kDpoSteps, 4);
        eager_dpo_steps_per_s = eager["steps_per_s"].get<double>();
        eager_dpo_runs.push_back(eager_dpo_steps_per_s);
        extras.push_back({"median pwab / eager", median(pwab_dpo_runs) / median(eager_dpo_runs), "x"});
        extras.push_back({"eager_steps_per_s", eager_dpo_steps_per_s, "1/s"});
        extras.push_back({"eager_tokens_per_s", eager["tokens_per_s"].get<double>(), "tokens/s"});
        extras.push_back({"pwab / eager", pwab_dpo_steps_per_s / eager_dpo_steps_per_s, "x"});
      }
      return seconds;
    },
    [](const Context&) -> std::string {
      if (!have_python_torch) return "";
      return slower_message("DPO", pwab_dpo_runs, eager_dpo_runs);
    },
});

// The whole `pwab puma sft --preset tiny` command a user types (process start, tokenizer, example preparation, the
// 4-epoch SFT with its schedule, checkpoints, the final evaluation and the saved model) against the whole anchor
// process (python start, import torch, reading the rows, the same number of steps over the same rows, batch 8,
// AdamW at the preset's learning rate). Issue 31's target is 1.5x.
std::vector<double> command_runs, eager_command_runs;
std::string command_problem;

const int kCommand = add({
    "puma/sft_command_vs_eager",
    "pwab puma sft --preset tiny on the mini dataset, the whole command, vs the whole PyTorch-eager process over the "
    "same rows and steps; extra: both times and their ratio (medians)",
    3,
    [](const Context& ctx) {
      if (sft_rows.empty()) prepare_rows(ctx);
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      const fs::path out = root(ctx) / "command";
      fs::remove_all(out);
      const std::string log = (root(ctx) / "command.log").string();
      const double seconds =
          time_command(fmt::format("{} puma sft --data {} --out {} --preset tiny > /dev/null 2> {}",
                                   pwab_binary(ctx).string(), (root(ctx) / "mini").string(), out.string(), log));
      command_runs.push_back(seconds);
      // the anchor runs the rows this bench built; the command must have trained on as many
      const std::string pairs = fmt::format("{} pairs", sft_rows.size());
      if (read_file(log).find(pairs) == std::string::npos)
        command_problem = "the command's log does not say '" + pairs + "' (see " + log + ")";
      const auto trained = Json::parse(read_file(out / "sft" / "train.json"));
      const int steps = trained.at("steps").get<int>();
      extras.push_back({"pwab command (median)", median(command_runs), "s"});
      extras.push_back({"pwab tokens/s in the loop", trained.at("tokens_per_s").get<double>(), "tokens/s"});
      if (have_python_torch) {
        const double eager = time_command(fmt::format(
            "/usr/bin/python3 {} {} --mode sft --steps {} --batch 8 --lr 3e-3 --threads {} --vocab 2000 > /dev/null",
            anchor_script().string(), (root(ctx) / "rows.json").string(), steps, hardware_threads()));
        eager_command_runs.push_back(eager);
        extras.push_back({"eager process (median)", median(eager_command_runs), "s"});
        extras.push_back({"eager / pwab (medians)", median(eager_command_runs) / median(command_runs), "x"});
      }
      return seconds;
    },
    [](const Context&) -> std::string {
      if (!command_problem.empty()) return command_problem;
      if (!have_python_torch) return "";
      const double ratio = median(eager_command_runs) / median(command_runs);
      return ratio >= 1.5 ? ""
                          : fmt::format("the whole command is {:.2f}x the eager process (medians of {} runs); the "
                                        "target is 1.5x",
                                        ratio, command_runs.size());
    },
});

double candidates_per_s = 0;

const int kSample = add({
    "puma/sampling",
    "candidates for 40 parameter prompts of the mini dataset (tiny model): 4-beam beam-sample at 1.5 (tiny preset) "
    "and 4 independent samples at 1.0 (cpu preset), 48 new tokens; extra: candidates/s",
    3,
    [](const Context& ctx) {
      if (sft_rows.empty()) prepare_rows(ctx);
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      auto model = puma::PumaModel::create_tiny(root(ctx) / "run" / "base");
      std::vector<std::string> prompts;
      for (std::size_t i = 0; i < 40; ++i) prompts.push_back(dpo_rows[i].prompt);
      puma::GenerateConfig beams;
      beams.max_new_tokens = 48;
      beams.sample = true;
      beams.temperature = 1.5;
      beams.num_beams = 4;
      beams.batch_size = 1;
      Stopwatch clock;
      std::size_t n = 0;
      for (const auto& p : prompts) n += model->generate({p}, beams).at(0).size();
      const double beam_seconds = clock.seconds();
      extras.push_back({"beam_sample_candidates_per_s", static_cast<double>(n) / beam_seconds, "1/s"});
      puma::GenerateConfig independent;
      independent.max_new_tokens = 48;
      independent.sample = true;
      independent.batch_size = 4;
      Stopwatch clock2;
      n = 0;
      for (const auto& p : prompts) n += model->generate(std::vector<std::string>(4, p), independent).size();
      const double sample_seconds = clock2.seconds();
      candidates_per_s = static_cast<double>(n) / sample_seconds;
      extras.push_back({"independent_candidates_per_s", candidates_per_s, "1/s"});
      return beam_seconds + sample_seconds;
    },
    [](const Context&) -> std::string { return candidates_per_s > 0 ? "" : "no candidates"; },
});

}  // namespace
}  // namespace pwab::bench
