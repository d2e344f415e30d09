// Packed rollout rows, their log-probabilities and the clipped surrogate with KL (rl_loss.h).
#include "llama/rl_loss.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/error.h"
#include "llama/model.h"

namespace pwab::llama {
PackedRollouts pack_rollouts(const std::vector<const RolloutGroup*>& groups, int64_t pad_id,
                             LossNormalisation normalisation) {
  int64_t prompt_length = 0, completion_length = 0, labels = 0, completions = 0;
  for (const RolloutGroup* g : groups) {
    g->check();
    prompt_length = std::max(prompt_length, static_cast<int64_t>(g->prompt.size()));
    for (const auto& c : g->completions) {
      completion_length = std::max(completion_length, static_cast<int64_t>(c.size()) - 1);
      labels += static_cast<int64_t>(c.size());
      ++completions;
    }
  }
  if (completions == 0) throw UsageError("pack_rollouts: no completion to train on");
  completion_length = std::max<int64_t>(completion_length, 1);  // a pass needs a token, even if every one is padding
  const auto prompts = static_cast<int64_t>(groups.size());
  PackedRollouts b;
  b.prompt_ids = torch::full({prompts, prompt_length}, pad_id, torch::kInt64);
  b.prompt_mask = torch::zeros({prompts, prompt_length}, torch::kInt64);
  b.completion_ids = torch::full({completions, completion_length}, pad_id, torch::kInt64);
  b.completion_mask = torch::zeros({completions, completion_length}, torch::kInt64);
  b.parent = torch::empty({completions}, torch::kInt64);
  b.from = torch::empty({labels}, torch::kInt64);
  b.tokens = torch::empty({labels}, torch::kInt64);
  b.old_logprobs = torch::empty({labels}, torch::kFloat32);
  b.advantages = torch::empty({labels}, torch::kFloat32);
  b.weights = torch::empty({labels}, torch::kFloat32);
  b.labels = labels;
  auto* p_ids = b.prompt_ids.data_ptr<int64_t>();
  auto* p_mask = b.prompt_mask.data_ptr<int64_t>();
  auto* c_ids = b.completion_ids.data_ptr<int64_t>();
  auto* c_mask = b.completion_mask.data_ptr<int64_t>();
  auto* parent = b.parent.data_ptr<int64_t>();
  auto* from = b.from.data_ptr<int64_t>();
  auto* tok = b.tokens.data_ptr<int64_t>();
  auto* old = b.old_logprobs.data_ptr<float>();
  auto* adv = b.advantages.data_ptr<float>();
  auto* weight = b.weights.data_ptr<float>();
  int64_t label = 0, row = 0;
  for (int64_t r = 0; r < prompts; ++r) {
    const RolloutGroup& g = *groups[static_cast<std::size_t>(r)];
    const auto p = static_cast<int64_t>(g.prompt.size());
    for (int64_t t = 0; t < p; ++t) {  // left padding: every prompt ends at the last column
      p_ids[r * prompt_length + prompt_length - p + t] = g.prompt[static_cast<std::size_t>(t)];
      p_mask[r * prompt_length + prompt_length - p + t] = 1;
    }
    b.row_tokens += p;
    for (std::size_t c = 0; c < g.completions.size(); ++c, ++row) {
      const std::vector<int32_t>& tokens = g.completions[c];
      const auto len = static_cast<int64_t>(tokens.size());
      const float w = normalisation == LossNormalisation::kToken ? 1.0f : 1.0f / static_cast<float>(len);
      b.weight_sum += normalisation == LossNormalisation::kToken ? static_cast<double>(len) : 1.0;
      parent[row] = r;
      for (int64_t j = 0; j + 1 < len; ++j) {
        c_ids[row * completion_length + j] = tokens[static_cast<std::size_t>(j)];
        c_mask[row * completion_length + j] = 1;
      }
      b.row_tokens += len - 1;
      for (int64_t j = 0; j < len; ++j) {
        from[label] = j == 0 ? r : prompts + row * completion_length + j - 1;
        tok[label] = tokens[static_cast<std::size_t>(j)];
        old[label] = g.old_logprobs[c][static_cast<std::size_t>(j)];
        adv[label] = static_cast<float>(g.advantages[c]);
        weight[label] = w;
        ++label;
      }
    }
  }
  return b;
}

RolloutLogprobs rollout_logprobs(LlamaModelImpl& model, const PackedRollouts& batch, double temperature,
                                 bool with_entropy) {
  if (!(temperature > 0)) throw UsageError("rollout_logprobs: the temperature must be positive");
  const auto dev = model.device();
  auto [prompts, completions] = model.prefix_hidden_states(batch.prompt_ids, batch.prompt_mask, batch.completion_ids,
                                                          batch.completion_mask, batch.parent);
  const int64_t width = prompts.size(-1);
  auto sources = torch::cat({prompts, completions.reshape({-1, width})}, 0);  // each prompt's last position first
  auto logits = model.logits(sources.index_select(0, batch.from.to(dev)));
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

torch::Tensor shared_prompt_logprobs(LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<std::vector<std::vector<int32_t>>>& answers, int64_t pad_id) {
  if (prompts.size() != answers.size())
    throw UsageError(fmt::format("shared_prompt_logprobs: {} prompts and {} answer lists", prompts.size(), answers.size()));
  // Rollout groups whose sampling log-probabilities and advantages are unused here (zeros).
  std::vector<RolloutGroup> groups(prompts.size());
  std::vector<int64_t> answer_of_label;
  int64_t answer = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    groups[i].prompt = prompts[i];
    groups[i].completions = answers[i];
    for (const auto& a : answers[i]) {
      groups[i].old_logprobs.emplace_back(a.size(), 0.0f);
      groups[i].advantages.push_back(0.0);
      answer_of_label.insert(answer_of_label.end(), a.size(), answer++);
    }
  }
  std::vector<const RolloutGroup*> pointers;
  for (const RolloutGroup& g : groups) pointers.push_back(&g);
  const PackedRollouts packed = pack_rollouts(pointers, pad_id);
  const torch::Tensor per_label = rollout_logprobs(model, packed).logprobs;
  const auto index = torch::tensor(answer_of_label, torch::kInt64).to(per_label.device());
  return torch::zeros({answer}, per_label.options()).index_add(0, index, per_label);
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
