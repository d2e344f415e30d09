// src/puma/pipeline.h: PUMA's whole training pipeline as resumable steps (reference §5; D6–D9):
//
//   tokenizer (tiny preset only) → prepare → sft → eval-sft → sample → score → dpo → eval-dpo
//
// Each step writes into its own folder under the output directory and marks itself done with a `.done` file that
// holds the step's settings; a later run skips a done step with the same settings and redoes one whose settings
// changed (and every step after it). SFT and DPO also resume mid-training from their checkpoints. The evaluation
// is the offline fast test (§3.5): greedy function, then greedy parameter with the runtime agent's prompt for the
// predicted function (D9), executed in the environment. docs/puma.md describes the layout and the presets.
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "puma/model.h"
#include "puma/prepare.h"
#include "puma/scoring.h"

namespace pwab::puma {

//! Every setting of a pipeline run (echoed into each step's `.done`).
struct PipelineOptions {
  std::filesystem::path out;
  //! The model to fine-tune: a Hugging Face directory; empty = the tiny preset (a small model trained from
  //! scratch over a sentencepiece vocabulary learnt from the dataset's text).
  std::filesystem::path base_model;
  int tiny_vocab_size = 2000;
  uint64_t seed = 1;
  ModelOptions model{};
  PrepareOptions prepare{};
  TrainOptions sft{};
  TrainOptions dpo{};
  int samples = 10;              //!< candidates per train task (beam-sample)
  double sample_temperature = 1.5;
  int max_new_tokens = 256;      //!< parameters; functions get 32
  int function_max_new_tokens = 32;
  //! Copies of each function-identification example in the SFT data (the original: 1). The tiny preset uses 4:
  //! a from-scratch model learns the short function prompts too slowly next to the long parameter prompts.
  int function_repeats = 1;
  int train_limit = 0;           //!< use only the first N train tasks (0 = all): smoke runs
  int test_limit = 0;            //!< evaluate on the first N test tasks (0 = all)
  std::string search_labels = "heuristic";  //!< "heuristic" or "llm" (then `search_labeler` is set)
  //! The tiny preset's settings: short memory, a few epochs with a larger learning rate, no LoRA.
  static PipelineOptions tiny_preset();
  //! The paper's settings for a LLaMA-2-7B base (§5.3, §5.5): LoRA r16/α32, SFT 10 epochs lr 3e-4 batch 1 × 16,
  //! DPO 5 epochs lr 5e-5, beta 0.1, 10 beams at temperature 1.5, 768-token memory of 100 behaviours.
  static PipelineOptions paper_preset();
};

//! What the pipeline reads and reports to.
struct PipelineContext {
  const data::Dataset* ds = nullptr;
  const embed::Embedder* embedder = nullptr;
  const env::Environment* env = nullptr;
  SearchLabeler search_labeler;                         //!< the LLM labeler when search_labels == "llm"
  std::function<void(const std::string&)> log;          //!< one line per event
  std::function<void(const TrainProgress&)> progress;   //!< training progress
  const std::atomic<bool>* cancel = nullptr;
};

//! The outcome of the evaluation steps.
struct PipelineReport {
  FastTestResult sft;
  FastTestResult dpo;
  bool have_sft = false, have_dpo = false;
  int preference_pairs = 0;
  int tie_tasks = 0;  //!< train tasks whose candidates all scored the same (D7: no pair)
  std::vector<std::string> skipped_steps;  //!< done before with the same settings
  std::vector<std::string> ran_steps;
  bool cancelled = false;
};

//! The step names in order.
const std::vector<std::string>& pipeline_steps();

//! Runs the steps from the first to `until` (inclusive; "" = all), skipping done ones. UsageError for an unknown
//! step name or a bad setting; the run can be interrupted (context.cancel) and resumed with the same command.
PipelineReport run_pipeline(const PipelineContext& context, const PipelineOptions& options,
                            const std::string& until = "");

//! The fast test of a model on test tasks: functions by the function prompt, parameters by the runtime agent's
//! prompt for the predicted function (D9), greedy. Writes functions.json and params.json into `dir` (the
//! original's `{instruction: [text]}` files) and returns the result.
FastTestResult evaluate_model(PumaModel& model, const PipelineContext& context, const PipelineOptions& options,
                              const std::vector<const data::Task*>& tasks, const std::filesystem::path& dir);

}  // namespace pwab::puma
