// src/puma/pipeline.cpp: run_pipeline as the table of its ten steps (pipeline_steps()): tokenizer, prepare, sft,
// eval-sft, then the DPO branch (sample, score, dpo, eval-dpo) or the RL branch (rl, eval-rl). Each step is a
// function in its stage's file; the state they share (the context, the folders, the settings so far, the report)
// is a PipelineRun (pipeline_run.h). This file keeps the table, the driver and the other ranks' loop.
#include "puma/pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "llama/distributed.h"
#include "puma/pipeline_run.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using namespace stages;

// The steps in order; pipeline_steps() lists their names.
struct PipelineStep {
  const char* name;
  void (*run)(PipelineRun&);
};

constexpr PipelineStep kSteps[] = {{"tokenizer", tokenizer_step}, {"prepare", prepare_step},
                                   {"sft", sft_step},             {"eval-sft", eval_sft_step},
                                   {"sample", sample_step},       {"score", score_step},
                                   {"dpo", dpo_step},             {"eval-dpo", eval_dpo_step},
                                   {"rl", rl_step},               {"eval-rl", eval_rl_step}};

// The settings a report names, written at each run (the steps' `.done` files hold them as they ran).
json options_json(const PipelineOptions& o, const PipelineContext& ctx) {
  json j = {{"preset", o.preset},
            {"base_model", o.base_model.empty() ? "(from scratch)" : o.base_model.string()},
            {"seed", o.seed},
            {"embedder", ctx.embedder ? ctx.embedder->name() : ""},
            {"search_labels", o.search_labels},
            {"memory",
             {{"k", o.prepare.memory.k},
              {"tokens", o.prepare.memory.max_tokens},
              {"recommend_layout", std::string(agents::to_string(o.prepare.memory.recommend_layout))},
              {"recommend_tokens", o.prepare.memory.recommend_max_tokens}}},
            {"sft_mode", std::string(to_string(o.sft_mode))},
            {"sft_weights", to_string(o.sft_weights)},
            {"sft", train_json(o.sft)},
            {"dpo", train_json(o.dpo)},
            {"samples", o.samples},
            {"sample_temperature", o.sample_temperature},
            {"sample_beams", o.sample_beams},
            {"max_new_tokens", o.max_new_tokens},
            {"train_limit", o.train_limit},
            {"holdout", o.holdout},
            {"align", o.align},
            {"test_limit", o.test_limit},
            {"sample_limit", o.sample_limit},
            {"dpo_eval_tasks", o.dpo_eval_tasks},
            {"device", o.model.device},
            {"dtype", o.model.dtype}};
  if (o.base_model.empty()) {
    j["shape"] = shape_json(o.shape);
    j["vocab"] = o.tiny_vocab_size;
  }
  return j;
}

}  // namespace

const std::vector<std::string>& pipeline_steps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PipelineStep& s : kSteps) out.emplace_back(s.name);
    return out;
  }();
  return names;
}

// The training steps as a rank other than 0 takes part in them: the same inputs and model as rank 0 builds (read
// from the pipeline directory rank 0 wrote), trained together; rank 0 writes every result.
void follow_sft(PipelineRun& run) {
  auto [train, eval] = sft_pairs(run);
  auto model = open_or_create(run.base, run.o, run.tiny);
  model->sft(train, eval, run.sft_dir / "work", run.sft_options);
}

void follow_dpo(PipelineRun& run) {
  std::vector<PreferenceExample> pairs = read_preference_pairs(run.dpo_dir / "score" / "pairs.jsonl");
  std::vector<PreferenceExample> eval = read_preference_pairs(run.dpo_dir / "score" / "pairs_test.jsonl");
  auto model = PumaModel::open(run.sft_dir / "model", {}, run.o.model);
  model->dpo(pairs, eval, run.dpo_dir / "work", run.dpo_options);
}

void follow_rl(PipelineRun& run) {
  RlSetup s = rl_setup(run);
  train_rl(*s.model, s.train, s.eval, run.rl_dir / "work", rl_options(run));
}

PipelineReport follow_pipeline(PipelineRun& run, PipelineReport& report, const std::string& until) {
  for (const PipelineStep& step : kSteps) {
    const std::string name = step.name;
    if (name == "sft" || name == "dpo" || name == "rl") {
      const bool train = run.group->wait_for(name) == "train";
      run.steps.log(fmt::format("rank {}: {} {}", run.group->rank(), name, train ? "starts" : "is not trained now"));
      if (train) (name == "sft" ? follow_sft : name == "dpo" ? follow_dpo : follow_rl)(run);
    }
    if (name == until) break;
  }
  return report;
}

PipelineReport run_pipeline(const PipelineContext& ctx, const PipelineOptions& o, const std::string& until) {
  if (!ctx.ds || !ctx.embedder || !ctx.env) throw UsageError("run_pipeline: dataset, embedder and environment needed");
  const auto& steps = pipeline_steps();
  if (!until.empty() && std::find(steps.begin(), steps.end(), until) == steps.end())
    throw UsageError(fmt::format("unknown pipeline step '{}' (steps: {})", until, fmt::join(steps, ", ")));
  if (o.reward_checkpoint.empty() != (ctx.reward_env == nullptr))
    throw UsageError(o.reward_checkpoint.empty()
                         ? "run_pipeline: a reward environment without the reward checkpoint that names it"
                         : "--reward-checkpoint " + o.reward_checkpoint.string() + " was not opened as a reward environment");
  if (o.search_labels == "llm" && !ctx.search_labeler)
    throw UsageError("search labels from an LLM need --model (or use --search-labels heuristic)");
  if (o.sft_weights.dialogue > 0 && o.sft_mode != SftMode::kFunction && !ctx.dialogue_teacher)
    throw UsageError(fmt::format("multi-turn SFT data (--sft-weights dialogue={:g}) needs a teacher agent; pass "
                                 "dialogue=0 to train without it", o.sft_weights.dialogue));
  o.validate();
  if (o.holdout > 0) {
    const std::size_t train_tasks = ctx.ds->tasks(data::Split::kTrain).size();
    const std::size_t used = o.train_limit > 0 ? std::min<std::size_t>(train_tasks, o.train_limit) : train_tasks;
    if (static_cast<std::size_t>(o.holdout) >= used)
      throw UsageError(fmt::format("--holdout {} would keep all {} train tasks out of SFT: pass a smaller --holdout "
                                   "(0: the second stage learns on the SFT tasks)",
                                   o.holdout, used));
  }
  PipelineReport report;
  // Started as several processes (torchrun, srun): each rank on a GPU of its own when the device is "cuda".
  const llama::DistEnv env = llama::dist_env_from_environment();
  PipelineOptions placed = o;
  placed.model.device = llama::device_for_rank(o.model.device, env);
  PipelineRun run(ctx, placed, report);
  // Join the group; rank 0 runs the pipeline, the others train.
  std::unique_ptr<llama::ProcessGroup> group;
  if (env.world > 1) {
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.dist_timeout_s * 1000));
    group = std::make_unique<llama::ProcessGroup>(env, timeout, placed.model.device);
    run.group = run.sft_options.group = run.dpo_options.group = run.rl_options.group = group.get();
    report.rank = env.rank;
    report.world = env.world;
    run.steps.log(fmt::format("rank {} of {} ({}, {}), rendezvous at {}:{}, {} threads", env.rank, env.world,
                              env.launcher, group->backend(), env.master_addr, env.master_port,
                              std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "all the"));
    if (env.rank != 0) {
      run.sft_options.on_progress = run.dpo_options.on_progress = run.rl_options.on_progress = nullptr;
      return follow_pipeline(run, report, until);
    }
  }
  fs::create_directories(o.out);
  write_json(o.out / "options.json", options_json(o, ctx));
  // The second stage: the branch the last step asked for belongs to, else the one --align names.
  const std::string branch = pipeline_branch(until).empty() ? parse_align(o.align) : pipeline_branch(until);
  for (const PipelineStep& step : kSteps) {
    const std::string own = pipeline_branch(step.name);
    if (!own.empty() && own != branch) {
      if (own == "dpo" ? step.name == std::string("dpo") : step.name == std::string("rl"))
        tell_followers(run, step.name, false);  // the other ranks stop waiting for a training step not taken
      continue;
    }
    step.run(run);
    if (report.cancelled || step.name == until) break;  // cancelled: the same command resumes
  }
  // The training steps not reached are not trained now: the other ranks may stop waiting for them.
  for (const char* step : {"sft", "dpo", "rl"}) tell_followers(run, step, false);
  write_pipeline_report(o.out);
  return report;
}

}  // namespace pwab::puma
