// LlamaConfig (config.json in and out, errors naming the file and field) and the torch-free sampling pieces on
// hand-made scores: warpers against hand-computed values, sampling frequencies, beam hypotheses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "llama/config.h"
#include "llama/sampling.h"
#include "support/test_support.h"

namespace pwab::llama {
namespace {

namespace fs = std::filesystem;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string error_of(const std::string& json) {
  try {
    LlamaConfig::from_json(json, "cfg.json");
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaConfig, ReadsTheFixtureConfig) {
  auto c = LlamaConfig::from_file(test::fixture("llama/f32/config.json"));
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.n_kv_heads(), 2);
  EXPECT_EQ(c.head_width(), 8);
  EXPECT_EQ(c.intermediate_size, 48);
  EXPECT_EQ(c.vocab_size, 64);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::kNone);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(c.pad_token_id, -1);  // null in the file
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(LlamaConfig::from_file(test::fixture("llama/bf16/config.json")).torch_dtype, "bfloat16");
}

TEST(LlamaConfig, DefaultsFollowTransformers) {
  auto c = LlamaConfig::from_json(R"({"hidden_size": 64, "num_attention_heads": 8})", "x");
  EXPECT_EQ(c.n_kv_heads(), 8);  // absent num_key_value_heads = no grouping
  EXPECT_EQ(c.head_width(), 8);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(LlamaConfig, Llama3ConfigParses) {
  auto c = LlamaConfig::from_json(R"({"vocab_size": 128256, "eos_token_id": [128001, 128009], "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192}, "num_key_value_heads": 8, "tie_word_embeddings": false})", "x");
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128009}));
  EXPECT_EQ(LlamaConfig::from_json(R"({"rope_scaling": {"type": "linear", "factor": 2.0}})", "x").rope_scaling.type,
            RopeScaling::kLinear);
}

TEST(LlamaConfig, RejectsWhatTheDecoderDoesNotImplement) {
  EXPECT_NE(error_of(R"({"model_type": "mistral"})").find("\"model_type\""), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_act": "gelu"})").find("SiLU"), std::string::npos);
  EXPECT_NE(error_of(R"({"attention_bias": true})").find("biases"), std::string::npos);
  EXPECT_NE(error_of(R"({"rope_scaling": {"type": "dynamic", "factor": 2.0}})").find("dynamic"), std::string::npos);
  EXPECT_NE(error_of(R"({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}})").find("yarn"), std::string::npos);
  EXPECT_NE(error_of(R"({"torch_dtype": "float8"})").find("float8"), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": -3})").find("\"hidden_size\""), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 30, "num_attention_heads": 4})").find("multiple"), std::string::npos);
  EXPECT_NE(error_of(R"({"num_attention_heads": 32, "num_key_value_heads": 5})").find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{oops").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"eos_token_id": "two"})").find("eos_token_id"), std::string::npos);
  EXPECT_NE(error_of("{}").size(), 1u);  // an empty object is a default LLaMA-2-7B config
  EXPECT_EQ(error_of("{}"), "");
  for (const std::string& e : {error_of(R"({"hidden_act": "relu"})"), error_of("{oops")})
    EXPECT_EQ(e.rfind("model config cfg.json: ", 0), 0u) << e;
  EXPECT_THROW(LlamaConfig::from_file("/nonexistent/config.json"), DataError);
}

TEST(LlamaConfig, WriteReadsBackTheSameConfig) {
  test::TempDir dir;
  LlamaConfig c = tiny_config(100);
  c.eos_token_ids = {2, 7};
  c.pad_token_id = 0;
  c.tie_word_embeddings = true;
  c.rope_theta = 500000.0;
  c.rope_scaling.type = RopeScaling::kLlama3;
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.original_max_position_embeddings = 256;
  c.torch_dtype = "bfloat16";
  c.write(dir / "config.json");
  auto r = LlamaConfig::from_file(dir / "config.json");
  EXPECT_EQ(r.to_json(), c.to_json());
  EXPECT_EQ(r.eos_token_ids, c.eos_token_ids);
  EXPECT_EQ(r.pad_token_id, 0);
  EXPECT_TRUE(r.tie_word_embeddings);
  EXPECT_EQ(r.rope_scaling.type, RopeScaling::kLlama3);
  EXPECT_EQ(r.n_kv_heads(), 2);
}

TEST(LlamaConfig, CountsParametersOfLlama2_7B) {
  LlamaConfig c;  // the defaults are LLaMA-2-7B's sizes
  EXPECT_EQ(c.n_parameters(), 6738415616);
}

// ---- sampling ------------------------------------------------------------------------------------------------------

TEST(Sampling, LogSoftmaxNormalises) {
  std::vector<float> row{1.0f, 2.0f, 3.0f, kNegInf};
  log_softmax_inplace(row);
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(row[0], 1.0 - std::log(z), 1e-6);
  EXPECT_NEAR(row[2], 3.0 - std::log(z), 1e-6);
  EXPECT_EQ(row[3], kNegInf);
}

TEST(Sampling, WarpersMatchHandComputedValues) {
  std::vector<float> s{0.0f, -1.0f, -2.0f, -3.0f, -1.0f};
  apply_warpers(s, {2.0, 0, 1.0});  // temperature only
  EXPECT_FLOAT_EQ(s[1], -0.5f);
  EXPECT_FLOAT_EQ(s[3], -1.5f);

  std::vector<float> k{0.0f, -1.0f, -2.0f, -3.0f, -1.0f};
  apply_warpers(k, {1.0, 2, 1.0});  // top-2: the second-best value ties, and ties stay (HF keeps >= kth)
  EXPECT_EQ(k[0], 0.0f);
  EXPECT_EQ(k[1], -1.0f);
  EXPECT_EQ(k[4], -1.0f);
  EXPECT_EQ(k[2], kNegInf);
  EXPECT_EQ(k[3], kNegInf);

  // probabilities 0.5, 0.25, 0.15, 0.1: top_p 0.7 keeps 0.5 + 0.25 (reaching 0.75), drops the rest
  std::vector<float> p{std::log(0.25f), std::log(0.5f), std::log(0.1f), std::log(0.15f)};
  apply_warpers(p, {1.0, 0, 0.7});
  EXPECT_NE(p[0], kNegInf);
  EXPECT_NE(p[1], kNegInf);
  EXPECT_EQ(p[2], kNegInf);
  EXPECT_EQ(p[3], kNegInf);
  // a top_p below the best token's probability still keeps that one token
  std::vector<float> one{std::log(0.25f), std::log(0.5f), std::log(0.1f), std::log(0.15f)};
  apply_warpers(one, {1.0, 0, 0.1});
  EXPECT_EQ(std::count(one.begin(), one.end(), kNegInf), 3);
  EXPECT_NE(one[1], kNegInf);
  EXPECT_THROW(apply_warpers(one, {0.0, 0, 1.0}), UsageError);
}

TEST(Sampling, SampleOneFollowsTheDistribution) {
  std::vector<float> s{std::log(0.6f), std::log(0.3f), std::log(0.1f), kNegInf};
  Rng rng(5);
  std::vector<int> counts(4, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[sample_one(s, rng)];
  EXPECT_NEAR(counts[0] / double(n), 0.6, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.1, 0.015);
  EXPECT_EQ(counts[3], 0);
  Rng a(9), b(9);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sample_one(s, a), sample_one(s, b));
}

TEST(Sampling, WithoutReplacementMatchesSuccessiveDraws) {
  // P(first = i, second = j) = p_i · p_j / (1 - p_i): check the pair frequencies of Gumbel-top-2.
  std::vector<double> p{0.5, 0.3, 0.2};
  std::vector<float> s;
  for (double v : p) s.push_back(static_cast<float>(std::log(v)));
  Rng rng(11);
  std::map<std::set<int64_t>, int> pairs;
  const int n = 30000;
  for (int i = 0; i < n; ++i) {
    auto d = sample_without_replacement(s, 2, rng);
    ASSERT_EQ(d.size(), 2u);
    ASSERT_NE(d[0], d[1]);
    EXPECT_GE(s[d[0]], s[d[1]]);  // returned best score first
    ++pairs[{d[0], d[1]}];
  }
  auto expect_pair = [&](int a, int b) {
    return p[a] * p[b] / (1 - p[a]) + p[b] * p[a] / (1 - p[b]);
  };
  auto freq = [&](int64_t a, int64_t b) { return pairs[std::set<int64_t>{a, b}] / double(n); };
  EXPECT_NEAR(freq(0, 1), expect_pair(0, 1), 0.015);
  EXPECT_NEAR(freq(0, 2), expect_pair(0, 2), 0.015);
  EXPECT_NEAR(freq(1, 2), expect_pair(1, 2), 0.015);
  std::vector<float> two{0.0f, kNegInf, 0.0f};
  EXPECT_EQ(sample_without_replacement(two, 3, rng).size(), 2u);  // -inf is never drawn
}

TEST(Sampling, TopKIndicesAndArgmaxBreakTiesByIndex) {
  std::vector<float> s{1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(top_k_indices(s, 3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(top_k_indices(s, 10).size(), 4u);
  EXPECT_EQ(argmax(s), 1);
}

TEST(BeamHypotheses, KeepsTheBestAndNormalisesByLength) {
  BeamHypotheses h(2, 1.0, true);
  h.add({1}, -2.0, 2, true);       // -1.0
  h.add({2, 3}, -1.5, 3, true);    // -0.5
  EXPECT_TRUE(h.is_done(0.0, 3));  // early stopping: two finished
  h.add({4}, -4.0, 1, true);       // -4.0: worse than both, dropped
  h.add({5, 6, 7}, -1.2, 4, false);  // -0.3: evicts -1.0
  auto s = h.sorted();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tokens, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_DOUBLE_EQ(s[0].score, -0.3);
  EXPECT_FALSE(s[0].eos);
  EXPECT_EQ(s[1].tokens, (std::vector<int32_t>{2, 3}));

  BeamHypotheses late(1, 1.0, false);
  late.add({1}, -1.0, 2, true);                 // -0.5
  EXPECT_FALSE(late.is_done(-0.8, 2));          // a running beam at -0.4 could still win
  EXPECT_TRUE(late.is_done(-3.0, 2));           // at -1.5 it cannot
}

TEST(LlamaConfig, NestingPastTheLimitIsADataErrorNotACrash) {
  const std::string deep = R"({"hidden_size": 64, "x": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  try {
    LlamaConfig::from_json(deep, "cfg.json");
    FAIL() << "accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("cfg.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pwab::llama
