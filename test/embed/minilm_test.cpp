// The MiniLM encoder on a tiny random BERT (test/fixtures/minilm/make_fixture.py): embeddings equal the reference
// forward pass, padding and batching change nothing, vectors are unit length, input past 512 tokens is truncated,
// and a bad model directory is a DataError naming the file. With PWAB_MINILM_DIR (or ../shared/models/
// all-MiniLM-L6-v2) the real model is checked too; PWAB_MINILM_BENCH=1 measures throughput at the real size.
#include "embed/minilm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/sys.h"
#include "core/torch_runtime.h"
#include "support/test_support.h"

namespace pwab::embed {
namespace {

namespace fs = std::filesystem;
namespace st = pwab::safetensors;

fs::path fixture_dir() { return test::fixture("minilm"); }

nlohmann::json expected() { return nlohmann::json::parse(test::read_text(fixture_dir() / "expected.json")); }

MiniLMOptions quiet(std::size_t batch_size = 32) {
  MiniLMOptions o;
  o.batch_size = batch_size;
  o.n_threads = -1;  // leave libtorch's thread count to the test runner
  return o;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
  return d;
}

double norm(const std::vector<float>& v) { return std::sqrt(dot(v, v)); }

//! Every tensor of the fixture model, as TensorData to rewrite (renamed, dropped, split into shards).
std::vector<st::TensorData> fixture_tensors() {
  auto f = st::File::open(fixture_dir() / "model.safetensors");
  std::vector<st::TensorData> out;
  for (const auto& t : f.tensors())
    out.push_back(
        {t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size())});
  return out;
}

//! A copy of the fixture directory whose files the test may change.
fs::path copy_fixture(const test::TempDir& dir, const std::string& name = "model") {
  fs::path d = dir / name;
  fs::create_directories(d);
  for (auto file : {"config.json", "model.safetensors", "vocab.txt"}) fs::copy_file(fixture_dir() / file, d / file);
  return d;
}

std::string load_error(const fs::path& dir) {
  try {
    MiniLMEmbedder::load(dir, quiet());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void set_config(const fs::path& dir, const std::string& key, const nlohmann::json& value) {
  auto config = nlohmann::json::parse(test::read_text(dir / "config.json"));
  config[key] = value;
  test::write_text(dir / "config.json", config.dump());
}

}  // namespace

TEST(MiniLM, LoadsTheFixtureDirectory) {
  auto model = MiniLMEmbedder::load(fixture_dir(), quiet());
  EXPECT_EQ(model->dim(), 32u);
  EXPECT_EQ(model->config().num_hidden_layers, 2);
  EXPECT_EQ(model->config().num_attention_heads, 4);
  EXPECT_EQ(model->config().intermediate_size, 64);
  EXPECT_EQ(model->options().max_length, 512u);
  const std::string name = model->name();
  ASSERT_EQ(name.rfind("minilm:minilm/32@", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("minilm:minilm/32@").size() + 8) << name;
  EXPECT_EQ(MiniLMEmbedder::load(fixture_dir(), quiet())->name(), name);  // stable
}

TEST(MiniLM, EmbeddingsMatchTheReferenceForwardPass) {
  auto e = expected()["embeddings"];
  auto texts = e["texts"].get<std::vector<std::string>>();
  auto ids = e["ids"].get<std::vector<std::vector<int32_t>>>();
  auto vectors = e["vectors"].get<std::vector<std::vector<float>>>();
  auto model = MiniLMEmbedder::load(fixture_dir(), quiet());
  for (std::size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(model->tokenizer().encode(texts[i]), ids[i]) << texts[i];
  auto got = model->embed(texts);
  ASSERT_EQ(got.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_LT(max_abs_diff(got[i], vectors[i]), 1e-5) << texts[i];
    EXPECT_NEAR(norm(got[i]), 1.0, 1e-5) << texts[i];
  }
  // The same from ids.
  auto from_ids = model->embed_ids(ids);
  for (std::size_t i = 0; i < texts.size(); ++i) EXPECT_LT(max_abs_diff(from_ids[i], got[i]), 1e-6);
}

TEST(MiniLM, PaddingAndBatchingDoNotChangeAnEmbedding) {
  auto texts = expected()["embeddings"]["texts"].get<std::vector<std::string>>();
  auto one_by_one = MiniLMEmbedder::load(fixture_dir(), quiet(1))->embed(texts);  // no padding at all
  for (auto [batch, tokens] : {std::pair<std::size_t, std::size_t>{2, 4096}, {3, 4096}, {32, 4096}, {32, 40}}) {
    auto options = quiet(batch);
    options.max_batch_tokens = tokens;  // 40: the longest texts go alone, the short ones in twos and threes
    auto batched = MiniLMEmbedder::load(fixture_dir(), options)->embed(texts);
    for (std::size_t i = 0; i < texts.size(); ++i)
      EXPECT_LT(max_abs_diff(batched[i], one_by_one[i]), 1e-5)
          << "batch " << batch << "/" << tokens << ": " << texts[i];
  }
  // A short text padded to a 512-token neighbour.
  auto model = MiniLMEmbedder::load(fixture_dir(), quiet());
  auto alone = model->embed({"ok"});
  auto padded = model->embed({expected()["long"]["text"].get<std::string>(), "ok"});
  EXPECT_LT(max_abs_diff(alone[0], padded[1]), 1e-5);
  // Results come back in input order whatever the length order.
  std::vector<std::string> reversed(texts.rbegin(), texts.rend());
  auto back = model->embed(reversed);
  for (std::size_t i = 0; i < texts.size(); ++i)
    EXPECT_LT(max_abs_diff(back[texts.size() - 1 - i], one_by_one[i]), 1e-5);
}

TEST(MiniLM, InputPast512TokensIsTruncated) {
  auto e = expected()["long"];
  auto model = MiniLMEmbedder::load(fixture_dir(), quiet());
  const auto text = e["text"].get<std::string>();
  auto ids = model->tokenizer().encode(text);
  ASSERT_EQ(ids.size(), 512u);
  EXPECT_EQ(ids, e["ids"].get<std::vector<int32_t>>());
  auto v = model->embed({text});
  EXPECT_LT(max_abs_diff(v[0], e["vector"].get<std::vector<float>>()), 1e-5);
  // Text after the cut does not matter.
  auto longer = model->embed({text + " battery battery battery"});
  EXPECT_LT(max_abs_diff(v[0], longer[0]), 1e-6);
  // A shorter limit is honoured, and ids past it are refused.
  MiniLMOptions o = quiet();
  o.max_length = 16;
  auto short_model = MiniLMEmbedder::load(fixture_dir(), o);
  EXPECT_EQ(short_model->tokenizer().encode(text).size(), 16u);
  EXPECT_THROW(short_model->embed_ids({ids}), UsageError);
  EXPECT_THROW(model->embed_ids({{2, 999999, 3}}), UsageError);
}

TEST(MiniLM, EdgeInputs) {
  auto model = MiniLMEmbedder::load(fixture_dir(), quiet());
  EXPECT_TRUE(model->embed({}).empty());
  auto v = model->embed({"", "   ", "\x01\x02"});
  for (const auto& x : v) EXPECT_NEAR(norm(x), 1.0, 1e-5);  // [CLS] [SEP] alone still has a direction
  EXPECT_LT(max_abs_diff(v[0], v[1]), 1e-6);
  EXPECT_NEAR(model->similarity("great battery life", "great battery life"), 1.0, 1e-5);
  double s = model->similarity("great battery life", "terrible headphones");
  EXPECT_GE(s, -1.0);
  EXPECT_LE(s, 1.0);
}

TEST(MiniLM, ConcurrentCallsAgree) {
  auto model = MiniLMEmbedder::load(fixture_dir(), quiet(2));
  auto texts = expected()["embeddings"]["texts"].get<std::vector<std::string>>();
  auto reference = model->embed(texts);
  std::vector<std::vector<std::vector<float>>> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) results[t] = model->embed(texts);
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results)
    for (std::size_t i = 0; i < texts.size(); ++i) EXPECT_LT(max_abs_diff(r[i], reference[i]), 1e-6);
}

TEST(MiniLM, BertPrefixAndShardedWeightsLoadTheSameModel) {
  test::TempDir tmp;
  auto reference = MiniLMEmbedder::load(fixture_dir(), quiet());
  auto texts = expected()["embeddings"]["texts"].get<std::vector<std::string>>();
  auto want = reference->embed(texts);
  auto hash_of = [](const std::string& name) { return name.substr(name.find('@')); };

  fs::path prefixed = copy_fixture(tmp, "prefixed");
  auto tensors = fixture_tensors();
  for (auto& t : tensors) t.name = "bert." + t.name;
  st::write_file(prefixed / "model.safetensors", tensors);
  auto a = MiniLMEmbedder::load(prefixed, quiet());
  EXPECT_EQ(a->name().rfind("minilm:prefixed/32@", 0), 0u) << a->name();
  EXPECT_EQ(hash_of(a->name()), hash_of(reference->name()));
  auto got = a->embed(texts);
  for (std::size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(got[i], want[i]);

  fs::path sharded = copy_fixture(tmp, "sharded");
  fs::remove(sharded / "model.safetensors");
  tensors = fixture_tensors();
  std::vector<st::TensorData> first, second;
  nlohmann::json map;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const char* shard = i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
    map[tensors[i].name] = shard;
    (i % 2 ? second : first).push_back(tensors[i]);
  }
  st::write_file(sharded / "model-00001-of-00002.safetensors", first);
  st::write_file(sharded / "model-00002-of-00002.safetensors", second);
  test::write_text(sharded / "model.safetensors.index.json", nlohmann::json{{"weight_map", map}}.dump());
  auto b = MiniLMEmbedder::load(sharded, quiet());
  EXPECT_EQ(hash_of(b->name()), hash_of(reference->name()));
  got = b->embed(texts);
  for (std::size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(got[i], want[i]);

  // Different weights, different name.
  fs::path changed = copy_fixture(tmp, "changed");
  tensors = fixture_tensors();
  for (auto& t : tensors)
    if (t.name == "encoder.layer.1.output.dense.bias") t.bytes[0] ^= 1;
  st::write_file(changed / "model.safetensors", tensors);
  EXPECT_NE(hash_of(MiniLMEmbedder::load(changed, quiet())->name()), hash_of(reference->name()));
}

TEST(MiniLM, BadModelDirectoriesAreDataErrorsNamingTheFile) {
  test::TempDir tmp;
  auto expect_error = [](const fs::path& dir, const std::string& file, const std::string& what) {
    std::string message = load_error(dir);
    EXPECT_NE(message.find(file), std::string::npos) << "want '" << file << "' in: " << message;
    EXPECT_NE(message.find(what), std::string::npos) << "want '" << what << "' in: " << message;
  };
  expect_error(tmp / "absent", "absent", "does not exist");
  test::write_text(tmp / "plain-file", "x");
  expect_error(tmp / "plain-file", "plain-file", "not a directory");

  fs::path d = copy_fixture(tmp, "no-config");
  fs::remove(d / "config.json");
  expect_error(d, "config.json", "does not exist");

  d = copy_fixture(tmp, "bad-json");
  test::write_text(d / "config.json", "{\"hidden_size\": ");
  expect_error(d, "config.json", "not valid JSON");

  d = copy_fixture(tmp, "bad-heads");
  set_config(d, "num_attention_heads", 5);
  expect_error(d, "config.json", "not a multiple of num_attention_heads 5");

  d = copy_fixture(tmp, "bad-hidden");
  set_config(d, "hidden_size", -3);
  expect_error(d, "config.json", "\"hidden_size\" must be a positive integer");

  d = copy_fixture(tmp, "roberta");
  set_config(d, "model_type", "roberta");
  expect_error(d, "config.json", "only \"bert\"");

  d = copy_fixture(tmp, "swish");
  set_config(d, "hidden_act", "swish");
  expect_error(d, "config.json", "unsupported \"hidden_act\" 'swish'");

  d = copy_fixture(tmp, "no-vocab");
  fs::remove(d / "vocab.txt");
  expect_error(d, "vocab.txt", "does not exist");

  d = copy_fixture(tmp, "vocab-no-unk");
  test::write_text(d / "vocab.txt", "[PAD]\n[CLS]\n[SEP]\nhello\n");
  expect_error(d, "vocab.txt", "no [UNK] token");

  d = copy_fixture(tmp, "small-vocab-size");
  set_config(d, "vocab_size", 10);
  expect_error(d, "vocab.txt", "more than config.json's vocab_size 10");

  d = copy_fixture(tmp, "no-weights");
  fs::remove(d / "model.safetensors");
  expect_error(d, "no-weights", "no model.safetensors or model.safetensors.index.json");

  d = copy_fixture(tmp, "truncated");
  std::string bytes = test::read_text(d / "model.safetensors");
  test::write_text(d / "model.safetensors", bytes.substr(0, bytes.size() / 2));
  expect_error(d, "model.safetensors", "out of range");

  d = copy_fixture(tmp, "missing-tensor");
  auto tensors = fixture_tensors();
  std::erase_if(tensors, [](const auto& t) { return t.name == "encoder.layer.1.output.dense.weight"; });
  st::write_file(d / "model.safetensors", tensors);
  expect_error(d, "model.safetensors", "missing tensor 'encoder.layer.1.output.dense.weight'");

  d = copy_fixture(tmp, "wrong-shape");
  set_config(d, "intermediate_size", 48);
  expect_error(d, "model.safetensors",
               "'encoder.layer.0.intermediate.dense.weight' is F32[64, 32], config.json implies shape [48, 32]");

  d = copy_fixture(tmp, "integer-weights");
  tensors = fixture_tensors();
  for (auto& t : tensors)
    if (t.name == "embeddings.LayerNorm.bias") t.dtype = st::Dtype::kI32;
  st::write_file(d / "model.safetensors", tensors);
  expect_error(d, "model.safetensors", "expected a floating-point dtype");

  d = copy_fixture(tmp, "not-bert");
  tensors = fixture_tensors();
  for (auto& t : tensors) t.name = "model." + t.name;
  st::write_file(d / "model.safetensors", tensors);
  expect_error(d, "model.safetensors", "not a BERT model");
}

TEST(MiniLM, TokenizerConfigCanMakeItCased) {
  test::TempDir tmp;
  fs::path d = copy_fixture(tmp, "cased");
  test::write_text(d / "tokenizer_config.json", R"({"do_lower_case": false})");
  auto model = MiniLMEmbedder::load(d, quiet());
  EXPECT_FALSE(model->tokenizer().options().lowercase);
  EXPECT_FALSE(model->tokenizer().options().strip_accents);
  EXPECT_EQ(model->tokenizer().tokenize("Hello"), (std::vector<std::string>{"[UNK]"}));
  const std::string cased_name = model->name(), uncased_name = MiniLMEmbedder::load(fixture_dir(), quiet())->name();
  EXPECT_NE(cased_name.substr(cased_name.find('@')), uncased_name.substr(uncased_name.find('@')));
}

// ---- the real model, when available ----------------------------------------------------------------------------

namespace {
fs::path real_model_dir() {
  if (const char* env = std::getenv("PWAB_MINILM_DIR"); env && *env) return env;
  return test::shared("models/all-MiniLM-L6-v2");
}
}  // namespace

TEST(MiniLMRealModel, AllMiniLML6V2) {
  fs::path dir = real_model_dir();
  if (!fs::exists(dir / "config.json")) GTEST_SKIP() << "no all-MiniLM-L6-v2 at " << dir << " (set PWAB_MINILM_DIR)";
  MiniLMOptions o;
  o.n_threads = -1;
  auto model = MiniLMEmbedder::load(dir, o);
  EXPECT_EQ(model->dim(), 384u);
  EXPECT_EQ(model->config().num_hidden_layers, 6);
  // bert-base-uncased ids: [CLS] hello , world ! [SEP]
  EXPECT_EQ(model->tokenizer().encode("Hello, world!"), (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102}));
  double close = model->similarity("The battery lasts all day.", "Battery life is excellent.");
  double far = model->similarity("The battery lasts all day.", "This coffee tastes burnt.");
  EXPECT_GT(close, far + 0.2) << close << " vs " << far;
  for (const auto& v : model->embed({"a", "a longer sentence about headphones"})) EXPECT_NEAR(norm(v), 1.0, 1e-5);
}

// ---- throughput (PWAB_MINILM_BENCH=1) --------------------------------------------------------------------------

namespace {

//! Review texts: the real ones under ../shared/realdata when present, generated ones otherwise.
std::vector<std::string> review_texts(std::size_t n) {
  std::vector<std::string> texts;
  for (auto source : {"ucsd_multiagent_human_worker", "current12_llm_agent_ecommerce", "agenticshop"}) {
    std::ifstream in(test::shared(std::string("realdata/") + source + "/reviews.jsonl"));
    std::string line;
    while (texts.size() < n && std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("text") && j["text"].is_string() && !j["text"].get<std::string>().empty())
        texts.push_back(j["text"].get<std::string>());
    }
  }
  std::mt19937 rng(7);
  const char* words[] = {"the", "battery", "sound", "is",    "great", "and", "it",    "works", "well", "but",
                         "the", "case",    "feels", "cheap", "after", "two", "weeks", "of",    "use",  "."};
  while (texts.size() < n) {
    std::string t;
    for (int w = 0; w < 60; ++w) t += std::string(w ? " " : "") + words[rng() % std::size(words)];
    texts.push_back(t);
  }
  return texts;
}

//! A random BERT with the given sizes whose vocabulary is the words of `texts` (so token counts are realistic).
fs::path random_model(const fs::path& dir, const std::vector<std::string>& texts, int64_t hidden, int64_t layers,
                      int64_t heads, int64_t inter, int64_t vocab_size) {
  fs::create_directories(dir);
  std::vector<std::string> vocab{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char c = 'a'; c <= 'z'; ++c) {
    vocab.push_back(std::string(1, c));
    vocab.push_back(std::string("##") + c);
  }
  WordPieceTokenizer basic(vocab);
  std::set<std::string> seen(vocab.begin(), vocab.end());
  for (const auto& t : texts)
    for (const auto& w : basic.basic_tokenize(t))
      if (static_cast<int64_t>(vocab.size()) < vocab_size && seen.insert(w).second) vocab.push_back(w);
  std::string vocab_txt;
  for (const auto& v : vocab) vocab_txt += v + "\n";
  test::write_text(dir / "vocab.txt", vocab_txt);
  nlohmann::json config = {
      {"model_type", "bert"},           {"hidden_size", hidden},      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},   {"intermediate_size", inter}, {"vocab_size", vocab_size},
      {"max_position_embeddings", 512}, {"type_vocab_size", 2},       {"layer_norm_eps", 1e-12}};
  test::write_text(dir / "config.json", config.dump());
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<st::TensorData> tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float mean = 0.0f) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = mean + normal(rng);
    tensors.push_back(st::TensorData::from_floats(name, std::move(shape), values));
  };
  add("embeddings.word_embeddings.weight", {vocab_size, hidden});
  add("embeddings.position_embeddings.weight", {512, hidden});
  add("embeddings.token_type_embeddings.weight", {2, hidden});
  add("embeddings.LayerNorm.weight", {hidden}, 1.0f);
  add("embeddings.LayerNorm.bias", {hidden});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    for (auto n : {"query", "key", "value"}) {
      add(p + "attention.self." + n + ".weight", {hidden, hidden});
      add(p + "attention.self." + n + ".bias", {hidden});
    }
    add(p + "attention.output.dense.weight", {hidden, hidden});
    add(p + "attention.output.dense.bias", {hidden});
    add(p + "attention.output.LayerNorm.weight", {hidden}, 1.0f);
    add(p + "attention.output.LayerNorm.bias", {hidden});
    add(p + "intermediate.dense.weight", {inter, hidden});
    add(p + "intermediate.dense.bias", {inter});
    add(p + "output.dense.weight", {hidden, inter});
    add(p + "output.dense.bias", {hidden});
    add(p + "output.LayerNorm.weight", {hidden}, 1.0f);
    add(p + "output.LayerNorm.bias", {hidden});
  }
  st::write_file(dir / "model.safetensors", tensors);
  return dir;
}

void measure(const std::string& label, const fs::path& dir, const std::vector<std::string>& texts, int threads,
             std::size_t batch, std::size_t batch_tokens = MiniLMOptions{}.max_batch_tokens) {
  MiniLMOptions o;
  o.n_threads = threads;
  o.batch_size = batch;
  o.max_batch_tokens = batch_tokens;
  Stopwatch load_clock;
  auto model = MiniLMEmbedder::load(dir, o);
  double load_s = load_clock.seconds();
  std::size_t tokens = 0;
  Stopwatch tokenize_clock;
  for (const auto& t : texts) tokens += model->tokenizer().encode(t).size();
  double tokenize_s = tokenize_clock.seconds();
  model->embed(std::vector<std::string>(texts.begin(), texts.begin() + std::min<std::size_t>(texts.size(), 32)));
  Stopwatch clock;
  auto v = model->embed(texts);
  double s = clock.seconds();
  std::printf(
      "[bench] %s: %zu texts (mean %.1f tokens), %d threads, batch %zu/%zu tokens: %.3f s, %.1f texts/s, "
      "%.0f tokens/s (load %.2f s, tokenization alone %.3f s)\n",
      label.c_str(), texts.size(), double(tokens) / texts.size(), threads, batch, batch_tokens, s, texts.size() / s,
      tokens / s, load_s, tokenize_s);
  EXPECT_EQ(v.size(), texts.size());
}

//! Fixed-shape input: `n` sequences of `length` ids each (no padding), to compare with other implementations.
void measure_fixed(const std::string& label, const fs::path& dir, std::size_t n, std::size_t length, int threads,
                   std::size_t batch) {
  MiniLMOptions o;
  o.n_threads = threads;
  o.batch_size = batch;
  auto model = MiniLMEmbedder::load(dir, o);
  std::mt19937 rng(3);
  std::vector<std::vector<int32_t>> ids(n);
  for (auto& seq : ids) {
    seq.push_back(model->tokenizer().cls_id());
    while (seq.size() + 1 < length)
      seq.push_back(static_cast<int32_t>(5 + rng() % (model->tokenizer().vocab_size() - 5)));
    seq.push_back(model->tokenizer().sep_id());
  }
  model->embed_ids(std::vector<std::vector<int32_t>>(ids.begin(), ids.begin() + std::min<std::size_t>(n, batch)));
  Stopwatch clock;
  model->embed_ids(ids);
  double s = clock.seconds();
  std::printf("[bench] %s: %zu x %zu tokens, %d threads, batch %zu/%zu tokens: %.3f s, %.1f texts/s, %.0f tokens/s\n",
              label.c_str(), n, length, threads, batch, o.max_batch_tokens, s, n / s, n * length / s);
}

}  // namespace

TEST(MiniLMBench, Throughput) {
  const char* env = std::getenv("PWAB_MINILM_BENCH");
  if (!env || std::string(env) != "1") GTEST_SKIP() << "set PWAB_MINILM_BENCH=1 to measure throughput";
  auto texts = review_texts(256);
  // The machine may be shared: the matmul rate measured alongside tells how much of it this run got.
  torch_init_threads(1);
  double gflops_1 = torch_matmul_gflops(1024, 4);
  torch_init_threads(2);
  double gflops_2 = torch_matmul_gflops(1024, 4);
  std::printf("[bench] 1024^3 matmul now: %.1f GFLOP/s on 1 thread, %.1f on 2\n", gflops_1, gflops_2);
  test::TempDir tmp;
  fs::path real = random_model(tmp / "minilm-l6-random", texts, 384, 6, 12, 1536, 30522);
  if (const char* sweep = std::getenv("PWAB_MINILM_BENCH_SWEEP"); sweep && *sweep) {
    // Batch shapes, interleaved over rounds so that load from other processes spreads evenly; best of 3.
    const std::vector<std::pair<std::size_t, std::size_t>> shapes = {
        {32, std::size_t(1) << 30}, {32, 4096}, {32, 2048}, {32, 1024}, {32, 512}, {32, 256}};
    std::vector<double> best(shapes.size(), 1e9);
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        MiniLMOptions o;
        o.n_threads = std::atoi(sweep);
        o.batch_size = shapes[i].first;
        o.max_batch_tokens = shapes[i].second;
        auto model = MiniLMEmbedder::load(real, o);
        Stopwatch clock;
        model->embed(texts);
        best[i] = std::min(best[i], clock.seconds());
      }
    }
    for (std::size_t i = 0; i < shapes.size(); ++i)
      std::printf("[bench] sweep, %s threads: batch %zu, max tokens %zu: best %.3f s, %.1f texts/s\n", sweep,
                  shapes[i].first, shapes[i].second, best[i], texts.size() / best[i]);
    return;
  }
  measure("tiny fixture model", fixture_dir(), texts, 2, 32);
  for (int threads : {1, 2}) measure("random all-MiniLM-L6-v2 sizes", real, texts, threads, 32);
  for (int threads : {1, 2}) measure_fixed("random all-MiniLM-L6-v2 sizes", real, 256, 53, threads, 32);
  if (fs::exists(real_model_dir() / "config.json")) measure("all-MiniLM-L6-v2", real_model_dir(), texts, 2, 32);
}

}  // namespace pwab::embed
