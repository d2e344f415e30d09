// The /v1/completions and /v1/chat/completions server of `pwab lm serve` (src/serve/completions.h) on loopback,
// over a stand-in model that reports what it was asked: OpenAI's request fields and answer shape, the logprobs
// object and vLLM's return_token_ids, n choices with their own draws, the ChatML rendering of chats and the
// <tool_call> parsing of replies, refusals in OpenAI's error shape, and the access rules. (The real model behind
// it is exercised end to end in test/cli/puma_cli_test.cpp, and against the official openai client and
// transformers' chat template in test/ecosystem/test_openai_client.py.)
#include "serve/completions.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <fmt/format.h>

#include <mutex>
#include <nlohmann/json.hpp>

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

// k alternatives of a position as a stand-in model reports them: ids 200, 201, ... at -1, -2, ...
std::vector<std::pair<int32_t, float>> alternatives(int k) {
  std::vector<std::pair<int32_t, float>> out;
  for (int i = 0; i < k; ++i) out.emplace_back(200 + i, -1.0f - static_cast<float>(i));
  return out;
}

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
        t.top_logprobs.push_back(alternatives(r.top_logprobs));
      }
      if (r.top_logprobs == 0) t.top_logprobs.clear();
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
  httplib::Result chat(const Json& body) {
    httplib::Client c("127.0.0.1", server.port());
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
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
  EXPECT_EQ(c["logprobs"]["top_logprobs"][0], Json({{"token_id:97", -0.5}}));  // logprobs 0: the drawn token alone
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  ASSERT_EQ(s.model.asked.size(), 1u);
  EXPECT_TRUE(s.model.asked[0].return_tokens);
  EXPECT_EQ(s.model.asked[0].seed, 7);
  EXPECT_EQ(s.model.asked[0].temperature, 0.0);
  EXPECT_EQ(s.model.asked[0].top_logprobs, 0);
}

TEST(Completions, LogprobsKGivesTheKMostLikelyTokensBesideTheDrawnOne) {
  Served s;
  auto r = s.post({{"prompt", "ab"}, {"max_tokens", 2}, {"logprobs", 2}});
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  const Json& top = j["choices"][0]["logprobs"]["top_logprobs"];
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0], Json({{"token_id:200", -1.0}, {"token_id:201", -2.0}, {"token_id:97", -0.5}}));
  ASSERT_EQ(s.model.asked.size(), 1u);
  EXPECT_TRUE(s.model.asked[0].return_tokens);
  EXPECT_EQ(s.model.asked[0].top_logprobs, 2);
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
  EXPECT_FALSE(s.model.asked[0].prompt_words_only);
  httplib::Client c("127.0.0.1", s.server.port());
  EXPECT_EQ(Json::parse(c.Get("/v1/models")->body)["data"][0]["id"], "tiny");
  EXPECT_EQ(c.Get("/health")->status, 200);
}

// pwab's own field: the copy-constrained decoding the puma agent and DPO's candidates server ask for (the local
// model honouring it: test/puma/train_test.cpp LocalBackendAnswersRawCompletionsOnly) reaches every choice.
TEST(Completions, PromptWordsOnlyReachesTheModelForEveryChoice) {
  Served s;
  auto r = s.post({{"prompt", "red kettle"}, {"n", 2}, {"prompt_words_only", true}});
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(s.model.asked.size(), 2u);
  for (const llm::ChatRequest& asked : s.model.asked) EXPECT_TRUE(asked.prompt_words_only);
  ASSERT_EQ(s.post({{"prompt", "red kettle"}, {"prompt_words_only", false}})->status, 200);
  EXPECT_FALSE(s.model.asked.back().prompt_words_only);
  auto bad = s.post({{"prompt", "red kettle"}, {"prompt_words_only", "yes"}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("prompt_words_only"), std::string::npos) << bad->body;
  EXPECT_EQ(s.model.asked.size(), 3u);
}

// "top_k" (vLLM's field; DPO's candidates server is sent it): unset leaves the model's default, -1 (vLLM's "off")
// arrives as 0, on both routes; a value out of range is refused by name before the model is asked.
TEST(Completions, TopKReachesTheModelOnBothRoutes) {
  Served s;
  ASSERT_EQ(s.post({{"prompt", "red kettle"}, {"n", 2}, {"top_k", 7}})->status, 200);
  ASSERT_EQ(s.model.asked.size(), 2u);
  for (const llm::ChatRequest& asked : s.model.asked) EXPECT_EQ(asked.top_k, std::optional<int>(7));
  ASSERT_EQ(s.post({{"prompt", "red kettle"}, {"top_k", -1}})->status, 200);
  EXPECT_EQ(s.model.asked.back().top_k, std::optional<int>(0));
  ASSERT_EQ(s.post({{"prompt", "red kettle"}})->status, 200);
  EXPECT_FALSE(s.model.asked.back().top_k.has_value());
  auto chat = s.chat({{"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}, {"top_k", 3}});
  ASSERT_EQ(chat->status, 200) << chat->body;
  EXPECT_EQ(s.model.asked.back().top_k, std::optional<int>(3));
  for (const Json& bad_value : {Json(-2), Json(1.5), Json("many")}) {
    auto bad = s.post({{"prompt", "red kettle"}, {"top_k", bad_value}});
    EXPECT_EQ(bad->status, 400) << bad_value.dump();
    EXPECT_NE(bad->body.find("'top_k'"), std::string::npos) << bad->body;
    auto bad_chat = s.chat({{"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}, {"top_k", bad_value}});
    EXPECT_EQ(bad_chat->status, 400) << bad_value.dump();
  }
  EXPECT_EQ(s.model.asked.size(), 5u);
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

// Answers every request with a fixed reply text (what a chat model would write), with one token per byte.
class ScriptedModel final : public llm::ChatModel {
 public:
  explicit ScriptedModel(std::string reply, std::string finish = "stop") : reply(std::move(reply)), finish(std::move(finish)) {}
  llm::ChatResponse chat(const llm::ChatRequest& r) override {
    std::lock_guard lock(mu);
    asked.push_back(r);
    llm::ChatResponse out;
    out.message = llm::Message::assistant(reply);
    out.finish_reason = finish;
    out.prompt_tokens = 11;
    out.completion_tokens = static_cast<int64_t>(reply.size());
    if (r.return_tokens) {
      llm::TokenTrace t;
      t.prompt_ids = {1, 2, 3};
      for (char c : reply) {
        t.completion_ids.push_back(static_cast<unsigned char>(c));
        t.logprobs.push_back(-0.25f);
        if (r.top_logprobs > 0) t.top_logprobs.push_back(alternatives(r.top_logprobs));
      }
      out.tokens = std::move(t);
    }
    return out;
  }
  std::string describe() const override { return "scripted"; }
  std::string reply, finish;
  std::mutex mu;
  std::vector<llm::ChatRequest> asked;
};

struct ChatServed {
  explicit ChatServed(std::string reply, std::string finish = "stop")
      : model(std::move(reply), std::move(finish)), server(model, "tiny", Served::options()) {
    server.start();
  }
  httplib::Result chat(const Json& body) {
    httplib::Client c("127.0.0.1", server.port());
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
  }
  ScriptedModel model;
  CompletionsServer server;
};

const char* kSearchTool =
    R"([{"type": "function", "function": {"name": "search", "description": "Find products",)"
    R"( "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])";

TEST(ChatPrompt, RendersChatMLWithToolsAsTheTemplateDoes) {
  // The text test/ecosystem/tiny_models.py's CHAT_TEMPLATE renders for the same chat (transformers'
  // apply_chat_template, add_generation_prompt=True); test_openai_client.py checks the two agree on the real one.
  const std::string messages = R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Find a kettle"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "search", "arguments": "{\"query\": \"kettle\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "B01: red kettle"},
    {"role": "user", "content": [{"type": "text", "text": "thanks"}, {"type": "text", "text": "more?"}]}])";
  EXPECT_EQ(render_chat_prompt(messages, kSearchTool),
            "<|im_start|>system\nBe brief.\n\nYou may call these tools:\n<tools>\n"
            R"({"type": "function", "function": {"name": "search", "description": "Find products", "parameters": )"
            R"({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}})"
            "\n</tools>\nCall one as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.<|im_end|>\n"
            "<|im_start|>user\nFind a kettle<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"kettle\"}}\n"
            "</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nB01: red kettle\n</tool_response><|im_end|>\n"
            "<|im_start|>user\nthanks\nmore?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat_prompt(R"([{"role": "developer", "content": "S"}, {"role": "user", "content": "hi"}])", ""),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat_prompt(R"([{"role": "user", "content": "hi"}])", "[]"),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW(render_chat_prompt(R"([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}])", ""),
               UsageError);  // the template would drop it unseen
  EXPECT_THROW(render_chat_prompt(R"([{"role": "critic", "content": "a"}])", ""), UsageError);
  EXPECT_THROW(render_chat_prompt(R"([{"role": "user", "content": [{"type": "image_url"}]}])", ""), UsageError);
  EXPECT_THROW(render_chat_prompt("[]", ""), UsageError);
}

TEST(ChatPrompt, ParsesHermesToolCallsOutOfTheReply) {
  ParsedReply p = parse_tool_calls(
      "Let me look.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"red kettle\"}}\n</tool_call>"
      "<tool_call>{\"name\": \"respond\", \"arguments\": \"{\\\"content\\\": \\\"hi\\\"}\"}</tool_call>");
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.content, "Let me look.");
  EXPECT_EQ(p.tool_calls[0].name, "search");
  EXPECT_EQ(p.tool_calls[0].arguments_json, R"({"query":"red kettle"})");
  EXPECT_EQ(p.tool_calls[1].arguments_json, R"({"content": "hi"})");  // a string stays as written
  // Not a call: text that is no JSON object with a name, or a block cut off by max_tokens, stays as text.
  EXPECT_TRUE(parse_tool_calls("<tool_call>oops</tool_call>").tool_calls.empty());
  EXPECT_EQ(parse_tool_calls("<tool_call>oops</tool_call>").content, "<tool_call>oops</tool_call>");
  EXPECT_TRUE(parse_tool_calls("<tool_call>{\"name\": \"a\"").tool_calls.empty());
  EXPECT_EQ(parse_tool_calls("plain  ").content, "plain  ");
  ParsedReply bare = parse_tool_calls("<tool_call>{\"name\": \"stop\"}</tool_call>");
  ASSERT_EQ(bare.tool_calls.size(), 1u);
  EXPECT_EQ(bare.tool_calls[0].arguments_json, "{}");
}

TEST(ChatCompletions, AnswersToolCallsInOpenAIsShape) {
  ChatServed s("<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"kettle\"}}\n</tool_call>");
  auto r = s.chat({{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Find a kettle"}}}},
                   {"tools", Json::parse(kSearchTool)}, {"max_completion_tokens", 40}, {"temperature", 0},
                   {"seed", 3}, {"logprobs", true}, {"top_logprobs", 0}, {"return_token_ids", true},
                   {"parallel_tool_calls", false}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const Json& c = j["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const Json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "search");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()), Json({{"query", "kettle"}}));
  ASSERT_EQ(c["logprobs"]["content"].size(), s.model.reply.size());
  EXPECT_EQ(c["logprobs"]["content"][0]["token"], "token_id:60");  // '<'
  EXPECT_EQ(c["logprobs"]["content"][0]["logprob"], -0.25);
  EXPECT_EQ(c["logprobs"]["content"][0]["top_logprobs"], Json::array());
  EXPECT_EQ(c["token_ids"].size(), s.model.reply.size());
  EXPECT_EQ(c["prompt_token_ids"], Json({1, 2, 3}));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 11);
  ASSERT_EQ(s.model.asked.size(), 1u);
  const llm::ChatRequest& asked = s.model.asked[0];
  ASSERT_TRUE(asked.prompt);
  // The tools are rendered in the order the request gives their keys (this request's nlohmann::json sorted them).
  EXPECT_EQ(*asked.prompt, render_chat_prompt(R"([{"role": "user", "content": "Find a kettle"}])",
                                              Json::parse(kSearchTool).dump()));
  EXPECT_EQ(asked.max_tokens, 40);
  EXPECT_EQ(asked.temperature, 0.0);
  EXPECT_EQ(asked.seed, 3);
  EXPECT_TRUE(asked.return_tokens);
  // Without tools offered, the same reply is plain text.
  auto plain = s.chat({{"messages", {{{"role", "user"}, {"content", "Find a kettle"}}}}});
  ASSERT_EQ(plain->status, 200) << plain->body;
  const Json p = Json::parse(plain->body)["choices"][0];
  EXPECT_EQ(p["message"]["content"], s.model.reply);
  EXPECT_FALSE(p["message"].contains("tool_calls"));
  EXPECT_EQ(p["finish_reason"], "stop");
}

TEST(ChatCompletions, TopLogprobsListsTheMostLikelyTokensOfEachPosition) {
  ChatServed s("ok");
  auto r = s.chat({{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logprobs", true}, {"top_logprobs", 2}});
  ASSERT_EQ(r->status, 200) << r->body;
  const Json content = Json::parse(r->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[1]["token"], "token_id:107");  // 'k'
  EXPECT_EQ(content[1]["top_logprobs"],
            Json::parse(R"([{"token": "token_id:200", "logprob": -1.0, "bytes": null},
                            {"token": "token_id:201", "logprob": -2.0, "bytes": null}])"));
  EXPECT_EQ(s.model.asked[0].top_logprobs, 2);
  EXPECT_TRUE(s.model.asked[0].return_tokens);
}

TEST(ChatCompletions, TextRepliesStopTextsChoicesAndDefaults) {
  ChatServed s("Hello there. END of it", "length");
  auto r = s.chat({{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"n", 2}, {"stop", "END"}});
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there. ");  // cut before the stop text
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(s.model.asked[1].sample, 1);
  EXPECT_EQ(s.model.asked[0].max_tokens, 512);   // CompletionsOptions::chat_max_tokens
  EXPECT_EQ(s.model.asked[0].temperature, 1.0);  // OpenAI's default
  EXPECT_FALSE(s.model.asked[0].return_tokens);
  // Without a stop text the model's own finish reason stands; tool_choice "none" offers no tools.
  auto plain = s.chat({{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 8},
                       {"tools", Json::parse(kSearchTool)}, {"tool_choice", "none"}});
  ASSERT_EQ(plain->status, 200) << plain->body;
  EXPECT_EQ(Json::parse(plain->body)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(*s.model.asked.back().prompt, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatCompletions, RefusesWhatItCannotDoInOpenAIsShape) {
  ChatServed s("x");
  const Json hi = {{{"role", "user"}, {"content", "hi"}}};
  auto refused = [&](const Json& body, int status) {
    auto r = s.chat(body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << body.dump() << " " << r->body;
    Json j = Json::parse(r->body);
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  };
  refused({{"model", "other"}, {"messages", hi}}, 404);
  refused({{"max_tokens", 4}}, 400);  // no messages
  refused({{"messages", Json::array()}}, 400);
  refused({{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, 400);
  refused({{"messages", hi}, {"top_logprobs", 3}}, 400);  // without "logprobs": true
  refused({{"messages", hi}, {"top_logprobs", 21}, {"logprobs", true}}, 400);
  refused({{"messages", hi}, {"tool_choice", "required"}}, 400);
  refused({{"messages", hi}, {"stream", true}}, 400);
  refused({{"messages", hi}, {"stop", "x"}, {"logprobs", true}}, 400);
  refused({{"messages", hi}, {"max_tokens", 4}, {"max_completion_tokens", 5}}, 400);
  refused({{"messages", hi}, {"max_tokens", 0}}, 400);
  refused({{"messages", hi}, {"n", 0}}, 400);
  refused({{"messages", hi}, {"response_format", {{"type", "json_object"}}}}, 400);
  refused({{"messages", hi}, {"logit_bias", {{"1", 5}}}}, 400);
  httplib::Client c("127.0.0.1", s.server.port());
  EXPECT_EQ(c.Post("/v1/chat/completions", "[1", "application/json")->status, 400);
  EXPECT_EQ(c.Get("/v1/chat/completions")->status, 405);
  EXPECT_TRUE(s.model.asked.empty());  // nothing refused reached the model
}

}  // namespace
}  // namespace pwab::serve
