// The decoding step without operator calls (llama/decode_step.h's row kernels, LlamaModelImpl::decode_step()):
// each kernel against the libtorch operators it replaces, and whole steps against the operators' step (the same
// model with set_step_kernels(false)) over left-padded batches at the row counts that take each
// product path, grown caches, big weights split between threads, LoRA pairs, and bad input.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include "core/error.h"
#include "llama/decode_step.h"
#include "llama/model.h"
#include "llama_test_util.h"

namespace pwab::llama {
namespace {

using namespace testing;

TEST(DecodeStep, RowKernelsEqualTheOperators) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  {  // RMSNorm, also in place
    auto x = torch::randn({3, 40}) * 3, w = torch::randn({40});
    auto want = w * (x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6));
    auto got = torch::empty_like(x);
    rms_norm_rows(x.data_ptr<float>(), w.data_ptr<float>(), 3, 40, 1e-6f, got.data_ptr<float>());
    EXPECT_LT(max_diff(got, want), 2e-6);
    rms_norm_rows(x.data_ptr<float>(), w.data_ptr<float>(), 3, 40, 1e-6f, x.data_ptr<float>());
    EXPECT_TRUE(torch::equal(x, got));
  }
  {  // rotation: x·cos + rotate_half(x)·sin, HF's form
    const int64_t heads = 3, width = 16;
    auto x = torch::randn({heads, width});
    auto angle = torch::rand({width / 2}) * 40;
    auto c = angle.cos(), s = angle.sin();
    auto cos2 = torch::cat({c, c}), sin2 = torch::cat({s, s});
    auto rot = torch::cat({-x.narrow(1, width / 2, width / 2), x.narrow(1, 0, width / 2)}, 1);
    auto want = x * cos2 + rot * sin2;
    auto got = x.clone();
    rotate_heads(got.data_ptr<float>(), heads, width, c.data_ptr<float>(), s.data_ptr<float>());
    EXPECT_TRUE(torch::equal(got, want));  // the same roundings: each product, then the sum
  }
  {  // SwiGLU over the whole range of the gate, beyond exp's clamp included
    auto g = torch::cat({torch::randn({300}) * 4, torch::tensor({-200.f, -90.f, -0.f, 0.f, 50.f, 120.f})});
    auto u = torch::randn({g.numel()});
    auto want = torch::silu(g) * u;
    auto got = g.clone();
    swiglu(got.data_ptr<float>(), u.data_ptr<float>(), got.numel());
    EXPECT_LT(((got - want).abs() / want.abs().clamp_min(1e-3)).max().item<double>(), 1e-5);
  }
  {  // a few rows times a weight, widths with and without a tail of lanes, a range of outputs at a time
    for (int64_t in : {7, 37, 128}) {
      auto x = torch::randn({3, in}), w = torch::randn({50, in});
      auto want = torch::matmul(x, w.t());
      auto got = torch::full({3, 50}, 99.f);
      rows_times_weight(x.data_ptr<float>(), 3, in, w.data_ptr<float>(), 50, 0, 20, got.data_ptr<float>());
      rows_times_weight(x.data_ptr<float>(), 3, in, w.data_ptr<float>(), 50, 20, 50, got.data_ptr<float>());
      EXPECT_LT(max_diff(got, want), 1e-4) << in;
    }
  }
  {
    auto x = torch::randn({7}), y = torch::randn({7});
    auto want = x + y;
    add_into(x.data_ptr<float>(), y.data_ptr<float>(), 7);
    EXPECT_TRUE(torch::equal(x, want));
  }
}

LlamaConfig small_config(int64_t hidden, int64_t intermediate) {
  LlamaConfig c;
  c.vocab_size = 97;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 256;
  c.initializer_range = 0.2;  // spread logits: differences in rounding show
  return c;
}

//! Prompts of different lengths, left-padded: [rows, longest] ids and mask.
std::pair<torch::Tensor, torch::Tensor> prompts(int64_t rows) {
  const int64_t longest = 3 + 2 * rows;
  auto ids = torch::zeros({rows, longest}, torch::kInt64), mask = torch::zeros({rows, longest}, torch::kInt64);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = longest - 2 * r;
    for (int64_t t = 0; t < n; ++t) {
      ids[r][longest - n + t] = (7 * r + 3 * t + 1) % 97;
      mask[r][longest - n + t] = 1;
    }
  }
  return {ids, mask};
}

//! Decodes `steps` tokens a row after the prompts, once through decode_step() and once through the operators
//! (forward() with the step kernels off), both without autograd, expecting the same logits and the same cache (to float32
//! rounding, relative where values exceed 1: the weights are large, so that differences show).
void expect_steps_equal(LlamaModelImpl& model, int64_t rows, int64_t steps, int64_t reserve) {
  auto [ids, mask] = prompts(rows);
  KvCache by_hand(reserve), by_operators(reserve);
  {
    torch::NoGradGuard no_grad;
    model.forward(ids, mask, &by_hand, true);
    model.forward(ids, mask, &by_operators, true);
  }
  for (int64_t s = 0; s < steps; ++s) {
    auto next = (torch::arange(rows, torch::kInt64) * 5 + 11 * s + 2).remainder(97).view({rows, 1});
    torch::Tensor fast, slow;
    {
      torch::NoGradGuard no_grad;
      auto hidden = model.decode_step(next, by_hand);
      ASSERT_TRUE(hidden.defined()) << rows << " rows, step " << s;
      fast = model.logits(hidden);
    }
    model.set_step_kernels(false);
    {
      torch::NoGradGuard no_grad;
      slow = model.forward(next, {}, &by_operators, true);
    }
    model.set_step_kernels(true);
    EXPECT_LT(ref_diff(fast, slow), 3e-5) << rows << " rows, step " << s;
  }
  ASSERT_EQ(by_hand.length(), by_operators.length());
  EXPECT_TRUE(torch::equal(by_hand.mask(), by_operators.mask()));
  EXPECT_TRUE(torch::equal(by_hand.next_positions(), by_operators.next_positions()));
  for (std::size_t l = 0; l < 2; ++l) {
    auto a = by_hand.step_buffers(l), b = by_operators.step_buffers(l);
    EXPECT_LT(ref_diff(a.first.narrow(2, 0, by_hand.length()), b.first.narrow(2, 0, by_hand.length())), 3e-5);
    EXPECT_LT(ref_diff(a.second.narrow(2, 0, by_hand.length()), b.second.narrow(2, 0, by_hand.length())), 3e-5);
  }
}

TEST(DecodeStep, WholeStepsEqualTheOperatorsStepsAtEveryRowCount) {
  // One row and three (the kernels' own products), six (the BLAS's); reserve 0 makes the cache grow on the way.
  auto model = create_model(small_config(64, 160), 11);
  for (int64_t rows : {1, 3, 6}) expect_steps_equal(*model, rows, 4, 0);
}

TEST(DecodeStep, BigWeightsSplitBetweenThreadsGiveTheSameStep) {
  auto model = create_model(small_config(256, 2048), 12);  // 256 × 2048: the split's threshold
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    expect_steps_equal(*model, 1, 2, 32);
    expect_steps_equal(*model, 2, 2, 32);
  }
  at::set_num_threads(before);
}

TEST(DecodeStep, LoraPairsAreStepsByHandTooAndAutogradKeepsTheOperators) {
  auto model = create_model(small_config(64, 160), 13);
  auto [ids, mask] = prompts(2);
  auto next = torch::tensor(std::vector<int64_t>{4, 9}, torch::kInt64).view({2, 1});
  KvCache cache;
  {
    torch::NoGradGuard no_grad;
    model->forward(ids, mask, &cache, true);
  }
  const int64_t length = cache.length();
  EXPECT_FALSE(model->decode_step(next, cache).defined());  // autograd on: not by hand, the cache untouched
  EXPECT_EQ(cache.length(), length);
  // LoRA pairs on a query and a down projection (B trained away from zero): by hand at one, three and six rows,
  // the same numbers as the operators.
  uint64_t seed = 1;
  for (const auto& [name, m] : model->weight_modules())
    if (name.ends_with("self_attn.q_proj") || name.ends_with("mlp.down_proj")) {
      auto* p = dynamic_cast<ProjectionImpl*>(m.get());
      ASSERT_NE(p, nullptr);
      p->add_lora(4, 2.0, 0.1, torch::kFloat32, seed++);
      torch::NoGradGuard no_grad;
      p->lora_B().normal_(0, 0.5);
    }
  model->eval();
  for (int64_t rows : {1, 3, 6}) expect_steps_equal(*model, rows, 3, 0);
  // The pairs matter: with them off the step gives other logits.
  torch::NoGradGuard no_grad;
  KvCache on, off;
  model->forward(ids, mask, &on, true);
  model->forward(ids, mask, &off, true);
  auto with = model->logits(model->decode_step(next, on));
  model->set_adapters_enabled(false);
  auto without = model->logits(model->decode_step(next, off));
  EXPECT_GT(max_diff(with, without), 1e-3);
  // In training mode LoRA's dropout would act: the operators.
  model->set_adapters_enabled(true);
  model->train();
  EXPECT_FALSE(model->decode_step(next, on).defined());
}

TEST(DecodeStep, BadInputIsAUsageError) {
  auto model = create_model(small_config(64, 160), 14);
  torch::NoGradGuard no_grad;
  auto [ids, mask] = prompts(2);
  KvCache empty, cache;
  auto next = torch::tensor(std::vector<int64_t>{4, 9}, torch::kInt64).view({2, 1});
  EXPECT_THROW(model->decode_step(next, empty), UsageError);  // nothing cached
  model->forward(ids, mask, &cache, true);
  EXPECT_THROW(model->decode_step(next.view({1, 2}), cache), UsageError);             // two tokens a row
  EXPECT_THROW(model->decode_step(next.narrow(0, 0, 1), cache), UsageError);          // rows do not match
  auto outside = torch::tensor(std::vector<int64_t>{4, 97}, torch::kInt64).view({2, 1});
  try {
    model->decode_step(outside, cache);
    FAIL() << "an id outside the vocabulary went through";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 97"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pwab::llama

namespace pwab::llama {
namespace {

TEST(DecodeStep, PromptRotationByHandIsTheOperatorsBitForBit) {
  // Without autograd the rotary embedding of a prompt's projections runs in place, token by token; with autograd,
  // the operators. The same products and sums: the forward's logits are equal bit for bit, padded or packed.
  auto model = create_model(small_config(64, 160), 15);
  auto [ids, mask] = prompts(3);
  auto packed = torch::tensor(std::vector<int64_t>{5, 8, 13, 21, 34, 55, 89, 44, 2}, torch::kInt64).view({1, -1});
  const std::vector<int64_t> lengths{4, 2, 3};
  auto with_autograd = model->forward(ids, mask).detach();
  auto packed_with_autograd = model->packed_hidden_states(packed, lengths).detach();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(ids, mask), with_autograd));
  EXPECT_TRUE(torch::equal(model->packed_hidden_states(packed, lengths), packed_with_autograd));
}

}  // namespace
}  // namespace pwab::llama
