// The CUDA paths of the model (issue 39, item 3): the same fixture on a GPU gives the reference logits, greedy
// decoding with the KV cache picks the CPU's tokens, bf16 autocast stays near float32, and training steps on the
// GPU follow the CPU's losses. Every test skips on a machine without a CUDA device (this libtorch's or the
// driver's); scripts/gpu-check.sh runs them where there is one.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "llama/generate.h"
#include "llama/lora.h"
#include "llama/train.h"
#include "llama_test_util.h"

namespace pwab::llama {
namespace {

using namespace testing;

#define SKIP_WITHOUT_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this libtorch or this machine has none"

LlamaModel load_on_gpu(torch::Dtype dtype = torch::kFloat32) {
  LoadOptions o = quiet(dtype);
  o.device = torch::Device(torch::kCUDA, 0);
  return load_model(fixture_dir("f32"), o);
}

std::vector<SequencePair> small_task() {
  return {{{1, 10, 11}, {40, 41, 2}}, {{1, 12, 13, 14}, {42, 43, 44, 2}}, {{1, 15}, {45, 2}}, {{1, 16, 17}, {46, 47, 2}}};
}

TEST(Cuda, ForwardGivesTheReferenceLogits) {
  SKIP_WITHOUT_CUDA();
  auto model = load_on_gpu();
  EXPECT_TRUE(model->device().is_cuda());
  // cuBLAS sums in its own order (and TF32 is off by default for float32 matmuls): the CPU tests' tolerance, ×4.
  for (std::size_t i = 0; i < expected()["sequences"].size(); ++i)
    EXPECT_LT(ref_diff(logits_of(*model, sequence(i)).cpu(), expected_logits("logits", i)), 2e-4) << "seq " << i;
}

TEST(Cuda, GreedyDecodingPicksTheCpusTokens) {
  SKIP_WITHOUT_CUDA();
  auto cpu = load_fixture();
  auto gpu = load_on_gpu();
  GenerateOptions o;
  o.max_new_tokens = 12;
  o.eos_token_ids = {2};
  const std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1), sequence(2)};
  auto on_cpu = generate(*cpu, prompts, o);
  auto on_gpu = generate(*gpu, prompts, o);
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(on_gpu[i][0].tokens, on_cpu[i][0].tokens) << i;
    EXPECT_NEAR(on_gpu[i][0].score, on_cpu[i][0].score, 1e-3) << i;
  }
}

TEST(Cuda, Bfloat16AutocastStaysNearFloat32) {
  SKIP_WITHOUT_CUDA();
  auto model = load_on_gpu();
  const auto ids = sequence(0);
  torch::Tensor exact = logits_of(*model, ids).cpu();
  torch::Tensor mixed;
  {
    AutocastGuard autocast(model->device(), torch::kBFloat16);
    mixed = logits_of(*model, ids).to(torch::kFloat32).cpu();
  }
  EXPECT_GT(max_diff(mixed, exact), 0.0) << "autocast did not change the matmuls' precision";
  EXPECT_LT(ref_diff(mixed, exact), 0.1);
  const double agree = (mixed.argmax(-1) == exact.argmax(-1)).to(torch::kFloat64).mean().item<double>();
  EXPECT_GE(agree, 0.9);
}

// Three AdamW steps on every weight: the GPU's losses follow the CPU's.
TEST(Cuda, TrainingStepsFollowTheCpu) {
  SKIP_WITHOUT_CUDA();
  std::vector<double> losses[2];
  for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
    auto model = on_gpu ? load_on_gpu() : load_fixture();
    model->train();
    torch::optim::AdamW optimizer(model->parameters(), hf_adamw_options(1e-3));
    const auto batch = make_batch(small_task(), 0);
    for (int step = 0; step < 3; ++step) {
      optimizer.zero_grad();
      auto loss = causal_lm_loss(*model, batch);
      loss.backward();
      optimizer.step();
      losses[on_gpu].push_back(loss.item<double>());
    }
  }
  for (int step = 0; step < 3; ++step) EXPECT_NEAR(losses[1][step], losses[0][step], 1e-3) << step;
  EXPECT_LT(losses[1][2], losses[1][0]);
}

// LoRA in bf16 autocast, as the paper preset trains on a GPU: the adapter learns and the base stays as it was.
TEST(Cuda, LoraUnderBfloat16AutocastLearnsAndLeavesTheBase) {
  SKIP_WITHOUT_CUDA();
  auto model = load_on_gpu();
  const auto before = model->checkpoint_weights();
  std::vector<torch::Tensor> kept;
  for (const auto& [name, t] : before) kept.push_back(t.detach().clone());
  LoraConfig config;
  config.r = 4;
  config.alpha = 8;
  auto adapter = LoraAdapter::attach(model, config);
  torch::optim::AdamW optimizer(adapter->parameters(), hf_adamw_options(1e-2));
  const auto batch = make_batch(small_task(), 0);
  auto loss_now = [&] {
    torch::NoGradGuard no_grad;
    return causal_lm_loss(*model, batch).item<double>();
  };
  const double initial = loss_now();
  model->train();
  for (int step = 0; step < 20; ++step) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      AutocastGuard autocast(model->device(), torch::kBFloat16);
      loss = causal_lm_loss(*model, batch);
    }
    loss.backward();
    optimizer.step();
  }
  EXPECT_LT(loss_now(), 0.7 * initial);
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(max_diff(before[i].second, kept[i]), 0.0) << before[i].first;
}

}  // namespace
}  // namespace pwab::llama
