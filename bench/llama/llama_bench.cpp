// LLaMA decoder benchmarks on the CPU: forward throughput (a padded batch, as SFT/DPO scoring runs it) and
// generation throughput with the KV cache (greedy, and beam-sample with 10 beams as PUMA's DPO sampling), for a
// small random model with LLaMA-2's vocabulary: hidden 256, 4 layers, 8 heads (4 key/value), SwiGLU 688.
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>

#include "bench.h"
#include "core/sys.h"
#include "core/torch_runtime.h"
#include "llama/generate.h"
#include "llama/model.h"

using namespace pwab;
using namespace pwab::bench;

namespace {

constexpr int64_t kBatch = 4, kLength = 256, kPromptLength = 64, kNewTokens = 64, kBeams = 10, kBeamTokens = 32;

llama::LlamaConfig small_config() {
  llama::LlamaConfig c = llama::tiny_config(32000);
  c.hidden_size = 256;
  c.intermediate_size = 688;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.max_position_embeddings = 1024;
  c.initializer_range = 0.05;
  return c;
}

llama::LlamaModel& model() {
  static llama::LlamaModel m = [] {
    torch_init_threads(0);
    auto created = llama::create_model(small_config(), 1);
    created->eval();
    return created;
  }();
  return m;
}

std::vector<std::vector<int32_t>> prompts(int64_t n) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> p{1};
    for (int64_t t = 1; t < kPromptLength; ++t) p.push_back(int32_t((i * 7919 + t * 104729) % 31990 + 3));
    out.push_back(p);
  }
  return out;
}

bool last_ok = false;

const int kForward = add({
    "llama/forward",
    fmt::format("forward pass of {} rows × {} tokens (random LLaMA: hidden 256, 4 layers, GQA 8/4 heads, vocab "
                "32000, float32, no grad); extra: tokens/s",
                kBatch, kLength),
    5,
    [](const Context&) {
      torch::NoGradGuard no_grad;
      model()->forward(torch::randint(0, 32000, {kBatch, kLength}, torch::kInt64));  // warm-up
    },
    [](const Context&, std::vector<Extra>& extras) {
      torch::NoGradGuard no_grad;
      auto ids = torch::randint(0, 32000, {kBatch, kLength}, torch::kInt64);
      Stopwatch clock;
      auto logits = model()->forward(ids);
      const double s = clock.seconds();
      last_ok = logits.size(2) == 32000 && torch::isfinite(logits).all().item<bool>();
      extras.push_back({"tokens/s", double(kBatch * kLength) / s, ""});
      return s;
    },
    [](const Context&) -> std::string { return last_ok ? "" : "logits have the wrong shape or are not finite"; },
});

const int kGreedy = add({
    "llama/generate_greedy",
    fmt::format("greedy generation with the KV cache: {} prompts of {} tokens, {} new tokens each (same model); "
                "extra: generated tokens/s",
                kBatch, kPromptLength, kNewTokens),
    3,
    [](const Context&) { model(); },
    [](const Context&, std::vector<Extra>& extras) {
      llama::GenerateOptions o;
      o.max_new_tokens = kNewTokens;
      o.eos_token_ids = {0};  // never produced by this prompt set in 64 steps in practice; the check counts
      Stopwatch clock;
      auto out = llama::generate(*model(), prompts(kBatch), o);
      const double s = clock.seconds();
      int64_t n = 0;
      for (const auto& g : out) n += int64_t(g[0].tokens.size()) + (g[0].eos ? 1 : 0);
      last_ok = n > 0;
      extras.push_back({"tokens/s", double(n) / s, ""});
      extras.push_back({"generated", double(n), ""});
      return s;
    },
    [](const Context&) -> std::string { return last_ok ? "" : "nothing generated"; },
});

const int kBeam = add({
    "llama/generate_beam_sample",
    fmt::format("beam-sample generation (PUMA's DPO sampling: {} beams, temperature 1.5, top-k 50): 1 prompt of {} "
                "tokens, {} new tokens; extra: beam tokens/s (beams × steps / s)",
                kBeams, kPromptLength, kBeamTokens),
    3,
    [](const Context&) { model(); },
    [](const Context&, std::vector<Extra>& extras) {
      llama::GenerateOptions o;
      o.max_new_tokens = kBeamTokens;
      o.num_beams = kBeams;
      o.do_sample = true;
      o.temperature = 1.5;
      o.seed = 1;
      o.eos_token_ids = {0};
      Stopwatch clock;
      auto out = llama::generate(*model(), prompts(1), o);
      const double s = clock.seconds();
      last_ok = out[0].size() == std::size_t(kBeams);
      int64_t steps = 0;
      for (const auto& g : out[0]) steps = std::max<int64_t>(steps, int64_t(g.tokens.size()));
      extras.push_back({"beam tokens/s", double(kBeams * steps) / s, ""});
      return s;
    },
    [](const Context&) -> std::string { return last_ok ? "" : "fewer candidates than beams"; },
});

}  // namespace
