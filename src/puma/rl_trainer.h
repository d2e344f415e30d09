// src/puma/rl_trainer.h: the update step of online RL on a PumaModel (torch-free header; rl_trainer.cpp).
//
// Given the rollout groups an iteration sampled (llama/rl.h: prompt and completion token ids, sampling
// log-probabilities, advantages), the trainer makes `inner_epochs` passes over them, each cut into `minibatches`
// optimizer steps, minimising the clipped token-level surrogate with a k3 KL penalty to the reference
// (llama/rl_loss.h), averaged over the minibatch's completions (or its tokens). The reference is the model as it was
// given: with LoRA the same model with the adapter switched off, otherwise a frozen copy. Learning-rate schedule
// (linear warm-up and decay), gradient clipping and AdamW are SFT's and DPO's.
//
// Data-parallel (TrainOptions::group): every rank passes the groups it sampled and the global minibatch each
// belongs to; the token count of a minibatch and the gradients are summed over the ranks, so N ranks take the
// steps one process takes on all the groups.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llama/rl.h"
#include "puma/model.h"

namespace pwab::puma {

struct PolicyTrainerOptions {
  //! learning_rate, warmup_ratio, max_grad_norm, lora / lora_r / lora_alpha / lora_modules_to_save, seed (LoRA
  //! initialisation), adapter_dir / adapter_base_model and group are read; the rest is SFT's and DPO's.
  TrainOptions train;
  int64_t total_steps = 1;  //!< optimizer steps planned (the schedule's length)
  double temperature = 1.0;  //!< the sampling temperature: log-probabilities are the logits divided by it
  double clip_low = 0.2, clip_high = 0.2;
  double kl_coef = 0.0;  //!< β of the k3 KL to the reference (it is measured even when 0)
  int inner_epochs = 1;  //!< passes over an iteration's groups
  int minibatches = 1;   //!< optimizer steps per pass
  int64_t micro_tokens = 8192;    //!< rows go through forward/backward in chunks of about this many tokens
  //! Per-sequence (each completion weighs the same) or per-token averaging of the objective (llama/rl_loss.h).
  bool per_sequence = true;
};

//! What one update did, over all ranks.
struct PolicyUpdateStats {
  double loss = 0;           //!< mean per-token objective over the passes
  double kl = 0;             //!< mean k3 KL to the reference per token, first pass (the sampling policy's)
  double entropy = 0;        //!< mean next-token entropy per token, first pass, nats
  double clip_fraction = 0;  //!< share of token updates whose ratio was clipped, over the passes
  double grad_norm = 0;      //!< before clipping, last step
  double lr = 0;             //!< at the last step
  int64_t tokens = 0;        //!< completion tokens trained on (one pass)
  int64_t row_tokens = 0;    //!< tokens each pass computed (prompts once per row)
  int steps = 0;             //!< optimizer steps taken
  double seconds = 0;
};

class PolicyTrainer {
 public:
  //! Attaches the trainable tensors to `model` (LoRA or every weight) and the optimizer; the reference is `model`
  //! as it is now. `model` must outlive the trainer.
  PolicyTrainer(PumaModel& model, PolicyTrainerOptions options);
  ~PolicyTrainer();
  PolicyTrainer(const PolicyTrainer&) = delete;
  PolicyTrainer& operator=(const PolicyTrainer&) = delete;

  //! One iteration's update from this rank's `groups`; `minibatch[i]` (in [0, minibatches)) is the optimizer
  //! step of each pass group i belongs to. Groups whose advantages are all 0 may be left out by the caller: they
  //! add nothing but KL. UsageError for inconsistent groups.
  PolicyUpdateStats update(const std::vector<llama::RolloutGroup>& groups, const std::vector<int>& minibatch);
  int64_t optimizer_steps() const;

  //! Writes the trainable tensors, the optimizer state and `extra_json` (the caller's position) atomically;
  //! rank 0 alone writes.
  void save_checkpoint(const std::filesystem::path& file, const std::string& extra_json) const;
  //! Restores what save_checkpoint wrote and returns its extra_json. DataError for a checkpoint of another shape.
  std::string load_checkpoint(const std::filesystem::path& file);

  //! The run is over: with LoRA the adapter is saved (train.adapter_dir, by rank 0) and merged into the model;
  //! the weights are frozen again.
  void finish();
  //! The run stops unfinished (cancelled): the adapter is removed, the model left as it was given.
  void abandon();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::puma
