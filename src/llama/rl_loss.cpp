// Packed rollout rows, their log-probabilities and the clipped surrogate with KL (rl_loss.h).
#include "llama/rl_loss.h"

#include <torch/torch.h>

#include "core/error.h"
#include "llama/model.h"

namespace pwab::llama {
namespace {

// One row: a prompt and the completions (indices into its group) it carries.
struct RowPlan {
  const RolloutGroup* group;
  std::vector<std::size_t> completions;
  int64_t length = 0;
};

std::vector<RowPlan> plan_rows(const std::vector<const RolloutGroup*>& groups, int64_t max_row_tokens) {
  std::vector<RowPlan> rows;
  for (const RolloutGroup* g : groups) {
    g->check();
    const auto prompt = static_cast<int64_t>(g->prompt.size());
    RowPlan row{g, {}, prompt};
    for (std::size_t c = 0; c < g->completions.size(); ++c) {
      const auto n = static_cast<int64_t>(g->completions[c].size());
      if (max_row_tokens > 0 && !row.completions.empty() && row.length + n > max_row_tokens) {
        rows.push_back(std::move(row));
        row = RowPlan{g, {}, prompt};
      }
      row.completions.push_back(c);
      row.length += n;
    }
    if (!row.completions.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

PackedRollouts pack_rollouts(const std::vector<const RolloutGroup*>& groups, int64_t pad_id, int64_t max_row_tokens) {
  std::vector<RowPlan> plan = plan_rows(groups, max_row_tokens);
  if (plan.empty()) throw UsageError("pack_rollouts: no completion to train on");
  int64_t n = 0, labels = 0;
  for (const RowPlan& r : plan) {
    n = std::max(n, r.length);
    labels += r.length - static_cast<int64_t>(r.group->prompt.size());
  }
  const auto rows = static_cast<int64_t>(plan.size());
  PackedRollouts b;
  b.input_ids = torch::full({rows, n}, pad_id, torch::kInt64);
  b.positions = torch::zeros({rows, n}, torch::kInt64);
  b.visible = torch::zeros({rows, n, n}, torch::kBool);
  b.from = torch::empty({labels}, torch::kInt64);
  b.tokens = torch::empty({labels}, torch::kInt64);
  b.old_logprobs = torch::empty({labels}, torch::kFloat32);
  b.advantages = torch::empty({labels}, torch::kFloat32);
  b.labels = labels;
  auto* ids = b.input_ids.data_ptr<int64_t>();
  auto* pos = b.positions.data_ptr<int64_t>();
  auto* see = b.visible.data_ptr<bool>();
  auto* from = b.from.data_ptr<int64_t>();
  auto* tok = b.tokens.data_ptr<int64_t>();
  auto* old = b.old_logprobs.data_ptr<float>();
  auto* adv = b.advantages.data_ptr<float>();
  int64_t label = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const RowPlan& row = plan[static_cast<std::size_t>(r)];
    const std::vector<int32_t>& prompt = row.group->prompt;
    const auto p = static_cast<int64_t>(prompt.size());
    int64_t* row_ids = ids + r * n;
    int64_t* row_pos = pos + r * n;
    bool* row_see = see + r * n * n;
    for (int64_t t = 0; t < p; ++t) {
      row_ids[t] = prompt[static_cast<std::size_t>(t)];
      row_pos[t] = t;
      for (int64_t k = 0; k <= t; ++k) row_see[t * n + k] = true;
    }
    int64_t start = p;
    for (std::size_t c : row.completions) {
      const std::vector<int32_t>& tokens = row.group->completions[c];
      const auto len = static_cast<int64_t>(tokens.size());
      for (int64_t j = 0; j < len; ++j) {
        const int64_t q = start + j;
        row_ids[q] = tokens[static_cast<std::size_t>(j)];
        row_pos[q] = p + j;
        for (int64_t k = 0; k < p; ++k) row_see[q * n + k] = true;
        for (int64_t k = start; k <= q; ++k) row_see[q * n + k] = true;
        from[label] = r * n + (j == 0 ? p - 1 : q - 1);
        tok[label] = tokens[static_cast<std::size_t>(j)];
        old[label] = row.group->old_logprobs[c][static_cast<std::size_t>(j)];
        adv[label] = static_cast<float>(row.group->advantages[c]);
        ++label;
      }
      start += len;
    }
    for (int64_t q = start; q < n; ++q) row_see[q * n + q] = true;  // padding sees itself only (no empty softmax)
    b.row_tokens += start;
  }
  return b;
}

RolloutLogprobs rollout_logprobs(LlamaModelImpl& model, const PackedRollouts& batch, double temperature,
                                 bool with_entropy) {
  if (!(temperature > 0)) throw UsageError("rollout_logprobs: the temperature must be positive");
  const auto dev = model.device();
  auto hidden = model.packed_hidden_states(batch.input_ids, batch.positions, batch.visible);
  auto picked = hidden.reshape({-1, hidden.size(-1)}).index_select(0, batch.from.to(dev));
  auto logits = model.logits(picked);
  if (temperature != 1.0) logits = logits / temperature;
  auto log_probs = torch::log_softmax(logits, -1);
  RolloutLogprobs out;
  out.logprobs = log_probs.gather(1, batch.tokens.to(dev).unsqueeze(-1)).squeeze(-1);
  if (with_entropy) {
    torch::NoGradGuard no_grad;
    out.entropy = -(log_probs.exp() * log_probs).sum(-1);
  }
  return out;
}

torch::Tensor k3_kl(const torch::Tensor& logprobs, const torch::Tensor& reference_logprobs) {
  auto delta = reference_logprobs - logprobs;
  return torch::exp(delta) - delta - 1.0;
}

PolicyLossTerms policy_loss(const torch::Tensor& logprobs, const torch::Tensor& old_logprobs,
                            const torch::Tensor& advantages, const torch::Tensor& reference_logprobs,
                            const PolicyLossOptions& o) {
  if (o.clip_low < 0 || o.clip_low >= 1 || o.clip_high < 0 || o.kl_coef < 0)
    throw UsageError("policy_loss: clip_low in [0, 1), clip_high ≥ 0 and kl_coef ≥ 0 are required");
  if (o.kl_coef > 0 && !reference_logprobs.defined())
    throw UsageError("policy_loss: a KL coefficient needs the reference's log-probabilities");
  auto old = old_logprobs.to(logprobs.device(), torch::kFloat32);
  auto adv = advantages.to(logprobs.device(), torch::kFloat32);
  PolicyLossTerms t;
  auto ratio = torch::exp(logprobs - old);
  auto unclipped = ratio * adv;
  auto clipped = torch::clamp(ratio, 1.0 - o.clip_low, 1.0 + o.clip_high) * adv;
  t.per_token = -torch::min(unclipped, clipped);
  {
    torch::NoGradGuard no_grad;
    t.ratio = ratio.detach();
    t.clipped = ((t.ratio > 1.0 + o.clip_high) & (adv > 0)) | ((t.ratio < 1.0 - o.clip_low) & (adv < 0));
  }
  if (reference_logprobs.defined()) {
    auto kl = k3_kl(logprobs, reference_logprobs.to(logprobs.device(), torch::kFloat32).detach());
    if (o.kl_coef > 0) t.per_token = t.per_token + o.kl_coef * kl;
    t.kl = kl.detach();
  } else {
    t.kl = torch::zeros_like(t.ratio);
  }
  return t;
}

}  // namespace pwab::llama
