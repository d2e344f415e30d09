// src/puma/pipeline_run.h: what the steps of run_pipeline share, inside puma/ only. pipeline.cpp holds the step
// table and the driver; each stage has its file: stage_prepare.cpp (tokenizer, prepare), stage_sft.cpp,
// stage_eval.cpp (eval-sft, eval-dpo, eval-rl), stage_dpo.cpp (sample, score, dpo) and stage_rl.cpp.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "puma/model.h"
#include "puma/pipeline.h"
#include "puma/prepare.h"
#include "puma/rl.h"
#include "puma/rl_tasks.h"
#include "puma/scoring.h"
#include "puma/step_cache.h"

namespace pwab::llama {
class ProcessGroup;
}

namespace pwab::puma::stages {

namespace fs = std::filesystem;
using nlohmann::json;

//! The lines of a JSONL text (the last one may lack its newline).
std::vector<std::string_view> split_lines(std::string_view text);
//! Prepared examples as training pairs (prompt, target).
std::vector<TrainPair> pairs_of(const std::vector<Example>& examples);
//! The first `n` items (0 = all): the --train-limit / --test-limit cut.
template <typename T>
std::vector<T> first_n(std::vector<T> v, int n) {
  if (n > 0 && v.size() > static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
  return v;
}
//! Settings and reports as the steps' `.done` files, options.json and train.json hold them.
json train_json(const TrainOptions& o);
json shape_json(const ModelShape& s);
json train_report_json(const TrainReport& r);
//! The model a pipeline starts from: a new from-scratch model in `dir`, or the one there.
std::unique_ptr<PumaModel> open_or_create(const fs::path& dir, const PipelineOptions& o, bool from_scratch);
void write_json(const fs::path& file, const json& j);
//! The first `limit` tasks of a split (0 = all).
std::vector<const data::Task*> task_list(const data::Dataset& ds, data::Split split, int limit);

// Progress lines for a long loop over tasks: done, rate, ETA, every ~30 s.
class TaskProgress {
 public:
  TaskProgress(const StepCache& steps, std::string what, std::size_t total)
      : steps_(steps), what_(std::move(what)), total_(total) {}
  void done(std::size_t n) {
    auto now = std::chrono::steady_clock::now();
    if (n < total_ && std::chrono::duration<double>(now - last_).count() < 30) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(n) / std::max(1e-9, secs);
    steps_.log(fmt::format("{}: {}/{} tasks, {:.2f} tasks/s, ETA {:.0f} s", what_, n, total_, rate,
                           rate > 0 ? static_cast<double>(total_ - n) / rate : 0.0));
  }

 private:
  const StepCache& steps_;
  std::string what_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

// What the steps share: the inputs, the folders, the report, and the settings so far. Each step appends its own
// settings to `settings` before it checks its `.done`, so a step's `.done` holds the settings of every step up to
// it: a changed setting redoes its step and every later one even across runs.
struct PipelineRun {
  PipelineRun(const PipelineContext& context, const PipelineOptions& options, PipelineReport& into)
      : ctx(context), o(options), ds(*context.ds), report(into), steps(context, into, options.out, options.reuse_from),
        tiny(options.base_model.empty()), base(tiny ? options.out / "base" : options.base_model),
        data_dir(options.out / "data"), sft_dir(options.out / "sft"), dpo_dir(options.out / "dpo"),
        rl_dir(options.out / "rl"), sft_options(options.sft), dpo_options(options.dpo), rl_options(options.rl.train) {
    sft_options.on_progress = dpo_options.on_progress = rl_options.on_progress = context.progress;
    sft_options.cancel = dpo_options.cancel = rl_options.cancel = context.cancel;
  }
  const PipelineContext& ctx;
  const PipelineOptions& o;
  const data::Dataset& ds;
  PipelineReport& report;
  StepCache steps;
  const bool tiny;      // a from-scratch model over a vocabulary learnt from the dataset
  const fs::path base;  // the model SFT starts from
  const fs::path data_dir, sft_dir, dpo_dir, rl_dir;
  TrainOptions sft_options, dpo_options, rl_options;  // the options with the context's progress and cancel
  std::string settings;
  // Where the second-stage branches start from: the settings up to eval-sft and whether a step up to it was redone.
  std::string settings_after_sft;
  bool redo_after_sft = false;
  //! Data-parallel: this process's group (null for one process). Rank 0 runs every step; the others join the
  //! training steps only, when rank 0 announces that it trains (tell_followers).
  llama::ProcessGroup* group = nullptr;
  std::set<std::string> told;  // the training steps announced so far
  bool cancelled() const { return ctx.cancel && ctx.cancel->load(); }
  //! Where rewards that train the model come from: the reward environment when there is one.
  const env::Environment& reward_env() const { return ctx.reward_env ? *ctx.reward_env : *ctx.env; }
  //! The reward checkpoint as settings, by path and content ({} without one, so that `.done` files from before it
  //! stay valid).
  json reward_settings() const {
    if (o.reward_checkpoint.empty()) return json::object();
    json j = {{"reward_checkpoint", o.reward_checkpoint.string()}};
    if (!ctx.reward_fingerprint.empty()) j["reward_fingerprint"] = ctx.reward_fingerprint;
    return j;
  }
};

bool held_out(const PipelineRun& run, const std::string& task);
std::vector<Example> second_stage_examples(const PipelineRun& run, std::vector<Example> examples);
void tell_followers(PipelineRun& run, const std::string& step, bool train);

// The steps (one file per stage).
void tokenizer_step(PipelineRun& run);
void prepare_step(PipelineRun& run);
void sft_step(PipelineRun& run);
void eval_sft_step(PipelineRun& run);
void sample_step(PipelineRun& run);
void score_step(PipelineRun& run);
void dpo_step(PipelineRun& run);
void eval_dpo_step(PipelineRun& run);
void rl_step(PipelineRun& run);
void eval_rl_step(PipelineRun& run);

// What the other ranks of a data-parallel run build to join a training step.
std::pair<std::vector<TrainPair>, std::vector<TrainPair>> sft_pairs(const PipelineRun& run);
std::vector<PreferenceExample> read_preference_pairs(const fs::path& file);
struct RlSetup {
  std::unique_ptr<PumaModel> model;
  MultiTurnWorld world;       // the train episodes': the reward environment
  MultiTurnWorld eval_world;  // the evaluation episodes': the environment the benchmark scores with
  RlTasks train, eval;
};
RlSetup rl_setup(const PipelineRun& run);
RlOptions rl_options(const PipelineRun& run);

}  // namespace pwab::puma::stages
