// OpenAIEmbedder against the loopback server: batching, order, normalization, empty texts, retries, cache.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "llm/ledger.h"
#include "llm/llm_test_util.h"
#include "llm/openai_embedder.h"
#include "llm/response_cache.h"
#include "support/test_support.h"

namespace pwab::llm {
namespace {

using test::OpenAITestServer;
using test::ScriptedReply;
using test::TempDir;
using namespace pwab::llm::testing;

std::vector<float> normalized(std::vector<float> v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
}

TEST(OpenAIEmbedder, BatchesKeepInputOrderAndNormalize) {
  OpenAITestServer server;
  Ledger ledger(PriceTable::builtin());
  OpenAIEmbedder embedder(make_endpoint(fast_config(server)), {"text-embedding-3-small", 8, 2}, nullptr,
                          CacheMode::kRecord, &ledger);
  std::vector<std::string> texts = {"red shoes", "blue hat", "green scarf", "a lamp", "a desk"};
  auto vectors = embedder.embed(texts);
  ASSERT_EQ(vectors.size(), 5u);
  for (std::size_t i = 0; i < texts.size(); ++i)
    expect_near(vectors[i], normalized(OpenAITestServer::default_embedding(texts[i])));
  auto got = server.requests();
  ASSERT_EQ(got.size(), 3u);  // 2 + 2 + 1
  auto body = nlohmann::json::parse(got[0].body);
  EXPECT_EQ(got[0].path, "/v1/embeddings");
  EXPECT_EQ(body["model"], "text-embedding-3-small");
  EXPECT_EQ(body["input"], nlohmann::json::array({"red shoes", "blue hat"}));
  EXPECT_EQ(body["dimensions"], 8);
  EXPECT_EQ(got[0].header("authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(ledger.run(Role::kOther).calls, 3);
  EXPECT_GT(ledger.run(Role::kOther).prompt_tokens, 0);
  EXPECT_EQ(embedder.name(), "openai:text-embedding-3-small/8");
  EXPECT_EQ(embedder.dim(), 8u);
  EXPECT_NEAR(embedder.similarity("red shoes", "red shoes"), 1.0, 1e-6);
}

TEST(OpenAIEmbedder, PlacesVectorsByTheirIndex) {
  OpenAITestServer server;
  OpenAIEmbedder embedder(make_endpoint(fast_config(server)), {"m", 0, 64});
  ScriptedReply reply;
  reply.body = R"({"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}],
                   "usage": {"prompt_tokens": 4}})";
  server.push_embeddings(reply);
  auto v = embedder.embed({"first", "second"});
  expect_near(v[0], {1, 0});
  expect_near(v[1], {0, 1});
  EXPECT_EQ(embedder.dim(), 2u);  // learnt from the reply
}

TEST(OpenAIEmbedder, EmptyTextGetsAZeroVectorWithoutARequest) {
  OpenAITestServer server;
  OpenAIEmbedder embedder(make_endpoint(fast_config(server)), {"m", 8, 64});
  auto v = embedder.embed({"", "  ", "words"});
  EXPECT_EQ(v[0], std::vector<float>(8, 0.0f));
  EXPECT_EQ(v[1], std::vector<float>(8, 0.0f));
  EXPECT_EQ(v[2].size(), 8u);
  ASSERT_EQ(server.n_requests(), 1u);
  EXPECT_EQ(nlohmann::json::parse(server.requests()[0].body)["input"], nlohmann::json::array({"words"}));
}

TEST(OpenAIEmbedder, RetriesAndFailsLikeChat) {
  OpenAITestServer server;
  OpenAIEmbedder embedder(make_endpoint(fast_config(server)), {"m", 0, 64});
  server.push_embeddings(ScriptedReply::error(503, "busy"));
  ScriptedReply short_reply = ScriptedReply::embeddings({{1, 0}});  // one vector for two inputs
  server.push_embeddings(short_reply);
  auto v = embedder.embed({"a", "b"});
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(server.n_requests(), 3u);

  server.set_embeddings_handler([](const test::ReceivedRequest&) { return ScriptedReply::error(500, "down"); });
  try {
    embedder.embed({"c"});
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("embedding model 'm'"), std::string::npos) << e.what();
    EXPECT_EQ(e.attempts(), 3);
  }
}

TEST(OpenAIEmbedder, DimensionMismatchIsAnInfraError) {
  OpenAITestServer server;
  OpenAIEmbedder embedder(make_endpoint(fast_config(server)), {"m", 4, 64});
  EXPECT_THROW(embedder.embed({"eight values come back"}), InfraError);
}

TEST(OpenAIEmbedder, CachePerTextReplaysWhateverTheBatching) {
  TempDir dir;
  std::vector<std::string> texts = {"one", "two", "three"};
  std::vector<std::vector<float>> recorded;
  {
    OpenAITestServer server;
    auto cache = std::make_shared<ResponseCache>(dir.path());
    OpenAIEmbedder embedder(make_endpoint(fast_config(server)), {"m", 0, 3}, cache, CacheMode::kRecord);
    recorded = embedder.embed(texts);
    EXPECT_EQ(cache->n_embedding(), 3u);
    embedder.embed({"two", "one"});
    EXPECT_EQ(server.n_requests(), 1u);  // both hits
  }
  auto cache = std::make_shared<ResponseCache>(dir.path(), true);
  Ledger ledger(PriceTable::builtin());
  OpenAIEmbedder replay(nullptr, {"m", 0, 1}, cache, CacheMode::kReplay, &ledger);
  auto again = replay.embed({"three", "one", "two"});
  expect_near(again[0], recorded[2]);
  expect_near(again[1], recorded[0]);
  expect_near(again[2], recorded[1]);
  EXPECT_EQ(ledger.run(Role::kOther).calls, 0);
  EXPECT_EQ(ledger.run(Role::kOther).cached_calls, 1);
  EXPECT_THROW(replay.embed({"four"}), ReplayMissError);
  // Another model is another key.
  OpenAIEmbedder other(nullptr, {"m2", 0, 1}, cache, CacheMode::kReplay);
  EXPECT_THROW(other.embed({"one"}), ReplayMissError);
}

TEST(OpenAIEmbedder, NeedsAnEndpointUnlessReplaying) {
  EXPECT_THROW(OpenAIEmbedder(nullptr, {}), UsageError);
  EXPECT_EQ(OpenAIEmbedder(nullptr, {}, std::make_shared<ResponseCache>(TempDir().path()), CacheMode::kReplay).dim(),
            1536u);
}

}  // namespace
}  // namespace pwab::llm
