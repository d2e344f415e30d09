// src/puma/stage_rl.cpp: the second stage by online RL: the rl step over the environment's tasks.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agents/puma_prompt.h"
#include "core/error.h"
#include "puma/pipeline_run.h"
#include "puma/rl_tasks.h"

namespace pwab::puma::stages {

namespace {

// The RL step's settings (what its `.done` adds to the settings after eval-sft).
json rl_json(const PipelineRun& run) {
  const PipelineOptions& o = run.o;
  const RlOptions& r = o.rl;
  json types = json::array();
  for (data::TaskType t : o.rl_types) types.push_back(std::string(data::to_string(t)));
  json j = {{"algo", std::string(llama::to_string(r.algo))}, {"iterations", r.iterations},
          {"tasks", r.tasks_per_iteration}, {"group", r.group_size}, {"temperature", r.temperature},
          {"top_k", r.top_k}, {"max_new_tokens", r.max_new_tokens}, {"clip_low", r.clip_low},
          {"clip_high", r.clip_high}, {"kl", r.kl_coef}, {"loss_norm", r.per_sequence ? "sequence" : "token"},
          {"inner_epochs", r.inner_epochs},
          {"minibatches", r.minibatches}, {"skip_tied", r.skip_tied_groups}, {"eval_every", r.eval_every},
          {"track", data::to_string(o.rl_track)}, {"types", types},
          {"eval_tasks", o.rl_eval_tasks}, {"max_steps", o.rl_max_steps}, {"function", o.rl_function},
          {"train", train_json(r.train)}};
  if (o.rl_distinct_reviews) j["distinct_reviews"] = true;  // absent when off: earlier runs' steps stay reusable
  j.update(run.reward_settings());
  return j;
}

// At most `limit` items spread evenly over `items` (all when limit is 0 or more than there are): an evaluation
// set that sees every part of the split.
template <typename T>
std::vector<T> spread_subset(const std::vector<T>& items, int limit) {
  if (limit <= 0 || items.size() <= static_cast<std::size_t>(limit)) return items;
  std::vector<T> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(limit); ++i) out.push_back(items[i * items.size() / limit]);
  return out;
}

std::vector<Example> of_types(std::vector<Example> examples, const std::vector<data::TaskType>& types) {
  std::erase_if(examples, [&](const Example& e) { return std::find(types.begin(), types.end(), e.type) == types.end(); });
  return examples;
}

json rl_report_json(const RlReport& r) {
  json j = {{"iterations", r.iterations}, {"resumed", r.resumed}, {"seconds", r.seconds}, {"episodes", r.episodes},
            {"completions", r.completions}, {"train_tokens", r.train_tokens}, {"sample_seconds", r.sample_seconds},
            {"update_seconds", r.update_seconds}, {"eval_seconds", r.eval_seconds}, {"ranks", r.world},
            {"rollouts_per_s", static_cast<double>(r.completions) / std::max(1e-9, r.sample_seconds)}};
  if (r.have_eval) {
    auto e = [](const RlEvaluation& x) {
      json k = {{"reward", x.reward}, {"tasks", x.tasks}};
      for (const auto& [kind, v] : x.by_kind) k["reward_" + kind] = v;
      return k;
    };
    if (!r.resumed) j["first_eval"] = e(r.first_eval);
    j["last_eval"] = e(r.last_eval);
  }
  return j;
}

}  // namespace

RlSetup rl_setup(const PipelineRun& run) {
  const PipelineOptions& o = run.o;
  RlSetup s;
  s.model = PumaModel::open(run.sft_dir / "model", {}, o.model);
  if (o.rl_track == data::Track::kSingleTurn) {
    s.train = single_turn_rl_tasks(
        run.reward_env(), of_types(second_stage_examples(run, read_examples(run.data_dir / "param_train.jsonl")), o.rl_types),
        o.rl_function, o.rl_distinct_reviews);
    s.eval = single_turn_rl_tasks(
        *run.ctx.env, spread_subset(of_types(read_examples(run.data_dir / "param_test.jsonl"), o.rl_types), o.rl_eval_tasks));
    if (o.rl_eval_tasks == 0) s.eval = RlTasks{};
  } else {
    s.world.env = &run.reward_env();
    s.world.embedder = run.ctx.embedder;
    s.world.memory = o.prepare.memory;
    s.world.counter = agents::tokenizer_token_counter(s.model->shared_tokenizer());
    s.world.max_steps = o.rl_max_steps;
    auto of = [&](data::Split split, int limit) {
      std::vector<const data::Task*> out;
      for (const data::Task* t : task_list(run.ds, split, limit))
        if (std::find(o.rl_types.begin(), o.rl_types.end(), t->type) != o.rl_types.end() &&
            (split == data::Split::kTest || o.holdout <= 0 || held_out(run, data::task_key(*t))))
          out.push_back(t);
      return out;
    };
    s.train = multi_turn_rl_tasks(s.world, of(data::Split::kTrain, o.train_limit));
    s.eval_world = s.world;
    s.eval_world.env = run.ctx.env;  // the curve follows the benchmark's own scores
    if (o.rl_eval_tasks > 0)
      s.eval = multi_turn_rl_tasks(s.eval_world, spread_subset(of(data::Split::kTest, o.test_limit), o.rl_eval_tasks));
  }
  if (s.train.size() == 0) throw UsageError("rl: no train task of the chosen types (--rl-types)");
  return s;
}

RlOptions rl_options(const PipelineRun& run) {
  RlOptions r = run.o.rl;
  r.train = run.rl_options;
  r.copy_search = run.o.copy_search;
  if (r.train.lora) {
    r.train.adapter_dir = run.rl_dir / "adapter";
    r.train.adapter_base_model = (run.sft_dir / "model").string();
  }
  return r;
}

// rl: online RL from the SFT model on the environment's reward (rl.h); the RL model is the result.
void rl_step(PipelineRun& run) {
  run.settings = run.settings_after_sft + rl_json(run).dump();  // the RL branch starts after eval-sft
  run.steps.set_redoing(run.redo_after_sft);
  if (run.steps.skip("rl", run.rl_dir, run.settings)) return tell_followers(run, "rl", false);
  RlSetup s = rl_setup(run);
  const RlOptions& r = run.o.rl;
  run.steps.log(fmt::format("rl: {} ({}), {} iterations of {} tasks × {} episodes, {} train tasks, {} evaluation tasks",
                            s.model->describe(), llama::to_string(r.algo), r.iterations, r.tasks_per_iteration,
                            r.group_size, s.train.size(), s.eval.size()));
  claim_work_dir(run.rl_dir / "work", run.settings);
  tell_followers(run, "rl", true);
  RlReport report = train_rl(*s.model, s.train, s.eval, run.rl_dir / "work", rl_options(run), run.ctx.log);
  if (report.cancelled) {
    run.report.cancelled = true;
    return;
  }
  s.model->save(run.rl_dir / "model");
  write_json(run.rl_dir / "train.json", rl_report_json(report));
  run.steps.log(fmt::format("rl: {} iterations, {} episodes in {:.1f} s (sampling {:.1f} s, updates {:.1f} s){}",
                            report.iterations, report.episodes, report.seconds, report.sample_seconds,
                            report.update_seconds,
                            report.have_eval ? fmt::format("; greedy reward {:.4f} → {:.4f}",
                                                           report.first_eval.reward, report.last_eval.reward)
                                             : ""));
  run.steps.mark("rl", run.rl_dir, run.settings);
}

}  // namespace pwab::puma::stages
