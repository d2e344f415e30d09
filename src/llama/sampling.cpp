// Logits warpers, samplers and beam hypotheses (plain C++, no torch).
#include "llama/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace pwab::llama {
namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}

void log_softmax_inplace(std::span<float> row) {
  if (row.empty()) return;
  const float top = *std::max_element(row.begin(), row.end());
  if (!std::isfinite(top)) return;  // all -inf (or NaN): nothing to normalise
  double sum = 0.0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - top);
  const double log_z = top + std::log(sum);
  for (float& v : row) v = static_cast<float>(v - log_z);
}

int64_t argmax(std::span<const float> scores) {
  return std::max_element(scores.begin(), scores.end()) - scores.begin();  // first of equal maxima
}

std::vector<int64_t> top_k_indices(std::span<const float> scores, int64_t k) {
  k = std::clamp<int64_t>(k, 0, static_cast<int64_t>(scores.size()));
  std::vector<int64_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto better = [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  idx.resize(static_cast<std::size_t>(k));
  return idx;
}

void apply_warpers(std::span<float> scores, const WarpOptions& o) {
  if (!(o.temperature > 0))
    throw UsageError("sampling temperature must be positive, not " + std::to_string(o.temperature));
  if (!(o.top_p > 0 && o.top_p <= 1)) throw UsageError("top_p must be in (0, 1], not " + std::to_string(o.top_p));
  if (o.temperature != 1.0)
    for (float& v : scores) v = static_cast<float>(v / o.temperature);
  const auto n = static_cast<int64_t>(scores.size());
  if (o.top_k > 0 && o.top_k < n) {
    // HF's TopKLogitsWarper: everything below the k-th largest value is removed (ties with it stay).
    std::vector<float> sorted(scores.begin(), scores.end());
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<float>());
    const float kth = sorted[static_cast<std::size_t>(o.top_k - 1)];
    for (float& v : scores)
      if (v < kth) v = kNegInf;
  }
  if (o.top_p < 1.0) {
    // HF's TopPLogitsWarper: keep the best tokens whose cumulative probability reaches top_p (at least one).
    std::vector<int64_t> order = top_k_indices(scores, n);
    std::vector<float> probs(scores.begin(), scores.end());
    log_softmax_inplace(probs);
    double cumulative = 0.0;
    std::size_t keep = 0;
    while (keep < order.size() && cumulative < o.top_p) cumulative += std::exp(probs[order[keep++]]);
    for (std::size_t i = std::max<std::size_t>(keep, 1); i < order.size(); ++i) scores[order[i]] = kNegInf;
  }
}

int64_t sample_one(std::span<const float> scores, Rng& rng) {
  // The inverse of the cumulative distribution at one uniform draw: one exp per entry, where the Gumbel-max trick
  // (sample_without_replacement with k = 1) needs a uniform and two logs per entry, the whole cost of sampling a
  // large vocabulary at every step.
  float top = kNegInf;
  for (float s : scores)
    if (!std::isnan(s) && s > top) top = s;
  if (top == kNegInf) throw UsageError("sampling: every score is -inf or NaN");
  thread_local std::vector<double> weights;
  weights.resize(scores.size());
  double total = 0.0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const float s = scores[i];
    weights[i] = std::isnan(s) || s == kNegInf ? 0.0 : std::exp(static_cast<double>(s) - top);
    total += weights[i];
  }
  const double target = rng.uniform() * total;
  double cumulative = 0.0;
  int64_t last = -1;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (weights[i] == 0.0) continue;
    cumulative += weights[i];
    last = static_cast<int64_t>(i);
    if (cumulative > target) return last;
  }
  return last;  // rounding left the target at the very end: the last drawable entry
}

std::vector<int64_t> sample_without_replacement(std::span<const float> scores, int64_t k, Rng& rng) {
  // Gumbel-top-k: the k largest of score + Gumbel noise are k successive draws without replacement.
  std::vector<float> keys(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const float s = scores[i];
    if (std::isnan(s) || s == kNegInf) {
      keys[i] = kNegInf;
      continue;
    }
    double u = rng.uniform();
    while (u <= 0.0) u = rng.uniform();
    keys[i] = static_cast<float>(s - std::log(-std::log(u)));
  }
  auto idx = top_k_indices(keys, k);
  while (!idx.empty() && keys[idx.back()] == kNegInf) idx.pop_back();
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  return idx;
}

void BeamHypotheses::add(std::vector<int32_t> tokens, double sum_logprobs, int64_t generated_length, bool eos) {
  const double score = sum_logprobs / std::pow(static_cast<double>(std::max<int64_t>(generated_length, 1)),
                                               length_penalty_);
  if (static_cast<int64_t>(hyps_.size()) >= n_beams_) {
    auto worst = std::min_element(hyps_.begin(), hyps_.end(),
                                  [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    if (score <= worst->score) return;
    hyps_.erase(worst);
  }
  hyps_.push_back({std::move(tokens), score, sum_logprobs, eos});
}

bool BeamHypotheses::is_done(double best_running_sum, int64_t generated_length) const {
  if (static_cast<int64_t>(hyps_.size()) < n_beams_) return false;
  if (early_stopping_) return true;
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& h : hyps_) worst = std::min(worst, h.score);
  return worst >= best_running_sum / std::pow(static_cast<double>(std::max<int64_t>(generated_length, 1)),
                                               length_penalty_);
}

std::vector<Hypothesis> BeamHypotheses::sorted() const {
  std::vector<Hypothesis> out = hyps_;
  std::stable_sort(out.begin(), out.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  return out;
}

}  // namespace pwab::llama
