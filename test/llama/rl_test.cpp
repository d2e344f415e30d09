// The RL objective (llama/rl.h, llama/rl_loss.h) against values worked out by hand: group advantages (GRPO, RLOO),
// the clipped surrogate, the k3 KL, and packed rollout rows, whose log-probabilities must be those of separate
// prompt + completion rows.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "llama/lora.h"
#include "llama/rl.h"
#include "llama/rl_loss.h"
#include "llama/train.h"
#include "llama_test_util.h"

namespace pwab::llama {
namespace {

using testing::load_fixture;

TEST(RlAdvantages, GrpoAndRlooByHand) {
  // rewards 1, 0, 0, 1: mean 0.5; unbiased std sqrt((4 · 0.25) / 3) = 0.57735
  const std::vector<double> r{1, 0, 0, 1};
  const double std_dev = std::sqrt(1.0 / 3.0);
  auto grpo = group_advantages(r, AdvantageEstimator::kGrpo, 1e-4);
  ASSERT_EQ(grpo.size(), 4u);
  EXPECT_NEAR(grpo[0], 0.5 / (std_dev + 1e-4), 1e-12);
  EXPECT_NEAR(grpo[1], -0.5 / (std_dev + 1e-4), 1e-12);
  // RLOO: each reward minus the mean of the other three: 1 − 1/3, 0 − 2/3
  auto rloo = group_advantages(r, AdvantageEstimator::kRloo);
  EXPECT_NEAR(rloo[0], 1.0 - 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(rloo[1], 0.0 - 2.0 / 3.0, 1e-12);
  // uneven rewards: 0.9, 0.3, 0.0 → RLOO 0.9 − 0.15 = 0.75, 0.3 − 0.45 = −0.15, 0 − 0.6 = −0.6
  auto uneven = group_advantages({0.9, 0.3, 0.0}, AdvantageEstimator::kRloo);
  EXPECT_NEAR(uneven[0], 0.75, 1e-12);
  EXPECT_NEAR(uneven[1], -0.15, 1e-12);
  EXPECT_NEAR(uneven[2], -0.6, 1e-12);
  // GRPO: mean 0.4, deviations 0.5, −0.1, −0.4; std sqrt(0.42 / 2)
  auto g3 = group_advantages({0.9, 0.3, 0.0}, AdvantageEstimator::kGrpo, 0);
  EXPECT_NEAR(g3[0], 0.5 / std::sqrt(0.21), 1e-12);
  EXPECT_NEAR(g3[2], -0.4 / std::sqrt(0.21), 1e-12);
  // no signal: equal rewards, a single member
  for (auto e : {AdvantageEstimator::kGrpo, AdvantageEstimator::kRloo}) {
    EXPECT_EQ(group_advantages({0.4, 0.4, 0.4}, e), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(group_advantages({1.0}, e), (std::vector<double>{0}));
  }
  EXPECT_TRUE(rewards_tied({0.2, 0.2}));
  EXPECT_FALSE(rewards_tied({0.2, 0.3}));
  EXPECT_EQ(parse_advantage_estimator("rloo"), AdvantageEstimator::kRloo);
  EXPECT_THROW(parse_advantage_estimator("ppo"), UsageError);
}

TEST(RlLoss, ClippedSurrogateAndK3ByHand) {
  // four tokens: ratios e^0.3 (1.35), e^-0.3 (0.74), 1, e^0.1; advantages +1, −1, +2, −0.5; ε = 0.2
  auto old = torch::tensor({-1.0f, -1.0f, -2.0f, -0.5f});
  auto logp = (old + torch::tensor({0.3f, -0.3f, 0.0f, 0.1f})).requires_grad_(true);
  auto adv = torch::tensor({1.0f, -1.0f, 2.0f, -0.5f});
  PolicyLossOptions o;
  PolicyLossTerms t = policy_loss(logp, old, adv, {}, o);
  const double r0 = std::exp(0.3), r1 = std::exp(-0.3), r3 = std::exp(0.1);
  // token 0: min(1.35 · 1, 1.2 · 1) = 1.2 (clipped); token 1: min(0.74 · −1, 0.8 · −1) = −0.8 (clipped);
  // token 2: ratio 1 → 2; token 3: min(1.105 · −0.5, 1.105 · −0.5) (inside the clip range)
  EXPECT_NEAR(t.per_token[0].item<double>(), -1.2, 1e-6);
  EXPECT_NEAR(t.per_token[1].item<double>(), 0.8, 1e-6);
  EXPECT_NEAR(t.per_token[2].item<double>(), -2.0, 1e-6);
  EXPECT_NEAR(t.per_token[3].item<double>(), 0.5 * r3, 1e-6);
  EXPECT_NEAR(t.ratio[0].item<double>(), r0, 1e-6);
  EXPECT_NEAR(t.ratio[1].item<double>(), r1, 1e-6);
  EXPECT_EQ(t.clipped.sum().item<int64_t>(), 2);
  EXPECT_TRUE(t.clipped[0].item<bool>() && t.clipped[1].item<bool>());
  // Clipped tokens pass no gradient; the others −A · r.
  t.per_token.sum().backward();
  auto g = logp.grad();
  EXPECT_NEAR(g[0].item<double>(), 0.0, 1e-7);
  EXPECT_NEAR(g[1].item<double>(), 0.0, 1e-7);
  EXPECT_NEAR(g[2].item<double>(), -2.0, 1e-6);
  EXPECT_NEAR(g[3].item<double>(), 0.5 * r3, 1e-6);
  // A wider upper clip (DAPO) lets token 0 through: min(1.35, 1.4) = 1.35.
  o.clip_high = 0.4;
  EXPECT_NEAR(policy_loss(logp, old, adv, {}, o).per_token[0].item<double>(), -r0, 1e-6);

  // k3 = e^(ρ−π) − (ρ − π) − 1: 0 where they agree, e^0.5 − 1.5 at ρ − π = 0.5, e^−1 at ρ − π = −1.
  auto pi = torch::tensor({-1.0f, -1.0f, -1.0f});
  auto rho = torch::tensor({-1.0f, -0.5f, -2.0f});
  auto k3 = k3_kl(pi, rho);
  EXPECT_NEAR(k3[0].item<double>(), 0.0, 1e-7);
  EXPECT_NEAR(k3[1].item<double>(), std::exp(0.5) - 1.5, 1e-6);
  EXPECT_NEAR(k3[2].item<double>(), std::exp(-1.0), 1e-6);
  // With a reference and β: the per-token loss adds β · k3.
  PolicyLossOptions with_kl;
  with_kl.kl_coef = 0.1;
  auto same = torch::tensor({-1.0f, -1.0f, -1.0f});
  PolicyLossTerms k = policy_loss(same, same, torch::tensor({1.0f, 1.0f, 1.0f}), rho, with_kl);
  EXPECT_NEAR(k.per_token[1].item<double>(), -1.0 + 0.1 * (std::exp(0.5) - 1.5), 1e-6);
  EXPECT_NEAR(k.kl[2].item<double>(), std::exp(-1.0), 1e-6);
  EXPECT_THROW(policy_loss(same, same, same, {}, with_kl), UsageError);  // β without a reference
}

// A prompt computed once for its completions, each completion seeing the prompt and itself: the log-probabilities
// and gradients of separate prompt + completion rows.
TEST(RlLoss, PrefixBatchesGiveTheLogprobsAndGradientsOfSeparateRows) {
  auto model = load_fixture();
  RolloutGroup a{{1, 5, 9, 4}, {{7, 3, 2}, {8}, {6, 6}}, {{0, 0, 0}, {0}, {0, 0}}, {0.5, -1, 0.25}};
  RolloutGroup b{{1, 3}, {{9, 9, 9, 2}}, {{0, 0, 0, 0}}, {1.0}};
  PackedRollouts p = pack_rollouts({&a, &b}, /*pad_id=*/0);
  // prompts left-padded to 4; completions without their last token, right-padded to 3
  ASSERT_EQ(p.prompt_ids.sizes(), (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(p.completion_ids.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(p.prompt_ids[1][2].item<int64_t>(), 1);
  EXPECT_EQ(p.prompt_mask[1][1].item<int64_t>(), 0);
  EXPECT_EQ(p.completion_ids[3][2].item<int64_t>(), 9);
  EXPECT_EQ(p.completion_mask[1].sum().item<int64_t>(), 0);  // a one-token completion reads nothing of its own
  EXPECT_EQ((std::vector<int64_t>(p.parent.data_ptr<int64_t>(), p.parent.data_ptr<int64_t>() + 4)),
            (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(p.labels, 10);
  EXPECT_EQ(p.row_tokens, 6 + 6);  // the prompts once, the completions' inputs
  // first tokens read the prompt's last position (rows 0 and 1 of the sources); the others their completion's
  // previous token (2 prompts + row · 3 + j − 1)
  EXPECT_EQ(p.from[0].item<int64_t>(), 0);
  EXPECT_EQ(p.from[1].item<int64_t>(), 2);
  EXPECT_EQ(p.from[3].item<int64_t>(), 0);
  EXPECT_EQ(p.from[5].item<int64_t>(), 2 + 2 * 3);
  EXPECT_EQ(p.from[6].item<int64_t>(), 1);
  EXPECT_EQ(p.from[9].item<int64_t>(), 2 + 3 * 3 + 2);
  EXPECT_FLOAT_EQ(p.advantages[3].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(p.advantages[9].item<float>(), 1.0f);
  // weights: per token 1 each; per sequence 1 / the completion's length, summing to the completions
  EXPECT_DOUBLE_EQ(p.weight_sum, 10.0);
  EXPECT_FLOAT_EQ(p.weights[5].item<float>(), 1.0f);
  PackedRollouts per_sequence = pack_rollouts({&a, &b}, 0, LossNormalisation::kSequence);
  EXPECT_DOUBLE_EQ(per_sequence.weight_sum, 4.0);
  EXPECT_FLOAT_EQ(per_sequence.weights[0].item<float>(), 1.0f / 3.0f);
  EXPECT_FLOAT_EQ(per_sequence.weights[3].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(per_sequence.weights[9].item<float>(), 0.25f);
  EXPECT_NEAR(per_sequence.weights.sum().item<double>(), 4.0, 1e-6);

  {  // the completions' padding goes through no norm, projection or MLP: its hidden states are zero, the rest not
    torch::NoGradGuard no_grad;
    auto states = model->prefix_hidden_states(p.prompt_ids, p.prompt_mask, p.completion_ids, p.completion_mask,
                                              p.parent).second.abs().sum(-1);  // [completions, 3]
    auto padding = p.completion_mask.eq(0);
    EXPECT_EQ(states.masked_select(padding).max().item<double>(), 0.0);
    EXPECT_GT(states.masked_select(padding.logical_not()).min().item<double>(), 0.0);
  }

  // the same numbers, and the same gradients, from separate prompt + completion rows
  set_base_trainable(*model, true);
  RolloutLogprobs packed = rollout_logprobs(*model, p, 1.0, true);
  {
    // Without autograd (RL's reference pass, DPO's) the numbers are those of the pass with it, bit for bit: a policy
    // equal to its reference must give a KL of exactly 0, or Adam turns the rounding into a step. Prompts of
    // different lengths (packed), one prompt, and two of one length (the padded batch's road).
    RolloutGroup c{{1, 7, 9, 4}, {{7, 3, 2}, {6, 6}}, {{0, 0, 0}, {0, 0}}, {0.5, -1}};
    using Groups = std::vector<const RolloutGroup*>;
    for (const Groups& gs : {Groups{&a, &b}, Groups{&a}, Groups{&a, &c}}) {
      PackedRollouts q = pack_rollouts(gs, 0);
      auto with_grad = rollout_logprobs(*model, q, 1.0).logprobs;
      ASSERT_TRUE(with_grad.requires_grad());
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(torch::equal(rollout_logprobs(*model, q, 1.0).logprobs, with_grad.detach())) << gs.size();
    }
  }
  auto weights = torch::arange(1, 11, torch::kFloat32);  // a loss that weighs every label differently
  (packed.logprobs * weights).sum().backward();
  std::vector<torch::Tensor> packed_grads;
  for (auto& w : model->parameters()) packed_grads.push_back(w.grad().clone()), w.mutable_grad().zero_();
  std::vector<SequencePair> rows{{a.prompt, a.completions[0]}, {a.prompt, a.completions[1]},
                                 {a.prompt, a.completions[2]}, {b.prompt, b.completions[0]}};
  LabelledPositions separate = labelled_positions(*model, make_batch(rows, 0));
  auto expect = separate.log_probs.gather(1, separate.tokens.unsqueeze(-1)).squeeze(-1);
  ASSERT_EQ(expect.size(0), packed.logprobs.size(0));
  EXPECT_LT(testing::max_diff(packed.logprobs.detach(), expect.detach()), 1e-5);
  auto entropy = -(separate.log_probs.exp() * separate.log_probs).sum(-1);
  EXPECT_LT(testing::max_diff(packed.entropy, entropy.detach()), 1e-5);
  (expect * weights).sum().backward();
  std::size_t i = 0;
  for (auto& w : model->parameters()) {  // float32 rounding: relative to the gradient's largest entry
    const double scale = std::max(1e-6, w.grad().abs().max().item<double>());
    EXPECT_LT(testing::max_diff(w.grad(), packed_grads[i++]) / scale, 1e-5) << scale;
  }
  set_base_trainable(*model, false);
  // at temperature 2 the log-softmax of logits / 2
  torch::NoGradGuard no_grad;
  auto hot = rollout_logprobs(*model, p, 2.0).logprobs;
  EXPECT_GT(testing::max_diff(hot, packed.logprobs.detach()), 1e-3);

  RolloutGroup bad{{1}, {{}}, {{}}, {0.0}};
  EXPECT_THROW(pack_rollouts({&bad}, 0), UsageError);
  RolloutGroup mismatched{{1}, {{4, 5}}, {{0}}, {0.0}};
  EXPECT_THROW(pack_rollouts({&mismatched}, 0), UsageError);
}

// DPO's pairs (llama/rl_loss.h shared_prompt_logprobs): the chosen and rejected answers read their prompt computed
// once, and give the sequence log-probabilities and gradients of the separate rows (sequence_logprobs).
TEST(RlLoss, SharedPromptLogprobsAreThoseOfSeparateRows) {
  auto model = load_fixture();
  const std::vector<std::vector<int32_t>> prompts{{1, 5, 9, 4, 7}, {1, 3}};
  const std::vector<std::vector<std::vector<int32_t>>> answers{{{7, 3, 2}, {8, 2}}, {{9}, {9, 9, 9, 2}}};
  set_base_trainable(*model, true);
  auto shared = shared_prompt_logprobs(*model, prompts, answers, /*pad_id=*/0);
  ASSERT_EQ(shared.sizes(), (std::vector<int64_t>{4}));
  auto weights = torch::tensor({1.0f, -2.0f, 3.0f, 0.5f});  // as DPO's loss, each answer weighs differently
  (shared * weights).sum().backward();
  std::vector<torch::Tensor> shared_grads;
  for (auto& w : model->parameters()) shared_grads.push_back(w.grad().clone()), w.mutable_grad().zero_();
  std::vector<SequencePair> rows;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    for (const auto& a : answers[i]) rows.push_back({prompts[i], a});
  auto separate = sequence_logprobs(*model, make_batch(rows, 0));
  EXPECT_LT(testing::max_diff(shared.detach(), separate.detach()), 1e-5);
  (separate * weights).sum().backward();
  std::size_t i = 0;
  for (auto& w : model->parameters()) {
    const double scale = std::max(1e-6, w.grad().abs().max().item<double>());
    EXPECT_LT(testing::max_diff(w.grad(), shared_grads[i++]) / scale, 1e-5) << scale;
  }
  set_base_trainable(*model, false);
  EXPECT_THROW(shared_prompt_logprobs(*model, prompts, {answers[0]}, 0), UsageError);
  EXPECT_THROW(shared_prompt_logprobs(*model, {{1}}, {{{}}}, 0), UsageError);  // an answer without tokens
}

}  // namespace
}  // namespace pwab::llama
