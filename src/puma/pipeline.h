// src/puma/pipeline.h: PUMA's whole training pipeline as resumable steps (docs/decisions.md §5; D6–D9):
//
//   tokenizer (from-scratch presets only) → prepare → sft → eval-sft ┬→ sample → score → dpo → eval-dpo
//                                                                     └→ rl → eval-rl
//
// After eval-sft the second stage branches: DPO on scored candidates (the paper's) or online RL on the
// environment's reward (rl.h). `pwab puma train` runs the branch PipelineOptions::align names; a step named as the
// end (`pwab puma rl`) runs its own branch, so one directory can hold both. The branches' settings are independent:
// changing a DPO setting never redoes RL.
//
// Each step writes into its own folder under the output directory and marks itself done with a `.done` file that
// holds the settings of every step up to it; a later run skips a done step with the same settings and redoes one
// whose settings changed (and every step after it). SFT and DPO also resume mid-training from their checkpoints.
// The evaluation is the offline fast test (§3.5): greedy function, then greedy parameter with the runtime agent's
// prompt for the predicted function (D9), executed in the environment. After the steps, report.json and report.md
// in the output directory gather what every step measured. docs/puma.md describes the layout and the presets.
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "data/track.h"
#include "llm/chat.h"
#include "puma/model.h"
#include "puma/prepare.h"
#include "puma/rl.h"
#include "puma/scoring.h"

namespace pwab::puma {

//! What the SFT step trains on (the original's --train_on).
enum class SftMode { kFunction, kParam, kFunctionParam };
std::string_view to_string(SftMode mode);
//! "function" / "param" / "function_param"; UsageError otherwise.
SftMode parse_sft_mode(std::string_view text);

//! Repeat weights of the SFT data by kind of example (PipelineOptions::sft_weights).
struct SftWeights {
  double function = 1, search = 1, recommend = 1, review = 1;
  //! The multi-turn examples (dialogue_data.h): 0, none, unless a preset or --sft-weights asks (the original had none).
  double dialogue = 0;
};
//! "function=0.25,search=3": the named weights changed from `base`; UsageError for an unknown name or a negative
//! or unreadable value.
SftWeights parse_sft_weights(std::string_view text, SftWeights base = {});
std::string to_string(const SftWeights& weights);

//! Every setting of a pipeline run (echoed into each step's `.done`).
struct PipelineOptions {
  std::string preset = "tiny";  //!< the preset these settings started from (reports only)
  std::filesystem::path out;
  //! The model to fine-tune: a Hugging Face directory; empty = a model trained from scratch (the tiny and cpu
  //! presets) of `shape` over a sentencepiece vocabulary learnt from the dataset's text.
  std::filesystem::path base_model;
  int tiny_vocab_size = 2000;
  ModelShape shape{};
  uint64_t seed = 1;
  ModelOptions model{};
  PrepareOptions prepare{};
  SftMode sft_mode = SftMode::kFunctionParam;
  TrainOptions sft{};
  TrainOptions dpo{};
  int samples = 10;              //!< candidates per task (beam-sample, or n from a server)
  double sample_temperature = 1.5;
  int sample_top_k = 50;         //!< 0 = every token
  //! Beam-sample (the original: num_beams = samples, do_sample) when true; independent samples when false.
  bool sample_beams = true;
  int max_new_tokens = 256;      //!< parameters; functions get function_max_new_tokens
  int function_max_new_tokens = 32;
  //! How often each kind of example enters the SFT data (the original: 1 each). A weight w keeps every example
  //! floor(w) times and a fixed pseudo-random share w − floor(w) of them once more (0.25: a quarter of them). The
  //! from-scratch presets shift the budget: the tiny one repeats the short function prompts (a new model learns
  //! them slowly next to the long parameter prompts), the cpu one spends it on search, the hardest to learn.
  SftWeights sft_weights{};
  int train_limit = 0;           //!< use only the first N train tasks (0 = all): smoke runs
  //! The last N train tasks (of those used) are held out of SFT and kept for the second stage: DPO samples its
  //! candidates and RL plays its episodes on them, prompts the SFT model has not learnt by heart. 0 = SFT and the
  //! second stage share every train task (the paper's). docs/puma.md "Online RL" measures why it matters.
  int holdout = 0;
  int test_limit = 0;            //!< evaluate on the first N test tasks (0 = all)
  int sample_limit = 0;          //!< sample DPO candidates for the first N train parameter examples (0 = all)
  //! Test tasks sampled and scored like the train ones, for the DPO evaluation pairs (eval loss, margin, KL); 0 =
  //! none. They are never trained on.
  int dpo_eval_tasks = 128;
  std::string search_labels = "heuristic";  //!< "heuristic" or "llm" (then `search_labeler` is set)
  //! Evaluation functions from this file (`{instruction: tool}` or `{instruction: [tool, ...]}`) instead of the
  //! model's own predictions: the ablation row "w/o SFT" keeps the full PUMA's functions.
  std::filesystem::path function_file;
  //! Steps done with the same settings in this other pipeline directory are taken over (hard links) instead of
  //! run again: the ablation's variants reuse the full run's tokenizer, data and models.
  std::filesystem::path reuse_from;
  //! The second stage `pwab puma train` runs after SFT: "dpo" (the paper's, the default), "rl" (online RL on the
  //! environment's reward) or "none" (SFT only).
  std::string align = "dpo";
  //! Online RL (the rl step, rl.h): iterations, group size, objective; rl.train holds its learning rate, schedule,
  //! clipping and LoRA settings.
  RlOptions rl{};
  data::Track rl_track = data::Track::kSingleTurn;  //!< single: parameter prompts; multi: episodes with the scripted user
  //! The task types RL trains on (all three by default).
  std::vector<data::TaskType> rl_types{data::TaskType::kSearch, data::TaskType::kRecommend, data::TaskType::kReview};
  int rl_eval_tasks = 256;  //!< test tasks (spread over the split) whose greedy reward the RL curve follows; 0 = none
  int rl_max_steps = 10;    //!< multi-turn RL: the step cap of an episode (the track's)
  //! Single-turn RL also samples each task's function prompt, rewarded by function accuracy and held to the SFT
  //! model by the KL term, so that training the parameters does not move the functions.
  bool rl_function = true;
  //! Single-turn RL scores a review by its similarity times its share of distinct word 3-grams
  //! (single_turn_rl_tasks): without it RL learnt reviews that say the same sentence again and again
  //! (docs/puma.md, "Reviews that repeat themselves"). Evaluations keep the benchmark's score.
  bool rl_distinct_reviews = false;
  //! The SASRec checkpoint behind the rewards the model trains on (the score step's train pairs, RL's train
  //! rollouts), when it is not the environment's: one trained with `pwab rec train --hold-out-train`, for which the
  //! train tasks' targets are unseen as the test tasks' are (docs/recommender.md, "A recommender for training
  //! rewards"). Evaluations keep the environment's. Empty = the environment's. The assembly opens it as
  //! PipelineContext::reward_env; the path is part of the score and rl steps' settings.
  std::filesystem::path reward_checkpoint;
  //! Search queries are decoded from the prompt's own words (search_vocabulary.h): in the fast tests, the DPO
  //! candidates, RL's rollouts and curve, and the multi-turn puma agent. Part of the settings from eval-sft on when
  //! set, so the SFT model is kept and everything after it redone.
  bool copy_search = false;
  //! Data-parallel training (docs/puma.md, "Several processes"): when the launcher (torchrun, srun) starts N > 1
  //! processes, each collective waits at most this long for the other ranks before failing. Not a setting of the
  //! result, so not in any step's `.done`.
  double dist_timeout_s = 300;

  //! A small model trained from scratch (hidden 64, 2 layers): short memory, a few epochs, no LoRA. Runs in
  //! minutes; learns the functions, not yet the parameters.
  static PipelineOptions tiny_preset();
  //! The CPU experiment (docs/puma.md "A PUMA that learns on a CPU"): a larger from-scratch model, prompts with a
  //! short memory, SFT long enough to learn to write queries, and a gentle DPO on LoRA adapters; the full
  //! synthetic dataset end to end in under an hour on 2 cores.
  static PipelineOptions cpu_preset();
  //! The paper's settings for a LLaMA-2-7B base (docs/decisions.md §5.3, §5.5): LoRA r16/α32 with modules_to_save, SFT
  //! 10 epochs lr 3e-4 (the script; the paper's text says 4e-3) batch 1 × 16, DPO 5 epochs lr 5e-5 batch 1 × 16, β 0.1,
  //! max length 1024 with prompts cut to 768, 10 beams at temperature 1.5, 768-token memory of 100 behaviours.
  static PipelineOptions paper_preset();
  //! The preset of this name ("tiny", "cpu", "paper"); UsageError otherwise.
  static PipelineOptions preset_named(const std::string& name);
  //! Every setting within its range, and the model's shape consistent: UsageError naming the first one that is not,
  //! by its `pwab puma` flag. The one check of these options: the front end calls it before loading anything,
  //! run_pipeline again (pipeline_options.cpp).
  void validate() const;
};

//! What the pipeline reads and reports to.
struct PipelineContext {
  const data::Dataset* ds = nullptr;
  const embed::Embedder* embedder = nullptr;
  const env::Environment* env = nullptr;
  //! The environment whose rewards train the model (PipelineOptions::reward_checkpoint); null = `env`. Set exactly
  //! when reward_checkpoint is.
  const env::Environment* reward_env = nullptr;
  //! What identifies the recommender behind reward_env (the assembly: its checkpoint's content hash), recorded beside
  //! reward_checkpoint's path in the settings of the steps it scores (score, rl): a checkpoint retrained in place
  //! redoes them. Empty = the path alone.
  std::string reward_fingerprint;
  SearchLabeler search_labeler;                         //!< the LLM labeler when search_labels == "llm"
  //! The agent whose multi-turn episodes become the multi-turn SFT examples (dialogue_data.h; the heuristic agent in
  //! `pwab puma`); needed when the dialogue weight is above 0.
  const agents::AgentFactory* dialogue_teacher = nullptr;
  //! What identifies the recommender behind `env` (the assembly: its checkpoint's content hash). The teacher's
  //! multi-turn episodes call it, so it is part of the prepare step's settings when that step makes multi-turn
  //! examples: a retrained recommender remakes them. Empty = not recorded.
  std::string recommender_fingerprint;
  //! When set, the sample step asks this OpenAI-compatible completions model for the candidates (n samples per
  //! prompt at the sampling temperature) instead of generating them in-process: 7B sampling on vLLM.
  llm::ChatModel* sample_model = nullptr;
  std::string sample_model_name;
  std::function<void(const std::string&)> log;          //!< one line per event
  std::function<void(const TrainProgress&)> progress;   //!< training progress
  const std::atomic<bool>* cancel = nullptr;
};

//! How the sampled candidates scored (the score step), over the tasks that had candidates.
struct CandidateStats {
  int tasks = 0;
  int pairs = 0;
  int tie_tasks = 0;           //!< tasks whose candidates all scored the same (docs/decisions.md D7: no pair)
  double mean_distinct = 0;    //!< distinct candidates per task
  double mean_best = 0;        //!< mean of each task's best score
  double mean_worst = 0;
  double mean_spread = 0;      //!< mean best − worst
  double mean_margin = 0;      //!< mean chosen − rejected score over the pairs
  double tie_share() const { return tasks ? static_cast<double>(tie_tasks) / tasks : 0; }
};

//! The outcome of the evaluation steps.
struct PipelineReport {
  //! Data-parallel: this process's rank (0 runs the pipeline and reports; the others only trained) and the world.
  int rank = 0, world = 1;
  FastTestResult sft;
  FastTestResult dpo;
  FastTestResult rl;
  bool have_sft = false, have_dpo = false, have_rl = false;
  int preference_pairs = 0;
  int tie_tasks = 0;  //!< train tasks whose candidates all scored the same (docs/decisions.md D7: no pair)
  CandidateStats candidates;  //!< train tasks
  std::vector<std::string> skipped_steps;  //!< done before with the same settings
  std::vector<std::string> ran_steps;
  bool cancelled = false;
};

//! The step names in order.
const std::vector<std::string>& pipeline_steps();
//! The second-stage branch a step belongs to: "dpo" (sample … eval-dpo), "rl" (rl, eval-rl) or "" (shared).
std::string pipeline_branch(std::string_view step);
//! "dpo", "rl" or "none"; UsageError otherwise.
std::string parse_align(std::string_view text);

//! Runs the steps from the first to `until` (inclusive; "" = all), skipping done ones, then writes report.json
//! and report.md. UsageError for an unknown step name or a bad setting; the run can be interrupted
//! (context.cancel) and resumed with the same command.
PipelineReport run_pipeline(const PipelineContext& context, const PipelineOptions& options,
                            const std::string& until = "");

//! The fast test of a model on test tasks: functions by the function prompt (or from options.function_file),
//! parameters by the runtime agent's prompt for the predicted function (docs/decisions.md D9), greedy. Writes
//! functions.json and params.json into `dir` (the original's `{instruction: [text]}` files), scores.jsonl (one line a
//! task: task, type, function, f, r) and fast_test.json, and returns the result.
FastTestResult evaluate_model(PumaModel& model, const PipelineContext& context, const PipelineOptions& options,
                              const std::vector<const data::Task*>& tasks, const std::filesystem::path& dir);

//! Writes `dir`/report.json and `dir`/report.md from what the steps left in `dir`: settings, per-step times,
//! the SFT and DPO curves (train and eval loss; DPO margin, accuracy, rewards and KL), the candidate statistics
//! and the fast tests. Returns the Markdown.
std::string write_pipeline_report(const std::filesystem::path& dir);

}  // namespace pwab::puma
