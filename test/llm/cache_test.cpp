// The record/replay cache: keys, record then replay with the server gone, loud misses, no key in the files,
// concurrent writers, and durability across a kill.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "llm/http_chat_model.h"
#include "llm/llm_test_util.h"
#include "llm/response_cache.h"
#include "support/test_support.h"

namespace pwab::llm {
namespace {

using test::OpenAITestServer;
using test::ScriptedReply;
using test::TempDir;
using namespace pwab::llm::testing;

std::shared_ptr<ChatModel> http_model(const OpenAITestServer& server) {
  return std::make_shared<HttpChatModel>(make_endpoint(fast_config(server)));
}

TEST(CacheKey, CanonicalRequestIgnoresLayoutButNotContent) {
  ChatRequest a = tool_request();
  ChatRequest b = a;
  // Same tools, other key order and whitespace.
  b.tools_json = R"([{"function": {"parameters": {"required": ["query"], "properties": {"query": {"type": "string"}},
      "type": "object"}, "description": "Search products.", "name": "search_product_by_query"}, "type": "function"}])";
  EXPECT_EQ(canonical_request_json(a), canonical_request_json(b));
  EXPECT_EQ(cache_key(canonical_request_json(a)).size(), 32u);

  auto differs = [&](auto change) {
    ChatRequest c = a;
    change(c);
    return cache_key(canonical_request_json(c)) != cache_key(canonical_request_json(a));
  };
  EXPECT_TRUE(differs([](ChatRequest& c) { c.model = "gpt-4o"; }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.messages[1].content += " "; }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.temperature = 0.7; }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.temperature.reset(); }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.max_tokens = 100; }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.seed = 1; }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.tools_json.clear(); }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.tool_choice = "required"; }));
  EXPECT_TRUE(differs([](ChatRequest& c) { c.sample = 1; }));
  std::string canonical = canonical_request_json(a);
  EXPECT_EQ(canonical.find(kKey), std::string::npos);
  EXPECT_EQ(canonical.find("127.0.0.1"), std::string::npos);
}

TEST(CachedChatModel, RecordThenReplayWithTheServerStopped) {
  TempDir dir;
  std::vector<ChatResponse> recorded;
  ChatRequest first = tool_request();
  ChatRequest second = text_request();
  {
    OpenAITestServer server;
    auto cache = std::make_shared<ResponseCache>(dir.path() / "cache");
    CachedChatModel model(http_model(server), cache, CacheMode::kRecord);
    server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "red shoes"})", "call_7", 101, 12));
    server.push(ScriptedReply::text("Something for hiking, please.", 55, 8));
    recorded.push_back(model.chat(first));
    recorded.push_back(model.chat(second));
    // Asked again: answered from the cache, nothing sent.
    ChatResponse again = model.chat(first);
    EXPECT_TRUE(again.from_cache);
    EXPECT_EQ(server.n_requests(), 2u);
    EXPECT_EQ(model.n_hits(), 1);
    EXPECT_EQ(model.n_misses(), 2);
    EXPECT_EQ(cache->n_chat(), 2u);
    server.stop();
  }
  auto cache = std::make_shared<ResponseCache>(dir.path() / "cache", /*must_exist=*/true);
  CachedChatModel replay(nullptr, cache, CacheMode::kReplay);
  ChatResponse r1 = replay.chat(first);
  ChatResponse r2 = replay.chat(second);
  EXPECT_TRUE(r1.from_cache);
  EXPECT_EQ(r1.attempts, 0);
  ASSERT_EQ(r1.message.tool_calls.size(), 1u);
  EXPECT_EQ(r1.message.tool_calls[0].id, "call_7");
  EXPECT_EQ(r1.message.tool_calls[0].arguments_json, R"({"query": "red shoes"})");
  EXPECT_EQ(r1.prompt_tokens, 101);
  EXPECT_EQ(r1.completion_tokens, 12);
  EXPECT_EQ(r1.model, "gpt-4o-mini");
  EXPECT_EQ(r1.finish_reason, recorded[0].finish_reason);
  EXPECT_EQ(r2.message.content, "Something for hiking, please.");
  EXPECT_EQ(r2.prompt_tokens, 55);
}

TEST(CachedChatModel, ReplayMissFailsLoudly) {
  TempDir dir;
  {
    OpenAITestServer server;
    CachedChatModel model(http_model(server), std::make_shared<ResponseCache>(dir.path()), CacheMode::kRecord);
    server.push(ScriptedReply::text("recorded"));
    model.chat(text_request("recorded question"));
  }
  CachedChatModel replay(nullptr, std::make_shared<ResponseCache>(dir.path(), true), CacheMode::kReplay);
  EXPECT_EQ(replay.chat(text_request("recorded question")).message.content, "recorded");
  try {
    replay.chat(text_request("a question never recorded"));
    FAIL() << "expected ReplayMissError";
  } catch (const InfraError&) {
    FAIL() << "a replay miss must not look like a transient infrastructure error";
  } catch (const ReplayMissError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("--replay"), std::string::npos) << what;
    EXPECT_NE(what.find("gpt-4o-mini"), std::string::npos) << what;
    EXPECT_NE(what.find("a question never recorded"), std::string::npos) << what;
    EXPECT_NE(what.find(kCacheFile), std::string::npos) << what;
  }
  // Another sample of a recorded request is a miss too.
  ChatRequest other_sample = text_request("recorded question");
  other_sample.sample = 1;
  EXPECT_THROW(replay.chat(other_sample), ReplayMissError);
}

TEST(ResponseCache, ReplayWithoutACacheFileIsAUsageError) {
  TempDir dir;
  EXPECT_THROW(ResponseCache(dir.path() / "nothing-here", /*must_exist=*/true), UsageError);
  EXPECT_THROW(CachedChatModel(nullptr, std::make_shared<ResponseCache>(dir.path()), CacheMode::kRecord), UsageError);
}

TEST(ResponseCache, NotADatabaseNamesTheFile) {
  TempDir dir;
  test::write_text(dir / kCacheFile, std::string(4096, 'x'));
  try {
    ResponseCache cache(dir.path());
    FAIL() << "expected pwab::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / kCacheFile).string()), std::string::npos) << e.what();
  }
}

TEST(CachedChatModel, SamplesAtTemperatureAreCachedSideBySide) {
  TempDir dir;
  OpenAITestServer server;
  auto cache = std::make_shared<ResponseCache>(dir.path());
  CachedChatModel model(http_model(server), cache, CacheMode::kRecord);
  server.push(ScriptedReply::text("first sample"));
  server.push(ScriptedReply::text("second sample"));
  ChatRequest req = text_request();
  req.sample = 0;
  EXPECT_EQ(model.chat(req).message.content, "first sample");
  req.sample = 1;
  EXPECT_EQ(model.chat(req).message.content, "second sample");
  req.sample = 0;
  EXPECT_EQ(model.chat(req).message.content, "first sample");
  EXPECT_EQ(server.n_requests(), 2u);
  EXPECT_EQ(cache->n_chat(), 2u);
  // The sample index is not sent.
  EXPECT_EQ(server.requests()[0].body, server.requests()[1].body);
}

TEST(CachedChatModel, EndpointAndKeyAreNotPartOfTheKey) {
  TempDir dir;
  auto cache = std::make_shared<ResponseCache>(dir.path());
  OpenAITestServer a, b;
  {
    CachedChatModel model(http_model(a), cache, CacheMode::kRecord);
    a.push(ScriptedReply::text("from a"));
    model.chat(text_request());
  }
  EndpointConfig other = fast_config(b);
  other.api_key = ApiKey("sk-another-key");
  CachedChatModel model(std::make_shared<HttpChatModel>(make_endpoint(other)), cache, CacheMode::kRecord);
  EXPECT_EQ(model.chat(text_request()).message.content, "from a");
  EXPECT_EQ(b.n_requests(), 0u);
}

TEST(CachedChatModel, RefreshSendsAgainAndReplaces) {
  TempDir dir;
  OpenAITestServer server;
  auto cache = std::make_shared<ResponseCache>(dir.path());
  server.push(ScriptedReply::text("old"));
  server.push(ScriptedReply::text("new"));
  CachedChatModel(http_model(server), cache, CacheMode::kRecord).chat(text_request());
  CachedChatModel refresh(http_model(server), cache, CacheMode::kRefresh);
  EXPECT_EQ(refresh.chat(text_request()).message.content, "new");
  CachedChatModel replay(nullptr, cache, CacheMode::kReplay);
  EXPECT_EQ(replay.chat(text_request()).message.content, "new");
  EXPECT_EQ(cache->n_chat(), 1u);
}

TEST(CachedChatModel, InfraErrorsAreNotStoredInvalidRepliesAre) {
  TempDir dir;
  OpenAITestServer server;
  auto cache = std::make_shared<ResponseCache>(dir.path());
  CachedChatModel model(http_model(server), cache, CacheMode::kRecord);
  server.push(ScriptedReply::error(401, "bad key"));
  EXPECT_THROW(model.chat(text_request()), InfraError);
  EXPECT_EQ(cache->n_chat(), 0u);
  server.push(ScriptedReply::text("now it works"));
  EXPECT_EQ(model.chat(text_request()).message.content, "now it works");

  for (int i = 0; i < 3; ++i) server.push(ScriptedReply::tool_call("search_product_by_query", "{oops"));
  ChatResponse bad = model.chat(tool_request());
  EXPECT_EQ(bad.status, ReplyStatus::kInvalidToolArguments);
  CachedChatModel replay(nullptr, cache, CacheMode::kReplay);
  ChatResponse again = replay.chat(tool_request());
  EXPECT_EQ(again.status, ReplyStatus::kInvalidToolArguments);
  EXPECT_EQ(again.problem, bad.problem);
  EXPECT_EQ(again.prompt_tokens, bad.prompt_tokens);
}

TEST(ResponseCache, KeyNeverReachesTheFiles) {
  TempDir dir;
  OpenAITestServer server;
  {
    auto cache = std::make_shared<ResponseCache>(dir.path());
    CachedChatModel model(http_model(server), cache, CacheMode::kRecord);
    server.push(ScriptedReply::text("hello"));
    server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "q"})"));
    model.chat(text_request());
    model.chat(tool_request());
    // Read while the connection is open too (WAL and shm files exist).
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      EXPECT_EQ(test::read_text(entry.path()).find(kKey), std::string::npos) << entry.path();
  }
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++n_files;
    EXPECT_EQ(test::read_text(entry.path()).find(kKey), std::string::npos) << entry.path();
    EXPECT_EQ(test::read_text(entry.path()).find("SECRET"), std::string::npos) << entry.path();
  }
  EXPECT_GE(n_files, 1);
}

TEST(ResponseCache, ConcurrentWritersFromThreads) {
  TempDir dir;
  OpenAITestServer server;
  server.set_chat_handler([](const test::ReceivedRequest& r) {
    auto body = nlohmann::json::parse(r.body);
    return ScriptedReply::text("echo: " + body["messages"][1]["content"].get<std::string>());
  });
  EndpointConfig c = fast_config(server);
  c.max_in_flight = 8;
  auto cache = std::make_shared<ResponseCache>(dir.path());
  CachedChatModel model(std::make_shared<HttpChatModel>(make_endpoint(c)), cache, CacheMode::kRecord);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) model.chat(text_request("q" + std::to_string(t) + "-" + std::to_string(i)));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(cache->n_chat(), 200u);
  server.stop();
  CachedChatModel replay(nullptr, std::make_shared<ResponseCache>(dir.path(), true), CacheMode::kReplay);
  std::vector<std::thread> readers;
  std::atomic<int> right{0};
  for (int t = 0; t < 8; ++t)
    readers.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string q = "q" + std::to_string(t) + "-" + std::to_string(i);
        if (replay.chat(text_request(q)).message.content == "echo: " + q) ++right;
      }
    });
  for (auto& th : readers) th.join();
  EXPECT_EQ(right.load(), 200);
}

TEST(ResponseCache, SurvivesAKill) {
  TempDir dir;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child stores 50 responses and is killed without closing anything.
    ResponseCache cache(dir.path());
    for (int i = 0; i < 50; ++i) {
      std::string canonical = "{\"request\": " + std::to_string(i) + "}";
      cache.put_chat(cache_key(canonical), "m", canonical, R"({"message": {"role": "assistant", "content": "r"}})", 1,
                     1, false);
    }
    raise(SIGKILL);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ResponseCache cache(dir.path(), true);
  EXPECT_EQ(cache.n_chat(), 50u);
  std::string canonical = "{\"request\": 49}";
  EXPECT_TRUE(cache.get_chat(cache_key(canonical), canonical).has_value());
}

TEST(ResponseCache, ForeignFormatIsRefused) {
  TempDir dir;
  { ResponseCache cache(dir.path()); }
  EXPECT_NO_THROW(ResponseCache(dir.path(), true));  // a cache written by this build opens again
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / kCacheFile).c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = 'pwab-llm-cache/999' WHERE name = 'format'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  try {
    ResponseCache cache(dir.path());
    FAIL() << "expected pwab::Error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find((dir / kCacheFile).string()), std::string::npos) << what;
    EXPECT_NE(what.find("pwab-llm-cache/999"), std::string::npos) << what;
  }
}

TEST(CacheMode, Names) {
  EXPECT_EQ(parse_cache_mode("replay"), CacheMode::kReplay);
  EXPECT_EQ(to_string(CacheMode::kRefresh), "refresh");
  EXPECT_THROW(parse_cache_mode("sometimes"), UsageError);
}

}  // namespace
}  // namespace pwab::llm
