// src/llama/rl_loss.h: the objective of online RL on a LlamaModel: rollout groups packed into rows that compute a
// prompt once for all of its completions, the log-probabilities of the sampled tokens, and the clipped token-level
// surrogate with a KL penalty to a reference model (GRPO / RLOO with PPO's clip; the k3 KL estimator).
//
// Packing: a row holds one prompt followed by completions drawn from it. Completion c's token j sits at position
// prompt + j and sees the whole prompt and its own earlier tokens, never another completion; its first token is
// predicted from the prompt's last position. The logits and their gradients are those of separate
// prompt + completion rows, at a fraction of the cost when the prompt is long and the completions short (a PUMA
// parameter prompt is ~170 tokens, a query ~13).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "llama/rl.h"

namespace pwab::llama {

class LlamaModelImpl;

//! Packed rows of rollout groups (tensors on the CPU).
struct PackedRollouts {
  torch::Tensor input_ids;     //!< [rows, n] int64, padded with the pad id
  torch::Tensor positions;     //!< [rows, n] int64: prompt t → t; completion token j → prompt + j
  torch::Tensor visible;       //!< [rows, n, n] bool: query i may read key j
  torch::Tensor from;          //!< [labels] int64: flat index (row · n + t) of the position that predicts each label
  torch::Tensor tokens;        //!< [labels] int64: the sampled tokens, completion after completion
  torch::Tensor old_logprobs;  //!< [labels] float32: the sampling policy's log-probabilities
  torch::Tensor advantages;    //!< [labels] float32: each token carries its completion's advantage
  int64_t labels = 0;          //!< completion tokens in all
  int64_t row_tokens = 0;      //!< tokens in the rows, padding excluded (what a forward pass computes)
};

//! Packs the groups, in order, into rows. A group whose prompt plus completions exceed `max_row_tokens` (0 = no
//! limit) is split over several rows that each repeat its prompt (every row keeps at least one completion), which
//! bounds the n² attention of a row without changing the loss. Throws pwab::UsageError for an inconsistent group
//! (RolloutGroup::check) or no completion at all.
PackedRollouts pack_rollouts(const std::vector<const RolloutGroup*>& groups, int64_t pad_id,
                             int64_t max_row_tokens = 0);

//! The model's log-probability of each label at `temperature` (logits divided by it, as the sampling policy's),
//! differentiable unless called under NoGradGuard, and, when `with_entropy`, the entropy of each label's
//! next-token distribution (detached). Only the label positions go through the output layer.
struct RolloutLogprobs {
  torch::Tensor logprobs;  //!< [labels] float32
  torch::Tensor entropy;   //!< [labels] float32, or undefined
};
RolloutLogprobs rollout_logprobs(LlamaModelImpl& model, const PackedRollouts& batch, double temperature = 1.0,
                                 bool with_entropy = false);

//! Schulman's k3 estimator of KL(policy ‖ reference) per sampled token: exp(ρ − π) − (ρ − π) − 1 for the policy's
//! (π) and the reference's (ρ) log-probabilities of the token. Unbiased, never negative, 0 where they agree.
torch::Tensor k3_kl(const torch::Tensor& logprobs, const torch::Tensor& reference_logprobs);

struct PolicyLossOptions {
  double clip_low = 0.2;   //!< the ratio is clipped below at 1 − clip_low
  double clip_high = 0.2;  //!< and above at 1 + clip_high (DAPO's clip-higher when larger than clip_low)
  double kl_coef = 0.0;    //!< β: weight of the k3 KL to the reference per token
};

//! The per-token terms of the objective.
struct PolicyLossTerms {
  //! [labels], differentiable: −min(r·A, clip(r, 1 − clip_low, 1 + clip_high)·A) + β·k3, r = exp(π − π_old).
  torch::Tensor per_token;
  torch::Tensor ratio;    //!< [labels] r, detached
  torch::Tensor clipped;  //!< [labels] bool: the clipped branch is the one taken (r > 1 + ε with A > 0, or
                          //!< r < 1 − ε with A < 0), so the token gives no gradient
  torch::Tensor kl;       //!< [labels] k3, detached (zeros without a reference)
};
//! `reference_logprobs` may be undefined (no KL term; kl_coef must then be 0).
PolicyLossTerms policy_loss(const torch::Tensor& logprobs, const torch::Tensor& old_logprobs,
                            const torch::Tensor& advantages, const torch::Tensor& reference_logprobs,
                            const PolicyLossOptions& options);

}  // namespace pwab::llama
