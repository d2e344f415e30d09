// The /v1/completions server of `pwab lm serve` (src/serve/completions.h) on loopback, over a stand-in model that
// reports what it was asked: OpenAI's request fields and answer shape, the logprobs object and vLLM's
// return_token_ids, n choices with their own draws, refusals in OpenAI's error shape, and the access rules. (The
// real model behind it is exercised end to end in test/cli/puma_cli_test.cpp.)
#include "serve/completions.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <fmt/format.h>

#include <mutex>
#include <nlohmann/json.hpp>

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

// Answers "<prompt>|<sample>|<temperature>" token by token: one id per character, log-probability -0.5 each.
class EchoModel final : public llm::ChatModel {
 public:
  llm::ChatResponse chat(const llm::ChatRequest& r) override {
    std::lock_guard lock(mu);
    asked.push_back(r);
    llm::ChatResponse out;
    const std::string text = fmt::format("{}|{}|{}", r.prompt.value_or("?"), r.sample, r.temperature.value_or(-1));
    out.message = llm::Message::assistant(text.substr(0, static_cast<std::size_t>(r.max_tokens.value_or(16))));
    out.finish_reason = "length";
    out.prompt_tokens = static_cast<int64_t>(r.prompt.value_or("").size());
    out.completion_tokens = static_cast<int64_t>(out.message.content.size());
    if (r.return_tokens) {
      llm::TokenTrace t;
      for (char c : *r.prompt) t.prompt_ids.push_back(static_cast<unsigned char>(c));
      for (char c : out.message.content) {
        t.completion_ids.push_back(static_cast<unsigned char>(c));
        t.logprobs.push_back(-0.5f);
      }
      out.tokens = std::move(t);
    }
    return out;
  }
  std::string describe() const override { return "echo"; }
  std::mutex mu;
  std::vector<llm::ChatRequest> asked;
};

struct Served {
  explicit Served(CompletionsOptions o = options()) : server(model, "tiny", o) { server.start(); }
  static CompletionsOptions options() {
    CompletionsOptions o;
    o.port = 0;
    return o;
  }
  httplib::Result post(const Json& body, httplib::Headers headers = {}) {
    httplib::Client c("127.0.0.1", server.port());
    return c.Post("/v1/completions", headers, body.dump(), "application/json");
  }
  EchoModel model;
  CompletionsServer server;
};

TEST(Completions, AnswersAsOpenAIWithTokenIdsAndLogprobs) {
  Served s;
  auto r = s.post({{"model", "tiny"}, {"prompt", "abc"}, {"max_tokens", 5}, {"temperature", 0.0}, {"logprobs", 0},
                   {"return_token_ids", true}, {"seed", 7}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  const Json& c = j["choices"][0];
  EXPECT_EQ(c["text"], "abc|0");
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(c["token_ids"], Json({'a', 'b', 'c', '|', '0'}));
  EXPECT_EQ(c["prompt_token_ids"], Json({'a', 'b', 'c'}));
  EXPECT_EQ(c["logprobs"]["tokens"][0], "token_id:97");
  EXPECT_EQ(c["logprobs"]["token_logprobs"].size(), 5u);
  EXPECT_EQ(c["logprobs"]["token_logprobs"][0], -0.5);
  EXPECT_EQ(c["logprobs"]["top_logprobs"][0]["token_id:97"], -0.5);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  ASSERT_EQ(s.model.asked.size(), 1u);
  EXPECT_TRUE(s.model.asked[0].return_tokens);
  EXPECT_EQ(s.model.asked[0].seed, 7);
  EXPECT_EQ(s.model.asked[0].temperature, 0.0);
}

TEST(Completions, DefaultsAndSeveralChoices) {
  Served s;
  auto r = s.post({{"prompt", {"xy"}}, {"n", 3}});  // no model (the one served), the prompt as a one-text list
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_TRUE(j["choices"][i]["logprobs"].is_null());
    EXPECT_FALSE(j["choices"][i].contains("token_ids"));
  }
  EXPECT_EQ(s.model.asked[2].sample, 2);  // each choice its own draws
  EXPECT_EQ(s.model.asked[0].temperature, 1.0);  // OpenAI's default
  EXPECT_EQ(s.model.asked[0].max_tokens, 16);
  EXPECT_FALSE(s.model.asked[0].return_tokens);
  httplib::Client c("127.0.0.1", s.server.port());
  EXPECT_EQ(Json::parse(c.Get("/v1/models")->body)["data"][0]["id"], "tiny");
  EXPECT_EQ(c.Get("/health")->status, 200);
}

TEST(Completions, RefusesWhatItCannotDoInOpenAIsShape) {
  Served s;
  auto refused = [&](const Json& body, int status) {
    auto r = s.post(body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << body.dump() << " " << r->body;
    Json j = Json::parse(r->body);
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  };
  refused({{"model", "other"}, {"prompt", "a"}}, 404);
  refused({{"max_tokens", 4}}, 400);                    // no prompt
  refused({{"prompt", {1, 2, 3}}}, 400);                // token ids
  refused({{"prompt", "a"}, {"stream", true}}, 400);
  refused({{"prompt", "a"}, {"stop", {"\n"}}}, 400);
  refused({{"prompt", "a"}, {"logprobs", 9}}, 400);
  refused({{"prompt", "a"}, {"max_tokens", 0}}, 400);
  refused({{"prompt", "a"}, {"frequency_penalty", 1}}, 400);
  httplib::Client c("127.0.0.1", s.server.port());
  EXPECT_EQ(c.Post("/v1/completions", "{not json", "application/json")->status, 400);
  EXPECT_EQ(c.Get("/v1/completions")->status, 405);
  EXPECT_EQ(c.Get("/nowhere")->status, 404);
  EXPECT_TRUE(s.model.asked.empty());  // nothing refused reached the model
}

TEST(Completions, KeepsTheAccessRules) {
  CompletionsOptions o = Served::options();
  o.access.token = "t";
  Served s(o);
  EXPECT_EQ(s.post({{"prompt", "a"}})->status, 401);
  EXPECT_EQ(s.post({{"prompt", "a"}}, {{"Authorization", "Bearer t"}})->status, 200);
  EXPECT_EQ(s.post({{"prompt", "a"}}, {{"Authorization", "Bearer t"}, {"Origin", "https://evil.example"}})->status, 403);
  CompletionsOptions open = Served::options();
  open.host = "0.0.0.0";
  EchoModel m;
  EXPECT_THROW(CompletionsServer(m, "x", open), UsageError);  // off loopback without a token
}

}  // namespace
}  // namespace pwab::serve
