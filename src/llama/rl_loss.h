// src/llama/rl_loss.h: the objective of online RL on a LlamaModel: rollout groups batched so that a prompt is
// computed once for all of its completions, the log-probabilities of the sampled tokens, and the clipped token-level
// surrogate with a KL penalty to a reference model (GRPO / RLOO with PPO's clip; the k3 KL estimator).
//
// Batching: the prompts form one batch (left-padded) whose keys and values every completion of the prompt reads;
// the completions form a second batch (right-padded), each row seeing its prompt and its own earlier tokens
// (LlamaModelImpl::prefix_hidden_states). A completion's first token is predicted from its prompt's last position,
// the others from the completion's previous token. The logits and their gradients are those of separate
// prompt + completion rows, at a fraction of the cost when the prompt is long and the completions short (a PUMA
// parameter prompt is ~170 tokens, a query ~13).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "llama/rl.h"

namespace pwab::llama {

class LlamaModelImpl;

//! Rollout groups as the two batches of a prefix forward (tensors on the CPU).
struct PackedRollouts {
  torch::Tensor prompt_ids;         //!< [prompts, P] int64, left-padded with the pad id
  torch::Tensor prompt_mask;        //!< [prompts, P] 1 on tokens
  torch::Tensor completion_ids;     //!< [completions, C] int64: each completion without its last token (the inputs
                                    //!< that predict its tokens after the first), right-padded
  torch::Tensor completion_mask;    //!< [completions, C]
  torch::Tensor parent;             //!< [completions] int64: the prompt row each completion continues
  //! [labels] int64: where each label's prediction is read in cat(the prompts' last hidden states [prompts],
  //! the completion rows' hidden states flattened [completions · C])
  torch::Tensor from;
  torch::Tensor tokens;        //!< [labels] int64: the sampled tokens, completion after completion
  torch::Tensor old_logprobs;  //!< [labels] float32: the sampling policy's log-probabilities
  torch::Tensor advantages;    //!< [labels] float32: each token carries its completion's advantage
  //! [labels] float32: each token's weight in the loss (LossNormalisation): 1, or 1 / its completion's length
  torch::Tensor weights;
  int64_t labels = 0;          //!< completion tokens in all
  double weight_sum = 0;       //!< Σ weights: the tokens (per token) or the completions (per sequence)
  int64_t row_tokens = 0;      //!< tokens a forward pass computes, padding excluded (each prompt once)
};

//! How the per-token terms are averaged. Per token (DAPO's token-level loss): every sampled token weighs the
//! same, so long completions dominate a batch of mixed lengths. Per sequence (the original GRPO): each
//! completion's tokens are averaged first, so every completion weighs the same whatever its length.
enum class LossNormalisation { kToken, kSequence };

//! Batches the groups, in order. Throws pwab::UsageError for an inconsistent group (RolloutGroup::check) or no
//! completion at all.
PackedRollouts pack_rollouts(const std::vector<const RolloutGroup*>& groups, int64_t pad_id,
                             LossNormalisation normalisation = LossNormalisation::kToken);

//! The model's log-probability of each label at `temperature` (logits divided by it, as the sampling policy's),
//! differentiable unless called under NoGradGuard, and, when `with_entropy`, the entropy of each label's
//! next-token distribution (detached). Only the label positions go through the output layer.
struct RolloutLogprobs {
  torch::Tensor logprobs;  //!< [labels] float32
  torch::Tensor entropy;   //!< [labels] float32, or undefined
};
RolloutLogprobs rollout_logprobs(LlamaModelImpl& model, const PackedRollouts& batch, double temperature = 1.0,
                                 bool with_entropy = false);

//! Σ log p(answer tokens | prompt) of each answer, every prompt computed once for all of its answers (a prefix
//! batch, as rollouts): DPO's chosen and rejected responses share their prompt, so a pair costs one long prompt and
//! two short answers instead of two whole rows. `answers[i]` (each at least one token, EOS included where the row
//! has one) continue `prompts[i]` (BOS included). Returns [Σ answers] float32, answer after answer in order,
//! differentiable unless called under NoGradGuard: what sequence_logprobs (llama/train.h) gives the separate
//! prompt + answer rows with the loss mask on the answers.
torch::Tensor shared_prompt_logprobs(LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<std::vector<std::vector<int32_t>>>& answers, int64_t pad_id);

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
