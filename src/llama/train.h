// src/llama/train.h: what SFT and DPO training need around the model: token batches with loss masks, the causal
// LM loss, per-sequence log-probabilities, the DPO loss, gradient accumulation with clipping, mixed precision on
// CUDA, a linear warm-up schedule, and checkpoints that resume mid-training (trainable tensors + AdamW state).
#pragma once
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "llama/model.h"

namespace pwab::llama {

//! One training row: the prompt (context, never a label) and the target the model learns to produce.
struct SequencePair {
  std::vector<int32_t> prompt;
  std::vector<int32_t> target;
};

enum class Padding { kRight, kLeft };

//! [rows, length] tensors (int64 ids, int64 0/1 masks) on the CPU.
struct TokenBatch {
  torch::Tensor input_ids;
  torch::Tensor attention_mask;  //!< 1 on tokens, 0 on padding
  torch::Tensor loss_mask;       //!< 1 on target tokens only: never on prompt or padding (docs/decisions.md D6)
};

//! prompt + target per row, padded with `pad_id` to the longest row; rows longer than `max_length` (0 = no limit)
//! are cut at the end (transformers' truncation=True). Throws pwab::UsageError for an empty row list.
TokenBatch make_batch(const std::vector<SequencePair>& rows, int64_t pad_id, int64_t max_length = 0,
                      Padding padding = Padding::kRight);

//! The model's next-token distributions at the labelled positions of a batch. Only these positions go through
//! lm_head and the softmax: a PUMA row is mostly prompt, whose logits training never needs, and at a small
//! model's size the vocabulary projection and softmax would dominate the step.
struct LabelledPositions {
  torch::Tensor log_probs;  //!< [labels, vocab] float32 log-softmax of the logits that predict each labelled token
  torch::Tensor tokens;     //!< [labels] int64: the labelled tokens
  torch::Tensor rows;       //!< [labels] int64: the row each belongs to
};
LabelledPositions labelled_positions(LlamaModelImpl& model, const TokenBatch& batch);

//! [rows] float32: Σ log p(token_t | tokens_<t) over the loss_mask positions of each row (DPO's sequence
//! log-probabilities); differentiable unless called under NoGradGuard.
torch::Tensor sequence_logprobs(LlamaModelImpl& model, const TokenBatch& batch);
//! Mean next-token cross-entropy over all loss_mask positions of the batch (the SFT loss).
torch::Tensor causal_lm_loss(LlamaModelImpl& model, const TokenBatch& batch);
//! The positions causal_lm_loss() averages over: target tokens after the first position of their row.
int64_t label_count(const TokenBatch& batch);
//! The sigmoid DPO loss, mean over rows: −log σ(β · ((πc − ρc) − (πr − ρr))) from policy (π) and reference (ρ)
//! log-probabilities of the chosen (c) and rejected (r) sequences.
torch::Tensor dpo_loss(const torch::Tensor& policy_chosen, const torch::Tensor& policy_rejected,
                       const torch::Tensor& reference_chosen, const torch::Tensor& reference_rejected, double beta);

//! transformers' Trainer defaults for AdamW: betas (0.9, 0.999), eps 1e-8, weight decay 0 (torch's is 0.01).
torch::optim::AdamWOptions hf_adamw_options(double lr);
//! get_linear_schedule_with_warmup: lr multiplier rising linearly over `warmup` steps, then falling to 0 at `total`.
double linear_schedule(int64_t step, int64_t warmup, int64_t total);
//! Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

//! Turns on CUDA autocast (float16 or bfloat16 matmuls, float32 where unsafe) for its scope. A no-op on the CPU
//! or when `enabled` is false, so the same training code runs on both.
class AutocastGuard {
 public:
  AutocastGuard(torch::Device device, torch::Dtype dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false, previous_ = false;
  torch::Dtype previous_dtype_ = torch::kFloat16;
};

//! Dynamic loss scaling for float16 training (what torch.cuda.amp.GradScaler and DeepSpeed's fp16 do): the loss is
//! multiplied by the scale; after an overflow the step is skipped and the scale halves; after `growth_interval`
//! clean steps it doubles. Not needed for bfloat16 or float32 (construct with enabled = false).
class LossScaler {
 public:
  explicit LossScaler(bool enabled = true, double initial_scale = 65536.0, int64_t growth_interval = 2000);
  torch::Tensor scale(const torch::Tensor& loss) const;
  //! Divides the gradients by the scale; false if any is inf/NaN (the caller skips the step). Updates the scale.
  bool unscale(const std::vector<torch::Tensor>& params);
  double value() const { return enabled_ ? scale_ : 1.0; }
  void set_value(double scale) { scale_ = scale; }
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  double scale_;
  int64_t growth_interval_, clean_steps_ = 0;
};

struct AccumulationOptions {
  int64_t accumulation_steps = 1;  //!< micro-batches per optimizer step
  double max_grad_norm = 1.0;      //!< clip the global gradient norm (transformers' default); 0 = no clipping
  //! Data-parallel training: called with every parameter's gradient (zeros where a rank had none) before each
  //! optimizer step, to sum them across ranks in place (ProcessGroup::all_reduce_sum, distributed.h). Clipping
  //! and the step then see the same gradient on every rank.
  std::function<void(std::vector<torch::Tensor>&)> reduce_gradients;
};

//! Gradient accumulation: backward() each micro-batch's loss divided by the number of steps; every
//! accumulation_steps micro-batches, unscale (fp16), clip, optimizer step, zero the gradients.
class GradientAccumulator {
 public:
  GradientAccumulator(torch::optim::Optimizer& optimizer, std::vector<torch::Tensor> params,
                      AccumulationOptions options = {}, LossScaler* scaler = nullptr);
  //! Backpropagates one micro-batch; true when this call completed an optimizer step.
  bool backward(const torch::Tensor& loss);
  //! Steps on a partial accumulation (end of an epoch); true if there was anything to apply.
  bool flush();

  int64_t micro_steps() const { return micro_steps_; }
  int64_t optimizer_steps() const { return optimizer_steps_; }
  int64_t skipped_steps() const { return skipped_steps_; }  //!< fp16 overflows
  double last_grad_norm() const { return last_grad_norm_; }
  //! Restores the counters when resuming from a checkpoint.
  void restore(int64_t micro_steps, int64_t optimizer_steps);

 private:
  bool apply();
  torch::optim::Optimizer& optimizer_;
  std::vector<torch::Tensor> params_;
  AccumulationOptions options_;
  LossScaler* scaler_;
  int64_t pending_ = 0, micro_steps_ = 0, optimizer_steps_ = 0, skipped_steps_ = 0;
  double last_grad_norm_ = 0.0;
};

//! Where training stands, saved with a checkpoint.
struct TrainState {
  int64_t epoch = 0;
  int64_t micro_step = 0;      //!< micro-batches done in total
  int64_t optimizer_step = 0;  //!< optimizer steps done
  double loss_scale = 0.0;     //!< the LossScaler's scale (0 = none)
  std::string extra_json;      //!< the caller's own state (data order seed, best loss, ...), stored verbatim
};

//! Writes the trainable tensors (by name, e.g. LoraAdapter::named_parameters()), the optimizer's state and `state`
//! to one file atomically.
void save_checkpoint(const std::filesystem::path& file,
                     const std::vector<std::pair<std::string, torch::Tensor>>& params,
                     const torch::optim::Optimizer& optimizer, const TrainState& state);
//! Restores what save_checkpoint wrote into `params` (same names and shapes) and `optimizer` (built over the same
//! parameters in the same order). Throws pwab::DataError naming the file and tensor on a mismatch.
TrainState load_checkpoint(const std::filesystem::path& file,
                           const std::vector<std::pair<std::string, torch::Tensor>>& params,
                           torch::optim::Optimizer& optimizer);

}  // namespace pwab::llama
