// The LLaMA decoder on the tiny fixture: logits equal the pure-Python reference (every stored dtype, sharded,
// llama3 rope scaling, tied embeddings), shapes, causal masking, KV-cache decoding, padding and positions, GQA,
// checkpoint round trips and errors; generation: greedy, beam search, sampling, allowed tokens.
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include <ATen/Parallel.h>

#include "core/error.h"
#include "core/sys.h"
#include "llama/generate.h"
#include "llama/model.h"
#include "llama_test_util.h"

namespace pwab::llama {
namespace {

namespace fs = std::filesystem;
namespace st = pwab::safetensors;
using namespace testing;

// Relative to the reference (at least 1). PyTorch 2.x's libtorch multiplies with MKL, Debian's with OpenBLAS: their
// sums run in different orders, and the largest difference seen, 2.14e-5 (tied embeddings, MKL), is under this.
constexpr double kTol = 5e-5;

TEST(LlamaModel, MatchesReferenceLogitsForEveryStoredDtypeAndShards) {
  for (const std::string name : {"f32", "f16", "bf16", "sharded"}) {
    auto model = load_fixture(name);
    EXPECT_EQ(model->dtype(), torch::kFloat32);
    for (std::size_t i = 0; i < expected()["sequences"].size(); ++i)
      EXPECT_LT(ref_diff(logits_of(*model, sequence(i)), expected_logits("logits", i)), kTol) << name << " seq " << i;
  }
}

TEST(LlamaModel, Llama3RopeScalingMatchesReference) {
  test::TempDir dir;
  test::copy_dir(fixture_dir("f32"), dir.path());
  auto config = LlamaConfig::from_file(dir / "config.json");
  const auto& s = expected()["llama3_rope_scaling"];
  config.rope_scaling.type = RopeScaling::kLlama3;
  config.rope_scaling.factor = s["factor"];
  config.rope_scaling.low_freq_factor = s["low_freq_factor"];
  config.rope_scaling.high_freq_factor = s["high_freq_factor"];
  config.rope_scaling.original_max_position_embeddings = s["original_max_position_embeddings"];
  config.write(dir / "config.json");
  auto model = load_model(dir.path(), quiet());
  for (std::size_t i = 0; i < expected()["sequences"].size(); ++i)
    EXPECT_LT(ref_diff(logits_of(*model, sequence(i)), expected_logits("logits_llama3", i)), kTol) << i;
  // and the scaling matters: the plain model's last logits differ
  auto plain = load_fixture();
  EXPECT_GT(max_diff(logits_of(*model, sequence(0)), logits_of(*plain, sequence(0))), 1e-3);
}

TEST(LlamaModel, TiedEmbeddingsMatchReference) {
  test::TempDir dir;
  auto config = LlamaConfig::from_file(fixture_dir("f32") / "config.json");
  config.tie_word_embeddings = true;
  config.write(dir / "config.json");
  auto tensors = fixture_tensors();
  std::erase_if(tensors, [](const st::TensorData& t) { return t.name == "lm_head.weight"; });
  st::write_file(dir / "model.safetensors", tensors);
  auto model = load_model(dir.path(), quiet());
  for (std::size_t i = 0; i < expected()["sequences"].size(); ++i)
    EXPECT_LT(ref_diff(logits_of(*model, sequence(i)), expected_logits("logits_tied", i)), kTol) << i;
  // saving a tied model writes no lm_head
  test::TempDir out;
  save_model(*model, out.path());
  EXPECT_EQ(st::File::open(out / "model.safetensors").find("lm_head.weight"), nullptr);
  EXPECT_LT(ref_diff(logits_of(*load_model(out.path(), quiet()), sequence(0)), expected_logits("logits_tied", 0)),
            kTol);
}

TEST(LlamaModel, ParameterNamesAreHuggingFaces) {
  auto model = load_fixture();
  std::set<std::string> names;
  for (const auto& p : model->named_parameters()) names.insert(p.key());
  std::set<std::string> file;
  for (const auto& n : st::TensorSet::open(fixture_dir("f32")).names()) file.insert(n);
  EXPECT_EQ(names, file);
  EXPECT_EQ(model->checkpoint_weights().size(), file.size());
}

TEST(LlamaModel, OutputShapes) {
  auto model = load_fixture();
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(0, 64, {3, 5}, torch::kInt64);
  EXPECT_EQ(model->forward(ids).sizes(), (std::vector<int64_t>{3, 5, 64}));
  EXPECT_EQ(model->forward(ids).scalar_type(), torch::kFloat32);
  EXPECT_EQ(model->forward(ids, {}, nullptr, true).sizes(), (std::vector<int64_t>{3, 1, 64}));
  EXPECT_EQ(model->hidden_states(ids).sizes(), (std::vector<int64_t>{3, 5, 32}));
  EXPECT_THROW(model->forward(torch::zeros({5}, torch::kInt64)), UsageError);
  EXPECT_THROW(model->forward(ids, torch::ones({3, 4})), UsageError);
  EXPECT_THROW(model->forward(torch::full({1, 2}, 64, torch::kInt64)), UsageError);  // outside the vocabulary
  EXPECT_THROW(model->forward(torch::full({1, 2}, -1, torch::kInt64)), UsageError);
}

TEST(LlamaModel, CausalMaskHidesLaterTokens) {
  auto model = load_fixture();
  auto a = sequence(3), b = a;
  b[6] = (b[6] + 17) % 64;
  auto la = logits_of(*model, a), lb = logits_of(*model, b);
  EXPECT_EQ(max_diff(la.narrow(0, 0, 6), lb.narrow(0, 0, 6)), 0.0);  // positions before the change: identical
  EXPECT_GT(max_diff(la.narrow(0, 6, 1), lb.narrow(0, 6, 1)), 1e-3);
}

TEST(LlamaModel, KvCacheDecodingEqualsFullForward) {
  auto model = load_fixture();
  torch::NoGradGuard no_grad;
  const auto seq = sequence(3);  // 11 tokens
  auto full = logits_of(*model, seq);
  KvCache cache(2);  // small reserve: the storage must grow on the way
  std::vector<torch::Tensor> parts;
  auto ids = ids_tensor(seq);
  parts.push_back(model->forward(ids.narrow(1, 0, 4), {}, &cache)[0]);
  for (int64_t t = 4; t < 8; ++t) parts.push_back(model->forward(ids.narrow(1, t, 1), {}, &cache)[0]);
  parts.push_back(model->forward(ids.narrow(1, 8, 3), {}, &cache)[0]);
  EXPECT_EQ(cache.length(), 11);
  EXPECT_LT(max_diff(torch::cat(parts), full), 1e-5);
}

//! Rows padded to one length: ids, mask.
std::pair<torch::Tensor, torch::Tensor> padded(const std::vector<std::vector<int32_t>>& rows, bool left) {
  std::size_t len = 0;
  for (const auto& r : rows) len = std::max(len, r.size());
  auto ids = torch::full({int64_t(rows.size()), int64_t(len)}, 0, torch::kInt64);
  auto mask = torch::zeros({int64_t(rows.size()), int64_t(len)}, torch::kInt64);
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      const int64_t c = left ? int64_t(len - rows[r].size() + i) : int64_t(i);
      ids[r][c] = rows[r][i];
      mask[r][c] = 1;
    }
  return {ids, mask};
}

TEST(LlamaModel, PaddingLeftOrRightGivesUnpaddedLogits) {
  auto model = load_fixture();
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int32_t>> rows{sequence(0), sequence(1), sequence(2), sequence(3)};
  for (bool left : {true, false}) {
    auto [ids, mask] = padded(rows, left);
    auto logits = model->forward(ids, mask);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const int64_t n = int64_t(rows[r].size()), start = left ? ids.size(1) - n : 0;
      EXPECT_LT(ref_diff(logits[r].narrow(0, start, n), expected_logits("logits", r)), kTol)
          << (left ? "left" : "right") << " row " << r;
    }
  }
}

TEST(LlamaModel, PaddedBatchDecodesIncrementally) {
  // Left-padded prompts in a cache, then one token per row per step: each row equals its own full forward.
  auto model = load_fixture();
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int32_t>> prompts{sequence(1), sequence(2), {5, 9}};
  auto [ids, mask] = padded(prompts, true);
  KvCache cache;
  model->forward(ids, mask, &cache);
  std::vector<std::vector<int32_t>> full = prompts;
  torch::Tensor last;
  for (int step = 0; step < 3; ++step) {
    auto next = torch::tensor(std::vector<int64_t>{11 + step, 30 + step, 60 - step}, torch::kInt64).view({3, 1});
    for (int r = 0; r < 3; ++r) full[r].push_back(int32_t(next[r][0].item<int64_t>()));
    last = model->forward(next, {}, &cache);
  }
  for (int r = 0; r < 3; ++r) {
    auto ref = logits_of(*model, full[r]);
    EXPECT_LT(max_diff(last[r][0], ref[int64_t(full[r].size()) - 1]), 1e-5) << r;
  }
}

TEST(LlamaModel, PackedPrefillLeavesTheLeftPaddedBatchsCache) {
  // Prompts of different lengths packed end to end: the same last logits as the left-padded batch, a cache of the
  // same layout (mask, positions, keys and values; padding slots zero in both), and decoding on from either gives
  // the same logits.
  auto model = load_fixture();
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int32_t>> prompts{sequence(1), {5, 9}, sequence(2), sequence(0)};
  auto [ids, mask] = padded(prompts, true);
  KvCache padded_cache(ids.size(1) + 4), packed_cache(ids.size(1) + 4);
  auto padded_logits = model->forward(ids, mask, &padded_cache, true);
  std::vector<int64_t> flat, lengths;
  for (const auto& p : prompts) {
    flat.insert(flat.end(), p.begin(), p.end());
    lengths.push_back(int64_t(p.size()));
  }
  auto packed_logits = model->packed_prefill(torch::tensor(flat, torch::kInt64).view({1, -1}), lengths, packed_cache);
  ASSERT_EQ(packed_logits.sizes(), padded_logits.sizes());
  EXPECT_LT(max_diff(packed_logits, padded_logits), 1e-5);
  ASSERT_EQ(packed_cache.length(), padded_cache.length());
  EXPECT_TRUE(torch::equal(packed_cache.mask(), padded_cache.mask()));
  EXPECT_TRUE(torch::equal(packed_cache.next_positions(), padded_cache.next_positions()));
  for (int step = 0; step < 3; ++step) {
    auto next = torch::tensor(std::vector<int64_t>{11 + step, 30 + step, 60 - step, 7}, torch::kInt64).view({4, 1});
    auto a = model->forward(next, {}, &padded_cache, true), b = model->forward(next, {}, &packed_cache, true);
    EXPECT_LT(max_diff(a, b), 1e-5) << "step " << step;
  }
  EXPECT_THROW(model->packed_prefill(torch::tensor(flat, torch::kInt64).view({1, -1}), lengths, packed_cache),
               UsageError);  // only into an empty cache
}

TEST(LlamaModel, LastTokensAloneGiveTheFullForwardsLastLogitsAndTheSameCache) {
  // Generation's prefill (forward with last_only, packed_prefill) runs the last layer for each row's last token
  // alone: the logits are the reference's at that token, and the cache holds every token's keys and values, as the
  // full forward's does.
  auto model = load_fixture();
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1), sequence(2), sequence(3)};
  auto [ids, mask] = padded(prompts, true);
  KvCache last_cache(ids.size(1) + 2), full_cache(ids.size(1) + 2);
  auto last = model->forward(ids, mask, &last_cache, true);
  auto full = model->forward(ids, mask, &full_cache);
  ASSERT_EQ(last.sizes(), (std::vector<int64_t>{4, 1, 64}));
  std::vector<int64_t> flat, lengths;
  for (std::size_t r = 0; r < prompts.size(); ++r) {
    const int64_t n = int64_t(prompts[r].size());
    EXPECT_LT(ref_diff(last[r], expected_logits("logits", r).narrow(0, n - 1, 1)), kTol) << "row " << r;
    EXPECT_LT(max_diff(last[r][0], full[r][ids.size(1) - 1]), 1e-5) << "row " << r;
    flat.insert(flat.end(), prompts[r].begin(), prompts[r].end());
    lengths.push_back(n);
  }
  KvCache packed_cache(ids.size(1) + 2);
  auto packed = model->packed_prefill(torch::tensor(flat, torch::kInt64).view({1, -1}), lengths, packed_cache);
  EXPECT_LT(max_diff(packed, last), 1e-5);
  // The real tokens' keys and values (the padding's slots differ: a packed prefill leaves them zero).
  const int64_t seen = full_cache.length();
  auto real = full_cache.mask().view({4, 1, seen, 1}).to(torch::kFloat32);
  for (std::size_t layer = 0; layer < std::size_t(model->config().num_hidden_layers); ++layer) {
    auto [k, v] = full_cache.step_buffers(layer);
    for (KvCache* c : {&last_cache, &packed_cache}) {
      auto [k2, v2] = c->step_buffers(layer);
      EXPECT_LT(max_diff(k2.narrow(2, 0, seen) * real, k.narrow(2, 0, seen) * real), 1e-5) << "layer " << layer;
      EXPECT_LT(max_diff(v2.narrow(2, 0, seen) * real, v.narrow(2, 0, seen) * real), 1e-5) << "layer " << layer;
    }
  }
  // One prompt (the batch-1 path, no padding) and a cacheless forward take the same road.
  auto one = torch::tensor(std::vector<int64_t>(prompts[2].begin(), prompts[2].end()), torch::kInt64).view({1, -1});
  EXPECT_LT(max_diff(model->forward(one, {}, nullptr, true)[0][0], last[2][0]), 1e-5);
}

TEST(LlamaModel, OneRowProjectionSplitBetweenThreadsIsTheLinearMap) {
  // One input row (decoding one sequence) splits the weight's rows between the threads; the numbers are torch's,
  // with threads or without, and a projection that autograd must see keeps its graph.
  Projection p(1024, 600, torch::TensorOptions().dtype(torch::kFloat32));
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(7);
    p->weight.normal_(0, 0.05);
  }
  auto x = torch::randn({1, 1, 1024});
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    torch::NoGradGuard no_grad;
    auto y = p->forward(x);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 1, 600}));
    EXPECT_LT(max_diff(y, torch::linear(x, p->weight)), 1e-5) << threads << " threads";
  }
  at::set_num_threads(2);
  auto y = p->forward(x);
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_TRUE(p->weight.grad().defined());
  at::set_num_threads(before);
}

TEST(LlamaModel, DecodeStepAttentionEqualsTheMatmulSoftmaxAndChecksItsInput) {
  // The decoding kernel on a narrowed cache buffer with left padding, against two matmuls and a softmax.
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  const int64_t rows = 3, heads = 4, kv = 2, head = 8, total = 6;
  auto q = torch::randn({rows, heads, 1, head});
  auto k = torch::randn({rows, kv, 10, head}).narrow(2, 0, total);
  auto v = torch::randn({rows, kv, 10, head}).narrow(2, 0, total);
  auto blocked = torch::zeros({rows, 1, 1, 1, total});
  blocked[0].narrow(-1, 0, 2).fill_(std::numeric_limits<float>::lowest());
  blocked[2].narrow(-1, 0, 5).fill_(std::numeric_limits<float>::lowest());
  const double scale = 1.0 / std::sqrt(double(head));
  auto got = decode_step_attention(q, k, v, blocked, scale);
  auto scores = torch::matmul(q.reshape({rows, kv, 2, head}), k.transpose(-1, -2)) * scale +
                blocked.view({rows, 1, 1, total});
  auto want = torch::matmul(torch::softmax(scores, -1), v).view({rows, heads, 1, head});
  EXPECT_LT(max_diff(got, want), 1e-5);
  EXPECT_THROW(decode_step_attention(q.to(torch::kFloat64), k, v, blocked, scale), UsageError);
  EXPECT_THROW(decode_step_attention(q.narrow(1, 0, 3), k, v, blocked, scale), UsageError);  // 3 heads over 2
  EXPECT_THROW(decode_step_attention(q, k, v, blocked.narrow(-1, 0, 5), scale), UsageError);
}

TEST(LlamaModel, GroupedQueryAttentionEqualsRepeatedHeads) {
  // The same model with 4 key/value heads, each a copy of the grouped head it serves (HF's repeat_kv).
  auto gqa = load_fixture();
  auto config = gqa->config();
  config.num_key_value_heads = config.num_attention_heads;
  LlamaModel mha(config, torch::TensorOptions());
  const int64_t head = config.head_width(), groups = 2;
  torch::NoGradGuard no_grad;
  auto source = gqa->checkpoint_weights();
  auto target = mha->checkpoint_weights();
  for (std::size_t i = 0; i < source.size(); ++i) {
    ASSERT_EQ(source[i].first, target[i].first);
    auto w = source[i].second;
    const auto& name = source[i].first;
    if (name.find("k_proj") != std::string::npos || name.find("v_proj") != std::string::npos)
      w = w.view({2, head, -1}).repeat_interleave(groups, 0).reshape({4 * head, -1});
    target[i].second.copy_(w);
  }
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_LT(ref_diff(logits_of(*mha, sequence(i)), expected_logits("logits", i)), kTol) << i;
  // Decoding one token a step, where the grouped model's query heads of a key/value head go in as that head's
  // queries (model.cpp's attend()), gives the repeated-heads model's logits, on a batch with left padding.
  auto [ids, mask] = padded({sequence(0), sequence(1)}, /*left=*/true);
  KvCache grouped_cache, repeated_cache;
  const int64_t prefix = ids.size(1) - 3;
  auto a = gqa->forward(ids.narrow(1, 0, prefix), mask.narrow(1, 0, prefix), &grouped_cache);
  auto b = mha->forward(ids.narrow(1, 0, prefix), mask.narrow(1, 0, prefix), &repeated_cache);
  EXPECT_LT(max_diff(a, b), 1e-5);
  for (int64_t t = prefix; t < ids.size(1); ++t) {
    a = gqa->forward(ids.narrow(1, t, 1), {}, &grouped_cache);
    b = mha->forward(ids.narrow(1, t, 1), {}, &repeated_cache);
    EXPECT_LT(max_diff(a, b), 1e-5) << t;
  }
}

TEST(LlamaModel, ComputesInBfloat16) {
  auto model = load_fixture("bf16", torch::kBFloat16);
  EXPECT_EQ(model->dtype(), torch::kBFloat16);
  auto logits = logits_of(*model, sequence(0));
  EXPECT_EQ(logits.scalar_type(), torch::kFloat32);
  const double err = ref_diff(logits, expected_logits("logits", 0));
  EXPECT_LT(err, 0.25);  // bf16 keeps ~3 significant digits
  EXPECT_GT(err, 0.0);
  // float16 matmuls do not exist on the CPU: a clear error instead of a libtorch failure mid-forward
  EXPECT_THROW(load_fixture("f16", torch::kFloat16), UsageError);
}

TEST(LlamaModel, SaveLoadRoundTrips) {
  auto model = load_fixture();
  const auto reference = logits_of(*model, sequence(3));
  test::TempDir dir;
  save_model(*model, dir.path());
  auto again = load_model(dir.path(), quiet());
  EXPECT_EQ(max_diff(logits_of(*again, sequence(3)), reference), 0.0);
  EXPECT_EQ(LlamaConfig::from_file(dir / "config.json").to_json(), model->config().to_json());

  // bfloat16 storage: the fixture's weights are bf16-exact, so nothing changes
  SaveOptions bf16;
  bf16.dtype = "bfloat16";
  save_model(*model, dir.path(), bf16);
  EXPECT_EQ(st::File::open(dir / "model.safetensors").at("model.norm.weight").dtype, st::Dtype::kBF16);
  EXPECT_EQ(LlamaConfig::from_file(dir / "config.json").torch_dtype, "bfloat16");
  EXPECT_EQ(max_diff(logits_of(*load_model(dir.path(), quiet()), sequence(3)), reference), 0.0);

  // sharded, replacing the single file
  SaveOptions shards;
  shards.max_shard_bytes = 20000;
  save_model(*model, dir.path(), shards);
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
  EXPECT_GT(st::TensorSet::open(dir.path()).files().size(), 2u);
  EXPECT_EQ(max_diff(logits_of(*load_model(dir.path(), quiet()), sequence(3)), reference), 0.0);
}

TEST(LlamaModel, FreshModelIsDeterministicAndSaves) {
  auto config = tiny_config(50);
  auto a = create_model(config, 7), b = create_model(config, 7), c = create_model(config, 8);
  const std::vector<int32_t> ids{1, 4, 9, 16};
  EXPECT_EQ(max_diff(logits_of(*a, ids), logits_of(*b, ids)), 0.0);
  EXPECT_GT(max_diff(logits_of(*a, ids), logits_of(*c, ids)), 0.0);
  auto std = a->checkpoint_weights()[1].second.std().item<double>();
  EXPECT_NEAR(std, config.initializer_range, 0.005);
  test::TempDir dir;
  save_model(*a, dir.path());
  EXPECT_EQ(max_diff(logits_of(*load_model(dir.path(), quiet()), ids), logits_of(*a, ids)), 0.0);
}

std::string load_error(const fs::path& dir) {
  try {
    load_model(dir, quiet());
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaModel, BadCheckpointsAreDataErrorsNamingTheTensor) {
  test::TempDir dir;
  auto write = [&](std::vector<st::TensorData> tensors) {
    test::copy_dir(fixture_dir("f32"), dir.path());
    st::write_file(dir / "model.safetensors", tensors);
  };
  auto tensors = fixture_tensors();
  auto without = tensors;
  std::erase_if(without, [](const st::TensorData& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  write(without);
  auto e = load_error(dir.path());
  EXPECT_NE(e.find("missing tensor 'model.layers.1.mlp.up_proj.weight'"), std::string::npos) << e;

  auto reshaped = tensors;
  for (auto& t : reshaped)
    if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {32, 16};
  write(reshaped);
  e = load_error(dir.path());
  EXPECT_NE(e.find("'model.layers.0.self_attn.k_proj.weight' is F32[32, 16]"), std::string::npos) << e;

  auto ints = tensors;
  for (auto& t : ints)
    if (t.name == "model.norm.weight") t.dtype = st::Dtype::kI32;
  write(ints);
  e = load_error(dir.path());
  EXPECT_NE(e.find("'model.norm.weight' is I32[32]"), std::string::npos) << e;

  auto extra = tensors;
  extra.push_back(st::TensorData::from_floats("model.layers.0.self_attn.q_proj.bias", {32}, std::vector<float>(32)));
  extra.push_back(
      st::TensorData::from_floats("model.layers.0.self_attn.rotary_emb.inv_freq", {4}, std::vector<float>(4)));
  write(extra);
  e = load_error(dir.path());
  EXPECT_NE(e.find("unexpected tensor 'model.layers.0.self_attn.q_proj.bias'"), std::string::npos) << e;
  EXPECT_EQ(e.find("inv_freq"), std::string::npos) << e;  // old checkpoints' rotary buffers are ignored

  write(tensors);
  test::write_text(dir / "config.json", R"({"model_type": "llama", "hidden_act": "gelu"})");
  e = load_error(dir.path());
  EXPECT_NE(e.find("config.json"), std::string::npos);
  EXPECT_NE(e.find("hidden_act"), std::string::npos) << e;
  fs::remove(dir / "config.json");
  EXPECT_NE(load_error(dir.path()).find("does not exist"), std::string::npos);
  EXPECT_NE(load_error(dir / "nope").find("does not exist"), std::string::npos);
  EXPECT_NE(load_error(fixture_dir("f32") / "config.json").find("not a directory"), std::string::npos);
}

// ---- generation --------------------------------------------------------------------------------------------------

//! Greedy tokens by full forwards without a cache: the reference for the cached decoders.
std::vector<int32_t> greedy_reference(LlamaModelImpl& model, std::vector<int32_t> ids, int n,
                                      const std::set<int64_t>& eos) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    auto logits = logits_of(model, ids);
    auto token = int32_t(logits[int64_t(ids.size()) - 1].argmax().item<int64_t>());
    if (eos.count(token)) break;
    out.push_back(token);
    ids.push_back(token);
  }
  return out;
}

//! Σ log p(token) of `tokens` (+ the EOS `eos_id` when ≥ 0) after `prompt`, by full forwards.
double sum_logprobs(LlamaModelImpl& model, std::vector<int32_t> prompt, const std::vector<int32_t>& tokens,
                    int64_t eos_id) {
  auto all = prompt;
  all.insert(all.end(), tokens.begin(), tokens.end());
  if (eos_id >= 0) all.push_back(int32_t(eos_id));
  auto logp = torch::log_softmax(logits_of(model, all).to(torch::kFloat64), -1);
  double s = 0;
  for (std::size_t i = prompt.size(); i < all.size(); ++i) s += logp[int64_t(i) - 1][all[i]].item<double>();
  return s;
}

TEST(Generate, GreedyEqualsFullForwardArgmaxInABatch) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 8;
  o.eos_token_ids = {2};
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(2), sequence(1)};
  auto out = generate(*model, prompts, o);
  ASSERT_EQ(out.size(), 3u);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(out[i].size(), 1u);
    EXPECT_EQ(out[i][0].tokens, greedy_reference(*model, prompts[i], 8, {2})) << i;
    const int64_t eos = out[i][0].eos ? 2 : -1;
    EXPECT_NEAR(out[i][0].score, sum_logprobs(*model, prompts[i], out[i][0].tokens, eos), 1e-4);
  }
}

TEST(Generate, TopLogprobsAreTheLargestOfTheFullForwardsDistribution) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 5;
  o.top_logprobs = 4;
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1)};
  for (double temperature : {0.0, 2.0}) {
    o.do_sample = temperature > 0;
    o.temperature = o.do_sample ? temperature : 1.0;
    o.top_k = 0;
    auto out = generate(*model, prompts, o);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const Generation& g = out[i][0];
      ASSERT_EQ(g.top_logprobs.size(), g.logprobs.size());
      auto all = prompts[i];
      all.insert(all.end(), g.tokens.begin(), g.tokens.end());
      auto logits = logits_of(*model, all).to(torch::kFloat64) / o.temperature;
      auto logp = torch::log_softmax(logits, -1);
      for (std::size_t t = 0; t < g.top_logprobs.size(); ++t) {
        auto [values, ids] = logp[int64_t(prompts[i].size() + t) - 1].topk(4);
        ASSERT_EQ(g.top_logprobs[t].size(), 4u);
        for (int64_t k = 0; k < 4; ++k) {
          EXPECT_EQ(g.top_logprobs[t][std::size_t(k)].first, ids[k].item<int64_t>()) << temperature << " " << t;
          EXPECT_NEAR(g.top_logprobs[t][std::size_t(k)].second, values[k].item<double>(), 1e-4);
        }
        // the drawn token's own log-probability is in the same distribution
        const int32_t drawn = t < g.tokens.size() ? g.tokens[t] : -1;
        if (drawn >= 0) {
          EXPECT_NEAR(g.logprobs[t], logp[int64_t(prompts[i].size() + t) - 1][drawn].item<double>(), 1e-4);
        }
        if (temperature == 0.0 && drawn >= 0) {
          EXPECT_EQ(g.top_logprobs[t][0].first, drawn);
        }
      }
    }
  }
  o.top_logprobs = -1;
  EXPECT_THROW(generate(*model, prompts, o), UsageError);
  o.top_logprobs = 2;
  o.num_beams = 2;
  o.do_sample = false;
  EXPECT_THROW(generate(*model, prompts, o), UsageError);
}

TEST(Generate, StopsAtEos) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 8;
  o.eos_token_ids = {63};  // never reached on this prompt: 8 tokens
  auto free_run = generate(*model, {sequence(0)}, o)[0][0];
  ASSERT_EQ(free_run.tokens.size(), 8u);
  EXPECT_FALSE(free_run.eos);
  o.eos_token_ids = {free_run.tokens[3]};
  auto stopped = generate(*model, {sequence(0)}, o)[0][0];
  EXPECT_TRUE(stopped.eos);
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), free_run.tokens[3]);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(free_run.tokens.begin(), first));
  o.max_new_tokens = 0;
  EXPECT_TRUE(generate(*model, {sequence(0)}, o)[0][0].tokens.empty());
  EXPECT_THROW(generate(*model, {{}}, o), UsageError);
}

TEST(Generate, GreedyEqualsBeamSearchWithOneBeam) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.eos_token_ids = {2, 5};
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1), sequence(3)};
  auto greedy = generate(*model, prompts, o);
  auto beam = beam_search(*model, prompts, o);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(beam[i].size(), 1u);
    EXPECT_EQ(beam[i][0].tokens, greedy[i][0].tokens) << i;
    EXPECT_EQ(beam[i][0].eos, greedy[i][0].eos);
  }
}

TEST(Generate, BeamSearchReturnsDistinctCandidatesOrderedByTheirScores) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.num_beams = 4;
  o.eos_token_ids = {2, 5, 9};
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(2)};
  auto out = generate(*model, prompts, o);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(out[i].size(), 4u);
    std::set<std::vector<int32_t>> distinct;
    for (std::size_t k = 0; k < out[i].size(); ++k) {
      const auto& g = out[i][k];
      distinct.insert(g.tokens);
      if (k > 0) {
        EXPECT_GE(out[i][k - 1].score, g.score);
      }
      // the score is the candidate's log-probability under the model, divided by its length
      int64_t eos = -1;
      if (g.eos) {
        // which EOS ended it is not reported: take the one that explains the score
        double best = 1e9;
        for (int64_t e : o.eos_token_ids) {
          double s = sum_logprobs(*model, prompts[i], g.tokens, e) / double(g.tokens.size() + 1);
          if (std::abs(s - g.score) < std::abs(best - g.score)) best = s, eos = e;
        }
      }
      const double len = double(g.tokens.size() + (g.eos ? 1 : 0));
      EXPECT_NEAR(g.score, sum_logprobs(*model, prompts[i], g.tokens, eos) / len, 1e-4) << i << "/" << k;
    }
    EXPECT_EQ(distinct.size(), 4u);
  }
  // the best beam is at least as likely (per token) as the greedy continuation
  o.num_beams = 1;
  auto greedy = generate(*model, prompts, o);
  const auto& g = greedy[0][0];
  double greedy_score = g.score / double(g.tokens.size() + (g.eos ? 1 : 0));
  EXPECT_GE(out[0][0].score, greedy_score - 1e-6);
}

TEST(Generate, BeamSampleReturnsTenDistinctReproducibleCandidates) {
  auto model = load_fixture();
  GenerateOptions o;  // PUMA's DPO sampling: 10 beams at temperature 1.5
  o.max_new_tokens = 8;
  o.num_beams = 10;
  o.do_sample = true;
  o.temperature = 1.5;
  o.seed = 42;
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1)};
  auto a = generate(*model, prompts, o);
  auto b = generate(*model, prompts, o);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(a[i].size(), 10u);
    std::set<std::vector<int32_t>> distinct;
    for (std::size_t k = 0; k < 10; ++k) {
      distinct.insert(a[i][k].tokens);
      EXPECT_EQ(a[i][k].tokens, b[i][k].tokens);
      if (k > 0) {
        EXPECT_GE(a[i][k - 1].score, a[i][k].score);
      }
    }
    EXPECT_EQ(distinct.size(), 10u);
  }
  o.seed = 43;
  auto c = generate(*model, prompts, o);
  bool differs = false;
  for (std::size_t k = 0; k < 10; ++k) differs = differs || c[0][k].tokens != a[0][k].tokens;
  EXPECT_TRUE(differs);
  // a prompt alone samples what it samples in a batch
  auto alone = generate(*model, {prompts[0]}, [&] { auto p = o; p.seed = 42; return p; }());
  for (std::size_t k = 0; k < 10; ++k) EXPECT_EQ(alone[0][k].tokens, a[0][k].tokens);
}

TEST(Generate, AllowedTokensConstrainEveryDecoderAndLeaveTheLogprobsTheModels) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.eos_token_ids = {2};
  const std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1)};
  const auto free_run = generate(*model, prompts, o);
  ASSERT_FALSE(free_run[0][0].tokens.empty());
  // prompt 0 may use tokens 10..29 except its free first choice; prompt 1 stays free
  std::vector<int32_t> allowed;
  for (int32_t t = 10; t < 30; ++t)
    if (t != free_run[0][0].tokens[0]) allowed.push_back(t);
  std::set<int32_t> ok(allowed.begin(), allowed.end());
  ok.insert(2);
  o.allowed_tokens = {allowed, {}};
  auto inside = [&](const std::vector<int32_t>& tokens) {
    return std::all_of(tokens.begin(), tokens.end(), [&](int32_t t) { return ok.count(t) > 0; });
  };
  const auto constrained = generate(*model, prompts, o);
  const Generation& g = constrained[0][0];
  ASSERT_FALSE(g.tokens.empty());
  EXPECT_TRUE(inside(g.tokens));
  EXPECT_EQ(constrained[1][0].tokens, free_run[1][0].tokens);
  // each step is the argmax of the full forward's logits over the allowed tokens and EOS, and the reported
  // log-probability is the unconstrained model's
  auto all = prompts[0];
  all.insert(all.end(), g.tokens.begin(), g.tokens.end());
  auto logp = torch::log_softmax(logits_of(*model, all).to(torch::kFloat64), -1);
  for (std::size_t t = 0; t < g.tokens.size(); ++t) {
    auto row = logp[int64_t(prompts[0].size() + t) - 1];
    int32_t best = -1;
    for (int32_t id : ok)
      if (best < 0 || row[id].item<double>() > row[best].item<double>()) best = id;
    EXPECT_EQ(g.tokens[t], best) << t;
    EXPECT_NEAR(g.logprobs[t], row[g.tokens[t]].item<double>(), 1e-4) << t;
  }
  // sampling draws only allowed tokens, whatever the seed
  o.do_sample = true;
  o.top_k = 0;
  o.temperature = 2.0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    o.seed = seed;
    EXPECT_TRUE(inside(generate(*model, prompts, o)[0][0].tokens)) << seed;
  }
  // beam search: every candidate
  o.do_sample = false;
  o.temperature = 1.0;
  o.num_beams = 3;
  const auto beams = generate(*model, prompts, o);
  ASSERT_EQ(beams[0].size(), 3u);
  for (const Generation& c : beams[0]) EXPECT_TRUE(inside(c.tokens));
  o.num_beams = 1;
  o.allowed_tokens = {allowed};  // one list for two prompts
  EXPECT_THROW(generate(*model, prompts, o), UsageError);
  o.allowed_tokens = {{5, 64}, {}};  // 64 is outside the fixture's 64-token vocabulary
  EXPECT_THROW(generate(*model, prompts, o), UsageError);
}

TEST(Generate, SamplingIsReproducibleAndFollowsTemperature) {
  auto model = load_fixture();
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.do_sample = true;
  o.top_k = 0;
  o.seed = 3;
  std::vector<std::vector<int32_t>> prompts{sequence(0), sequence(1), sequence(2)};
  auto a = generate(*model, prompts, o), b = generate(*model, prompts, o);
  for (std::size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(a[i][0].tokens, b[i][0].tokens);
  // a very low temperature samples the greedy tokens
  GenerateOptions cold = o;
  cold.temperature = 1e-4;
  GenerateOptions greedy;
  greedy.max_new_tokens = 6;
  auto g = generate(*model, prompts, greedy), s = generate(*model, prompts, cold);
  for (std::size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(s[i][0].tokens, g[i][0].tokens);
  // different seeds give different samples (on 3 × 6 tokens from a 64-token vocabulary)
  o.seed = 4;
  auto d = generate(*model, prompts, o);
  bool differs = false;
  for (std::size_t i = 0; i < prompts.size(); ++i) differs = differs || d[i][0].tokens != a[i][0].tokens;
  EXPECT_TRUE(differs);
  o.temperature = 0;
  EXPECT_THROW(generate(*model, prompts, o), UsageError);
}

}  // namespace
}  // namespace pwab::llama
