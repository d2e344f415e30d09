// src/puma/rl.h: PUMA learning online from the environment's reward (docs/puma.md "Online RL").
//
// Each iteration takes the next `tasks_per_iteration` tasks of a per-epoch shuffle, plays `group_size` episodes of
// each with the current policy (sampled at the temperature, every episode from its own seed), scores every
// episode with the benchmark's own reward, turns each task's rewards into group-relative advantages (GRPO or
// RLOO, llama/rl.h) and updates the policy on the token ids it sampled (PolicyTrainer, rl_trainer.h). An episode
// is anything that asks the policy for completions of prompts until it is over and then has a reward: one
// parameter prompt in the single-turn track, the puma agent's turns against the scripted user in the multi-turn
// one (the pipeline's rl step builds both, pipeline.cpp). Every completion of an episode is trained on with the
// episode's advantage, token for token as it was sampled; prompts are never trained on.
//
// The loop is resumable: a checkpoint (work_dir/checkpoint.pt: the trainable tensors, AdamW state, the iteration)
// every `checkpoint_every` iterations and on cancel, and an iteration's draws depend only on the seed, the
// iteration, the task and the episode, so a resumed run samples and trains what an uninterrupted one does. The
// curve (work_dir/curve.jsonl) has a point per iteration and, every `eval_every` iterations, the greedy reward on
// the evaluation tasks. Data-parallel ranks (train.group) each play every N-th task of an iteration.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llama/rl.h"
#include "puma/model.h"

namespace pwab::puma {

//! One episode of one task, played by the policy one completion at a time.
class RlEpisode {
 public:
  virtual ~RlEpisode() = default;
  //! The prompt the policy completes next, or nullopt once the episode is over.
  virtual std::optional<std::string> next_prompt() = 0;
  //! The policy's completion of the last prompt (decoded text, without special tokens).
  virtual void take(const std::string& completion) = 0;
  //! The episode's reward, once it is over.
  virtual double reward() const = 0;
  //! A completion of its own reward (the single-turn episode's function, rewarded by function accuracy): its
  //! advantage then comes from the same turn of the task's other episodes, not from the episode's reward, and the
  //! group stays in the update even when tied, so that the KL term holds that prompt where the reference has it.
  //! nullopt (the default): the completion carries the episode's advantage.
  virtual std::optional<double> turn_reward(std::size_t turn) const { return std::nullopt; }
  //! Whether the prompt next_prompt() last returned asks for a search query, which RlOptions::copy_search then
  //! decodes from the prompt's own words (search_vocabulary.h).
  virtual bool asks_search_query() const { return false; }
};

//! The tasks an RL run plays: task i is named keys[i], of kind kinds[i] ("search", ...: the curve's per-kind
//! rewards), and `episode(i, seed)` starts a fresh episode of it whose own randomness (a simulated user) comes
//! from `seed`.
struct RlTasks {
  std::vector<std::string> keys;
  std::vector<std::string> kinds;
  std::function<std::unique_ptr<RlEpisode>(std::size_t task, uint64_t seed)> episode;
  std::size_t size() const { return keys.size(); }
};

struct RlOptions {
  llama::AdvantageEstimator algo = llama::AdvantageEstimator::kGrpo;
  int iterations = 100;
  int tasks_per_iteration = 32;  //!< B: tasks (groups) per iteration, over all ranks
  int group_size = 8;            //!< G: episodes per task
  double temperature = 1.0;
  int top_k = 0;                 //!< 0 = the whole vocabulary
  int max_new_tokens = 96;       //!< per completion
  //! learning_rate, warmup_ratio, max_grad_norm, lora (r, alpha, modules_to_save), seed (task order, draws,
  //! LoRA initialisation), adapter_dir, group, cancel, on_progress.
  TrainOptions train;
  double clip_low = 0.2, clip_high = 0.2;
  double kl_coef = 0.0;
  //! Each completion weighs the same in the objective (its tokens averaged first, the original GRPO), or each
  //! token does (DAPO's token-level mean, where long completions dominate a batch of mixed lengths).
  bool per_sequence = true;
  int inner_epochs = 1;
  int minibatches = 1;
  //! Tasks whose episodes all scored the same give advantages of 0 and are left out of the update (they would
  //! only pull towards the reference); counted in the curve as groups without signal.
  bool skip_tied_groups = true;
  int eval_every = 10;           //!< iterations between greedy evaluations (0 = at the start and end only)
  int checkpoint_every = 10;
  int generate_batch = 512;      //!< completions generated together
  int stop_after_iterations = 0; //!< stop (checkpointed, as a cancel) after this many: time-boxed runs, tests
  //! Also write every episode's token ids, sampling log-probabilities, reward and advantage to
  //! work_dir/rollouts.jsonl (rank r > 0: rollouts-rank<r>.jsonl), one line per episode.
  bool save_rollouts = false;
  //! Search queries are sampled, and decoded in the greedy curve, from the prompt's own words only
  //! (PipelineOptions::copy_search). The log-probabilities trained on stay the model's own, as with top-k.
  bool copy_search = false;
};

//! UsageError naming (by its `--rl-*` flag) the first RL setting out of its range; PipelineOptions::validate and
//! train_rl call it (pipeline_options.cpp).
void validate_rl_options(const RlOptions& o);

//! The greedy reward of a set of tasks: the mean and the mean per kind.
struct RlEvaluation {
  double reward = 0;
  std::map<std::string, double> by_kind;
  std::size_t tasks = 0;
};

struct RlReport {
  int iterations = 0;       //!< done in all (a resumed run counts the earlier ones)
  bool resumed = false;
  bool cancelled = false;
  // The totals below count every iteration, those before a resume included (the checkpoint carries them).
  double seconds = 0;       //!< the loop's wall time
  int64_t episodes = 0;     //!< all ranks
  int64_t completions = 0;
  int64_t train_tokens = 0; //!< completion tokens trained on (one pass)
  double sample_seconds = 0, update_seconds = 0, eval_seconds = 0;
  RlEvaluation first_eval, last_eval;  //!< greedy, before the first iteration and after the last
  bool have_eval = false;
  int world = 1;
};

//! Trains `model` on `train` (work_dir: checkpoint, curve, rollouts), evaluating greedily on `eval` (may be empty).
//! With options.train.lora the adapter is merged into the model at the end (and saved to adapter_dir). A cancelled
//! run leaves a checkpoint and the model as it was given (LoRA) or partly trained (all weights): run it again with
//! the same options to continue. UsageError for bad options or no train tasks.
RlReport train_rl(PumaModel& model, const RlTasks& train, const RlTasks& eval, const std::filesystem::path& work_dir,
                  const RlOptions& options, const std::function<void(const std::string&)>& log = {});

//! The greedy reward of `model` on `tasks` (one episode each, seed 0).
//! copy_search: search queries from the prompt's words only (RlOptions::copy_search).
RlEvaluation evaluate_greedy(PumaModel& model, const RlTasks& tasks, int max_new_tokens, int batch = 512,
                             bool copy_search = false);

}  // namespace pwab::puma
