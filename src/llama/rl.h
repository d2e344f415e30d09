// src/llama/rl.h: what online reinforcement learning hands to the model's trainer (torch-free): the completions
// sampled from one prompt, as token ids, with the sampling policy's log-probabilities and one advantage each, and
// the group-relative advantage estimators that turn a group's rewards into those advantages.
//
// A group is every completion drawn from one prompt (GRPO's "group"): the advantages compare a completion with
// its siblings only, so no value model is needed. The objective that trains on them is rl_loss.h.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::llama {

//! How a group's rewards become advantages.
enum class AdvantageEstimator {
  kGrpo,  //!< (r_i − mean) / (std + eps): centred and scaled by the group's spread (GRPO, TRL's default)
  kRloo,  //!< r_i − the mean of the other rewards: leave-one-out, unscaled (RLOO)
};
std::string_view to_string(AdvantageEstimator estimator);
//! "grpo" or "rloo"; UsageError otherwise.
AdvantageEstimator parse_advantage_estimator(std::string_view text);

//! The advantages of one group's rewards, in order. GRPO uses the unbiased sample standard deviation (n − 1, as
//! torch.std in TRL's GRPOTrainer) and adds `eps` to it; RLOO's r_i − mean_{j≠i} r_j equals n/(n − 1)·(r_i − mean).
//! A group whose rewards are all equal, or that has a single member, gets zeros: it carries no signal.
std::vector<double> group_advantages(const std::vector<double>& rewards, AdvantageEstimator estimator,
                                     double eps = 1e-4);

//! True when every reward of the group is the same (within 1e-12): a group without signal.
bool rewards_tied(const std::vector<double>& rewards);

//! One prompt and the completions sampled from it, ready to train on. Token ids are kept exactly as the policy
//! saw and drew them: the prompt as encoded for sampling, each completion as sampled, its final EOS included
//! when the model ended with one (so ending is learnt too). Every completion token is trained on (the loss
//! mask is the completion); nothing of the prompt is.
struct RolloutGroup {
  std::vector<int32_t> prompt;                    //!< BOS included
  std::vector<std::vector<int32_t>> completions;  //!< at least one token each
  std::vector<std::vector<float>> old_logprobs;   //!< per completion token: the sampling policy's log-probability
  std::vector<double> advantages;                 //!< per completion
  //! Completion tokens in all (the normaliser of a token-level loss).
  int64_t tokens() const;
  //! UsageError when the sizes disagree (a completion without tokens, log-probabilities of another length).
  void check() const;
};

}  // namespace pwab::llama
