// Group-relative advantages and rollout groups (rl.h).
#include "llama/rl.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace pwab::llama {

std::string_view to_string(AdvantageEstimator estimator) {
  return estimator == AdvantageEstimator::kGrpo ? "grpo" : "rloo";
}

AdvantageEstimator parse_advantage_estimator(std::string_view text) {
  if (text == "grpo") return AdvantageEstimator::kGrpo;
  if (text == "rloo") return AdvantageEstimator::kRloo;
  throw UsageError("the RL algorithm must be grpo or rloo, not '" + std::string(text) + "'");
}

bool rewards_tied(const std::vector<double>& rewards) {
  if (rewards.empty()) return true;
  const auto [lo, hi] = std::minmax_element(rewards.begin(), rewards.end());
  return *hi - *lo <= 1e-12;
}

std::vector<double> group_advantages(const std::vector<double>& rewards, AdvantageEstimator estimator, double eps) {
  const std::size_t n = rewards.size();
  std::vector<double> out(n, 0.0);
  if (n < 2 || rewards_tied(rewards)) return out;
  const double mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) / static_cast<double>(n);
  if (estimator == AdvantageEstimator::kRloo) {
    const double scale = static_cast<double>(n) / static_cast<double>(n - 1);
    for (std::size_t i = 0; i < n; ++i) out[i] = scale * (rewards[i] - mean);
    return out;
  }
  double squares = 0;
  for (double r : rewards) squares += (r - mean) * (r - mean);
  const double std_dev = std::sqrt(squares / static_cast<double>(n - 1));
  for (std::size_t i = 0; i < n; ++i) out[i] = (rewards[i] - mean) / (std_dev + eps);
  return out;
}

int64_t RolloutGroup::tokens() const {
  int64_t n = 0;
  for (const auto& c : completions) n += static_cast<int64_t>(c.size());
  return n;
}

void RolloutGroup::check() const {
  if (prompt.empty()) throw UsageError("rollout group: the prompt has no tokens");
  if (old_logprobs.size() != completions.size() || advantages.size() != completions.size())
    throw UsageError("rollout group: " + std::to_string(completions.size()) + " completions but " +
                     std::to_string(old_logprobs.size()) + " log-probability lists and " +
                     std::to_string(advantages.size()) + " advantages");
  for (std::size_t i = 0; i < completions.size(); ++i) {
    if (completions[i].empty()) throw UsageError("rollout group: completion " + std::to_string(i) + " has no tokens");
    if (old_logprobs[i].size() != completions[i].size())
      throw UsageError("rollout group: completion " + std::to_string(i) + " has " +
                       std::to_string(completions[i].size()) + " tokens but " + std::to_string(old_logprobs[i].size()) +
                       " log-probabilities");
  }
}

}  // namespace pwab::llama
