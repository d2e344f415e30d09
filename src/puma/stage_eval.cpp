// src/puma/stage_eval.cpp: the fast test of a stage's model on the test split (eval-sft, eval-dpo, eval-rl;
// evaluate_model, pipeline.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agents/puma_prompt.h"
#include "core/sys.h"
#include "core/text.h"
#include "env/tools.h"
#include "puma/pipeline_run.h"
#include "puma/search_vocabulary.h"

namespace pwab::puma {
namespace stages {
namespace {

json fast_test_json(const FastTestResult& r) {
  json j = json::object();
  auto row = [](const FastTestRow& x) {
    return json{{"total", x.total}, {"function_acc", x.function_acc}, {"result_acc", x.result_acc}};
  };
  for (const auto& [type, x] : r.by_type) j[type] = row(x);
  j["overall"] = row(r.overall);
  return j;
}

FastTestResult fast_test_from_json(const json& j) {
  FastTestResult r;
  auto row = [](const json& x) {
    return FastTestRow{x.at("total").get<int>(), x.at("function_acc").get<double>(), x.at("result_acc").get<double>()};
  };
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() == "overall") r.overall = row(it.value());
    else r.by_type[it.key()] = row(it.value());
  return r;
}

}  // namespace

// The fast test of the model in `dir`/model on the test split (eval-sft, eval-dpo), written to `dir`/eval; its
// result, run now or before, is returned.
FastTestResult evaluate_step(PipelineRun& run, const std::string& step, const fs::path& dir) {
  const fs::path eval_dir = dir / "eval";
  if (!run.steps.skip(step, eval_dir, run.settings)) {
    auto model = PumaModel::open(dir / "model", {}, run.o.model);
    FastTestResult r =
        evaluate_model(*model, run.ctx, run.o, task_list(run.ds, data::Split::kTest, run.o.test_limit), eval_dir);
    run.steps.log(fmt::format("{}: function acc {:.3f}, result acc {:.3f} (search {:.3f}, recommend {:.3f}, review "
                              "{:.3f})",
                              step, r.overall.function_acc, r.overall.result_acc, r.by_type["search"].result_acc,
                              r.by_type["recommend"].result_acc, r.by_type["review"].result_acc));
    run.steps.mark(step, eval_dir, run.settings);
  }
  return fast_test_from_json(json::parse(read_file(eval_dir / "fast_test.json")));
}

// eval-sft: the fast test of the SFT model.
void eval_sft_step(PipelineRun& run) {
  run.settings += json{{"max_new_tokens", run.o.max_new_tokens}, {"function_file", run.o.function_file.string()}}.dump();
  if (run.o.copy_search) run.settings += json{{"search_decoding", "copy"}}.dump();
  run.report.sft = evaluate_step(run, "eval-sft", run.sft_dir);
  run.report.have_sft = true;
  run.settings_after_sft = run.settings;
  run.redo_after_sft = run.steps.redoing();
}

// eval-dpo: the fast test of the DPO model.
void eval_dpo_step(PipelineRun& run) {
  run.report.dpo = evaluate_step(run, "eval-dpo", run.dpo_dir);
  run.report.have_dpo = true;
}

// eval-rl: the fast test of the RL model.
void eval_rl_step(PipelineRun& run) {
  run.report.rl = evaluate_step(run, "eval-rl", run.rl_dir);
  run.report.have_rl = true;
}

}  // namespace stages

namespace fs = std::filesystem;
using stages::fast_test_json;
using stages::task_list;
using stages::write_json;
using nlohmann::json;

FastTestResult evaluate_model(PumaModel& model, const PipelineContext& ctx, const PipelineOptions& o,
                              const std::vector<const data::Task*>& tasks, const fs::path& dir) {
  const data::Dataset& ds = *ctx.ds;
  auto counter = agents::tokenizer_token_counter(model.shared_tokenizer());
  std::map<std::string, std::string, std::less<>> functions, params;
  json functions_json = json::object(), params_json = json::object();
  GenerateConfig g;
  g.batch_size = 8;
  if (!o.function_file.empty()) {
    Predictions given = read_predictions(o.function_file);
    for (const data::Task* t : tasks) {
      auto it = given.find(t->instruction);
      std::string fn = it == given.end() || it->second.empty() ? "" : std::string(trim(it->second.front()));
      functions[t->instruction] = fn;
      functions_json[t->instruction] = json::array({fn});
    }
  } else {
    std::vector<std::string> function_prompts;
    for (const data::Task* t : tasks) function_prompts.push_back(agents::puma_function_prompt(t->instruction));
    g.max_new_tokens = o.function_max_new_tokens;
    auto generated = model.generate(function_prompts, g);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      std::string fn = agents::puma_function_from_completion(generated[i].at(0));
      functions[tasks[i]->instruction] = fn;
      functions_json[tasks[i]->instruction] = json::array({fn});
    }
  }
  std::vector<std::string> param_prompts;
  for (const data::Task* t : tasks) {
    const std::string& fn = functions[t->instruction];
    std::optional<data::TaskType> type = env::task_type_of_function(fn);
    std::string memory = agents::puma_memory(ds, *t, type, *ctx.embedder, o.prepare.memory, *counter);
    param_prompts.push_back(agents::puma_param_prompt(agents::puma_instruction_text(ds, *t, type), memory, fn));
  }
  g.max_new_tokens = o.max_new_tokens;
  if (o.copy_search) {
    g.allowed_tokens.resize(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (functions[tasks[i]->instruction] == env::kSearch)
        g.allowed_tokens[i] = search_vocabulary(model.tokenizer(), param_prompts[i]);
  }
  auto param_texts = model.generate(param_prompts, g);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::string p = agents::puma_generated_part(param_texts[i].at(0), "### Tool Parameter:\n");
    params[tasks[i]->instruction] = p;
    params_json[tasks[i]->instruction] = json::array({p});
  }
  fs::create_directories(dir);
  write_json(dir / "functions.json", functions_json);
  write_json(dir / "params.json", params_json);
  FastTestResult r = fast_test(*ctx.env, tasks, functions, params);
  std::string lines;
  for (const FastTestTask& t : r.tasks)
    lines += json{{"task", t.task}, {"type", std::string(data::to_string(t.type))}, {"function", t.function},
                  {"f", t.f}, {"r", t.r}}
                 .dump() +
             "\n";
  write_file_atomic(dir / "scores.jsonl", lines);
  write_json(dir / "fast_test.json", fast_test_json(r));
  return r;
}

}  // namespace pwab::puma
