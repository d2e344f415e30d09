// LLaMA decoder benchmarks on the CPU: forward throughput (a padded batch, as SFT/DPO scoring runs it) and
// generation throughput with the KV cache (greedy, and beam-sample with 10 beams as PUMA's DPO sampling), for a
// small random model with LLaMA-2's vocabulary: hidden 256, 4 layers, 8 heads (4 key/value), SwiGLU 688; the SFT
// step's matrix-product limit; a decoding step's attention against PyTorch's; a whole decoding step without operator
// calls against the operators' step.
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "bench.h"
#include "core/sys.h"
#include "core/torch_runtime.h"
#include "llama/generate.h"
#include "llama/model.h"

using namespace pwab;
using namespace pwab::bench;

namespace {

constexpr int64_t kBatch = 4, kLength = 256, kPromptLength = 64, kNewTokens = 64, kBeams = 10, kBeamTokens = 32;

//! A random decoder of 4 layers with these widths (tiny_config's other settings), normal(0, 0.05) weights.
llama::LlamaConfig decoder_config(int64_t vocab, int64_t hidden, int64_t intermediate, int64_t heads, int64_t kv_heads) {
  llama::LlamaConfig c = llama::tiny_config(vocab);
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = 4;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.max_position_embeddings = 1024;
  c.initializer_range = 0.05;
  return c;
}

llama::LlamaConfig small_config() { return decoder_config(32000, 256, 688, 8, 4); }

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

// The physical limit of one SFT step of the tiny PUMA preset (issue 31): OpenBLAS's sgemm rate, through libtorch's
// matmul as the step calls it, on the step's own shapes (hidden 64, 2 layers, 4 query / 2 key-value heads of 16,
// SwiGLU 172, vocabulary 2000, batch 8), and the least time the step's matrix products could take at those rates.
// The batch figures are means over 50 shuffled epochs of the preset's 1,725 rows on the mini dataset (rows padded
// to the batch's longest, max 384): 326 positions a row, Σ n² = 935,278 score cells a head, 156 labelled tokens;
// without padding the same batches hold 1,106 tokens and Σ n² = 255,149.
struct StepShape {
  double tokens, score_cells, labelled;
};
constexpr StepShape kPadded{8 * 326.27, 935278, 155.7}, kUnpadded{1106, 255149, 155.7};
constexpr int64_t kHidden = 64, kQueryWidth = 64, kKvWidth = 32, kFfn = 172, kVocab = 2000, kLayers = 2, kHead = 16;
double gemm_seconds_bound = 0;

//! Floating-point operations per second of a @ b, the median of `reps` timed products after a warm-up.
double matmul_rate(const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape, int reps = 30) {
  auto a = torch::randn(a_shape), b = torch::randn(b_shape);
  for (int i = 0; i < 3; ++i) torch::matmul(a, b);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    Stopwatch clock;
    auto c = torch::matmul(a, b);
    times.push_back(clock.seconds());
  }
  std::sort(times.begin(), times.end());
  double batches = 1;
  for (std::size_t d = 0; d + 2 < a_shape.size(); ++d) batches *= static_cast<double>(a_shape[d]);
  const double flops = 2 * batches * static_cast<double>(a_shape[a_shape.size() - 2]) *
                       static_cast<double>(a_shape.back()) * static_cast<double>(b_shape.back());
  return flops / times[times.size() / 2];
}

//! Seconds of matrix products in one step (forward, and the backward's two products per forward product).
double step_gemm_seconds(const StepShape& s, double linear_rate, double attention_rate, double head_rate) {
  const double linear = 2 * s.tokens * kHidden * (kQueryWidth + 2 * kKvWidth + kQueryWidth + 3 * kFfn) * kLayers;
  const double attention = 2 * 2 * s.score_cells * 4 /*query heads*/ * kHead * kLayers;
  const double head = 2 * s.labelled * kHidden * kVocab;
  return 3 * (linear / linear_rate + attention / attention_rate + head / head_rate);
}

const int kLimit = add({
    "llama/sft_step_gemm_limit",
    "sgemm rate (libtorch matmul on OpenBLAS) of the tiny PUMA preset's SFT step shapes, and the least time the "
    "step's products take at those rates, padded as trained and without padding; extra: GFLOP/s and ms",
    3,
    [](const Context&) {
      torch_init_threads(0);
      torch_tune_allocator();  // as pwab's training does: large buffers are reused, not mapped afresh each product
    },
    [](const Context&, std::vector<Extra>& extras) {
      Stopwatch clock;
      const int64_t tokens = static_cast<int64_t>(kPadded.tokens), n = 326;
      const double square = matmul_rate({1024, 1024}, {1024, 1024}, 5);
      // the projections' shapes, weighted by their operations
      double linear_flops = 0, linear_time = 0;
      for (auto [k, m] : std::vector<std::pair<int64_t, int64_t>>{
               {kHidden, kQueryWidth}, {kHidden, kKvWidth}, {kHidden, kFfn}, {kFfn, kHidden}, {kQueryWidth, kHidden}}) {
        const double f = 2.0 * static_cast<double>(tokens * k * m);
        linear_flops += f, linear_time += f / matmul_rate({tokens, k}, {k, m});
      }
      const double linear = linear_flops / linear_time;
      // scores (queries of a key/value head against its keys) and probabilities against values
      const double scores = matmul_rate({8, 2, 2 * n, kHead}, {8, 2, kHead, n});
      const double values = matmul_rate({8, 2, 2 * n, n}, {8, 2, n, kHead});
      const double attention = 2 / (1 / scores + 1 / values);
      const double head = matmul_rate({156, kHidden}, {kHidden, kVocab});
      gemm_seconds_bound = step_gemm_seconds(kPadded, linear, attention, head);
      extras.push_back({"GFLOP/s 1024^3", square / 1e9, ""});
      extras.push_back({"GFLOP/s projections", linear / 1e9, ""});
      extras.push_back({"GFLOP/s attention", attention / 1e9, ""});
      extras.push_back({"GFLOP/s output layer", head / 1e9, ""});
      extras.push_back({"step products, padded", gemm_seconds_bound * 1e3, "ms"});
      extras.push_back({"step products, no padding", step_gemm_seconds(kUnpadded, linear, attention, head) * 1e3,
                        "ms"});
      return clock.seconds();
    },
    [](const Context&) -> std::string {
      return std::isfinite(gemm_seconds_bound) && gemm_seconds_bound > 0 ? "" : "no finite bound";
    },
});

// A decoding step's attention at batch 32 on the tiny PUMA preset's shapes (4 query heads, 2 key/value heads of 32):
// pwab's kernel (llama::decode_step_attention), which reads only each row's visible positions, against PyTorch's
// fused attention as transformers calls it (enable_gqa; on Debian's 1.13, which has none, two matmuls and a softmax),
// which reads the whole left-padded cache. Four layers' caches of 442 positions, 420 filled, taken in turn as a
// step does; row r's prompt is 90 + (97·r mod 289) tokens, plus 42 generated (PUMA's function prompts run 90 to 378
// tokens): 52% of the cache is padding. The limit beside it: the visible keys and values at the rate of a plain copy.
constexpr int64_t kDecodeRows = 32, kDecodeHeads = 4, kDecodeKv = 2, kDecodeWidth = 32, kDecodeCapacity = 442,
                  kDecodeTotal = 420, kDecodeLayers = 4;
struct DecodeInputs {
  torch::Tensor q, blocked;
  std::vector<torch::Tensor> k, v;  // per layer, narrowed to kDecodeTotal
  double visible_bytes = 0;
};
double decode_max_diff = -1;

DecodeInputs& decode_inputs() {
  static DecodeInputs in = [] {
    torch_init_threads(0);
    torch::manual_seed(3);
    DecodeInputs d;
    d.q = torch::randn({kDecodeRows, kDecodeHeads, 1, kDecodeWidth});
    for (int64_t l = 0; l < kDecodeLayers; ++l) {
      d.k.push_back(torch::randn({kDecodeRows, kDecodeKv, kDecodeCapacity, kDecodeWidth}).narrow(2, 0, kDecodeTotal));
      d.v.push_back(torch::randn({kDecodeRows, kDecodeKv, kDecodeCapacity, kDecodeWidth}).narrow(2, 0, kDecodeTotal));
    }
    d.blocked = torch::zeros({kDecodeRows, 1, 1, 1, kDecodeTotal});
    int64_t seen = 0;
    for (int64_t r = 0; r < kDecodeRows; ++r) {
      const int64_t visible = 90 + (97 * r) % 289 + 42;
      d.blocked[r].narrow(-1, 0, kDecodeTotal - visible).fill_(std::numeric_limits<float>::lowest());
      seen += visible;
    }
    d.visible_bytes = 2.0 * static_cast<double>(seen * kDecodeKv * kDecodeWidth) * sizeof(float);
    return d;
  }();
  return in;
}

//! What a user's PyTorch would run for the same step.
torch::Tensor decode_reference(const DecodeInputs& d, int64_t layer, double scale) {
  const auto& k = d.k[static_cast<std::size_t>(layer)];
  const auto& v = d.v[static_cast<std::size_t>(layer)];
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(d.q, k, v, d.blocked.view({kDecodeRows, 1, 1, kDecodeTotal}), 0.0, false,
                                          scale, /*enable_gqa=*/true);
#else
  const int64_t groups = kDecodeHeads / kDecodeKv;
  auto scores = torch::matmul(d.q.reshape({kDecodeRows, kDecodeKv, groups, kDecodeWidth}) * scale, k.transpose(-1, -2)) +
                d.blocked.view({kDecodeRows, 1, 1, kDecodeTotal});
  return torch::matmul(torch::softmax(scores, -1), v).view({kDecodeRows, kDecodeHeads, 1, kDecodeWidth});
#endif
}

const int kDecodeAttention = add({
    "llama/decode_attention",
    "a decoding step's attention at batch 32 (tiny preset's heads, 4 layers' caches of 420 positions, 52% padding), "
    "40 steps: pwab's kernel reading the visible positions; extras: PyTorch's fused attention on the same tensors "
    "(µs a layer), pwab's (µs a layer), and the visible keys and values at a copy's rate (the limit)",
    5,
    [](const Context&) { decode_inputs(); },
    [](const Context&, std::vector<Extra>& extras) {
      torch::NoGradGuard no_grad;
      auto& d = decode_inputs();
      const double scale = 1.0 / std::sqrt(static_cast<double>(kDecodeWidth));
      constexpr int kSteps = 40;
      auto run_all = [&](auto attend) {
        Stopwatch clock;
        for (int step = 0; step < kSteps; ++step)
          for (int64_t l = 0; l < kDecodeLayers; ++l) attend(l);
        return clock.seconds() / (kSteps * kDecodeLayers);
      };
      const double reference = run_all([&](int64_t l) { return decode_reference(d, l, scale); });
      const double ours = run_all([&](int64_t l) {
        return llama::decode_step_attention(d.q, d.k[static_cast<std::size_t>(l)], d.v[static_cast<std::size_t>(l)],
                                            d.blocked, scale);
      });
      // The limit: the visible keys and values moved at the rate of copying a buffer of the four caches' size.
      auto from = torch::randn({kDecodeLayers * 2, kDecodeRows, kDecodeKv, kDecodeCapacity, kDecodeWidth});
      auto to = torch::empty_like(from);
      to.copy_(from);
      Stopwatch copy_clock;
      for (int i = 0; i < 5; ++i) to.copy_(from);
      const double copy_rate = 2.0 * static_cast<double>(from.nbytes()) * 5 / copy_clock.seconds();
      decode_max_diff = 0;
      for (int64_t l = 0; l < kDecodeLayers; ++l) {
        auto a = llama::decode_step_attention(d.q, d.k[static_cast<std::size_t>(l)], d.v[static_cast<std::size_t>(l)],
                                              d.blocked, scale);
        decode_max_diff = std::max(decode_max_diff, (a - decode_reference(d, l, scale)).abs().max().item<double>());
      }
      extras.push_back({"PyTorch fused attention", reference * 1e6, "µs"});
      extras.push_back({"pwab kernel", ours * 1e6, "µs"});
      extras.push_back({"PyTorch / pwab", reference / ours, "×"});
      extras.push_back({"limit (visible bytes at copy rate)", d.visible_bytes / copy_rate * 1e6, "µs"});
      return ours * kSteps * kDecodeLayers;
    },
    [](const Context&) -> std::string {
      return decode_max_diff >= 0 && decode_max_diff < 1e-4
                 ? ""
                 : fmt::format("pwab's kernel differs from PyTorch's attention by {}", decode_max_diff);
    },
});

}  // namespace

// A whole decoding step on the tiny PUMA preset's decoder (hidden 128, 4 layers, 4 query / 2 key-value heads of 32,
// SwiGLU 344, a vocabulary of 2,000) after prompts of PUMA's lengths (row r: 90 + (97·r mod 289) tokens), at batch 1
// and 32: pwab's step without operator calls (LlamaModelImpl::decode_step(), the default) against the same step
// through libtorch's operators (set_step_kernels(false), what the model ran before). The limit beside each: the
// bytes a step must read (the weights once, each row's visible keys and values) at a copy's rate.
double step_max_diff = -1;

const int kDecodeStep = add({
    "llama/decode_step",
    "a decoding step of the tiny PUMA preset's decoder after prompts of PUMA's lengths, 48 steps each at batch 1 and "
    "32: pwab's step without operator calls; extras: the same steps through libtorch's operators (µs a step), pwab's "
    "(µs a step), and the bytes a step reads at a copy's rate (the limit)",
    3,
    [](const Context&) { torch_init_threads(0); },
    [](const Context&, std::vector<Extra>& extras) {
      torch::NoGradGuard no_grad;
      const llama::LlamaConfig c = decoder_config(2000, 128, 344, 4, 2);  // the tiny PUMA preset's decoder
      auto m = llama::create_model(c, 2);
      m->eval();
      constexpr int64_t kSteps = 48;
      double total = 0, weights = 0;
      for (const auto& [name, w] : m->checkpoint_weights())
        if (name != "model.embed_tokens.weight") weights += static_cast<double>(w.nbytes());
      auto from = torch::randn({8 << 20}), to = torch::empty_like(from);
      to.copy_(from);
      Stopwatch copy_clock;
      for (int i = 0; i < 5; ++i) to.copy_(from);
      const double copy_rate = 2.0 * static_cast<double>(from.nbytes()) * 5 / copy_clock.seconds();
      step_max_diff = 0;
      for (int64_t rows : {1, 32}) {
        std::vector<int64_t> flat, lengths;
        double visible = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = 90 + (97 * r) % 289;
          for (int64_t t = 0; t < n; ++t) flat.push_back((r * 7919 + t * 104729) % 1990 + 3);
          lengths.push_back(n);
          visible += static_cast<double>(n + kSteps / 2);
        }
        auto run = [&](bool kernels, torch::Tensor* last) {
          m->set_step_kernels(kernels);
          llama::KvCache cache(400 + kSteps);
          auto ids = torch::tensor(flat, torch::kInt64).view({1, -1});
          if (rows > 1)
            m->packed_prefill(ids, lengths, cache);
          else
            m->forward(ids, {}, &cache, true);
          Stopwatch clock;
          torch::Tensor logits;
          for (int64_t s = 0; s < kSteps; ++s)
            logits = m->forward((torch::arange(rows, torch::kInt64) * 13 + s * 7).remainder(2000).view({rows, 1}), {},
                                &cache, true);
          if (last) *last = logits;
          return clock.seconds() / kSteps;
        };
        torch::Tensor a, b;
        const double operators = run(false, &a), ours = run(true, &b);
        m->set_step_kernels(true);
        step_max_diff = std::max(step_max_diff, (a - b).abs().max().item<double>());
        total += ours * kSteps;
        const double bytes = weights + visible * 2.0 * c.num_hidden_layers * c.n_kv_heads() * c.head_width() * 4;
        const std::string at = fmt::format("batch {}: ", rows);
        extras.push_back({at + "libtorch operators", operators * 1e6, "µs"});
        extras.push_back({at + "pwab step", ours * 1e6, "µs"});
        extras.push_back({at + "operators / pwab", operators / ours, "×"});
        extras.push_back({at + "limit (bytes read at copy rate)", bytes / copy_rate * 1e6, "µs"});
      }
      return total;
    },
    [](const Context&) -> std::string {
      return step_max_diff >= 0 && step_max_diff < 1e-4
                 ? ""
                 : fmt::format("pwab's step differs from the operators' by {}", step_max_diff);
    },
});
