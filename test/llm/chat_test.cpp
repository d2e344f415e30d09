// HttpChatModel against the loopback OpenAI server: what is sent, what comes back, retries, timeouts,
// invalid tool arguments, the in-flight cap, and that the API key goes nowhere but the Authorization header.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/sys.h"
#include "llm/http_chat_model.h"
#include "llm/llm_test_util.h"
#include "llm/wire.h"

namespace pwab::llm {
namespace {

using json = nlohmann::json;
using test::OpenAITestServer;
using test::ScriptedReply;
using namespace pwab::llm::testing;

TEST(Wire, ARepliedDocumentNestedTooDeepIsAProblemNotACrash) {
  const std::string deep = R"({"choices": [{"message": {"role": "assistant", "content": )" +
                           std::string(100000, '[') + std::string(100000, ']') + "}}]}";
  ChatResponse out;
  EXPECT_NE(parse_chat_reply(deep, out).find("deeper than"), std::string::npos);
  EXPECT_NE(parse_completion_reply(deep, out).find("deeper than"), std::string::npos);
  EXPECT_FALSE(body_excerpt(deep, "").empty());  // an error reply that deep is shown as text
}

TEST(HttpChatModel, ToolCallRoundTripSendsToolsAndSampling) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "red running shoes"})", "call_abc"));

  ChatRequest req = tool_request();
  ChatResponse r = model.chat(req);
  EXPECT_EQ(r.status, ReplyStatus::kOk);
  EXPECT_EQ(r.message.role, "assistant");
  EXPECT_EQ(r.message.content, "");
  ASSERT_EQ(r.message.tool_calls.size(), 1u);
  EXPECT_EQ(r.message.tool_calls[0].id, "call_abc");
  EXPECT_EQ(r.message.tool_calls[0].name, "search_product_by_query");
  EXPECT_EQ(r.message.tool_calls[0].arguments_json, R"({"query": "red running shoes"})");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.model, "gpt-4o-mini");
  EXPECT_EQ(r.prompt_tokens, 13);
  EXPECT_EQ(r.completion_tokens, 9);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_FALSE(r.from_cache);

  auto got = server.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/v1/chat/completions");
  EXPECT_EQ(got[0].header("authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(got[0].header("content-type"), "application/json");
  json body = json::parse(got[0].body);
  EXPECT_EQ(body["model"], "gpt-4o-mini");
  EXPECT_EQ(body["tools"], json::parse(kSearchTool));
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["max_tokens"], 256);
  EXPECT_EQ(body["seed"], 2024);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "Find red running shoes for me.");

  // The next turn carries the assistant's tool call (content null) and the tool's result.
  req.messages.push_back(r.message);
  req.messages.push_back(Message::tool("call_abc", "['B0001: Red shoes']"));
  server.push(ScriptedReply::text("Here are some red running shoes."));
  ChatResponse r2 = model.chat(req);
  EXPECT_EQ(r2.message.content, "Here are some red running shoes.");
  EXPECT_TRUE(r2.message.tool_calls.empty());
  EXPECT_EQ(r2.finish_reason, "stop");
  json body2 = json::parse(server.requests().at(1).body);
  const json& assistant = body2["messages"][2];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_TRUE(assistant["content"].is_null());
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_abc");
  EXPECT_EQ(assistant["tool_calls"][0]["type"], "function");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "search_product_by_query");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"], R"({"query": "red running shoes"})");
  EXPECT_EQ(body2["messages"][3]["role"], "tool");
  EXPECT_EQ(body2["messages"][3]["tool_call_id"], "call_abc");
  EXPECT_EQ(body2["messages"][3]["content"], "['B0001: Red shoes']");
}

TEST(HttpChatModel, TextReplyWithoutToolsOrUnsetOptions) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::text("I'm looking for a gift for my niece.", 40, 9));
  ChatRequest req = text_request();
  req.temperature.reset();  // the API default, as the original's Reflection call
  ChatResponse r = model.chat(req);
  EXPECT_EQ(r.message.content, "I'm looking for a gift for my niece.");
  EXPECT_EQ(r.prompt_tokens, 40);
  EXPECT_EQ(r.completion_tokens, 9);
  json body = json::parse(server.requests().at(0).body);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("tool_choice"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_EQ(body["max_tokens"], 150);
}

TEST(HttpChatModel, ExtraBodyFieldsAndForcedToolChoice) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "x"})"));
  ChatRequest req = tool_request();
  req.tool_choice = R"({"type": "function", "function": {"name": "search_product_by_query"}})";
  req.extra_body_json = R"({"response_format": {"type": "text"}})";
  model.chat(req);
  json body = json::parse(server.requests().at(0).body);
  EXPECT_EQ(body["tool_choice"]["function"]["name"], "search_product_by_query");
  EXPECT_EQ(body["response_format"]["type"], "text");

  req.extra_body_json = R"({"model": "other"})";
  EXPECT_THROW(model.chat(req), UsageError);
  req.extra_body_json.clear();
  req.tools_json = "{not json";
  EXPECT_THROW(model.chat(req), UsageError);
  EXPECT_EQ(server.n_requests(), 1u);
}

TEST(HttpChatModel, RateLimitHonoursRetryAfter) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));  // backoff would be ~1 ms
  server.push(ScriptedReply::rate_limited("1"));
  server.push(ScriptedReply::text("ok"));
  Stopwatch clock;
  ChatResponse r = model.chat(text_request());
  double seconds = clock.seconds();
  EXPECT_EQ(r.message.content, "ok");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(seconds, 0.95);
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(server.n_requests(), 2u);
}

TEST(HttpChatModel, RetryAfterIsCappedByPolicy) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  c.retry.max_retry_after_s = 0.05;
  HttpChatModel model(make_endpoint(c));
  server.push(ScriptedReply::rate_limited("3600"));
  server.push(ScriptedReply::text("ok"));
  Stopwatch clock;
  EXPECT_EQ(model.chat(text_request()).message.content, "ok");
  EXPECT_LT(clock.seconds(), 2.0);
}

TEST(HttpChatModel, RetryAfterMillisecondsAndHttpDates) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  ScriptedReply ms = ScriptedReply::error(429, "slow down");
  ms.headers.emplace_back("retry-after-ms", "300");
  server.push(ms);
  server.push(ScriptedReply::rate_limited("Wed, 21 Oct 2015 07:28:00 GMT"));  // in the past: no wait
  server.push(ScriptedReply::text("ok"));
  Stopwatch clock;
  ChatResponse r = model.chat(text_request());
  EXPECT_EQ(r.attempts, 3);
  EXPECT_GE(clock.seconds(), 0.28);
  EXPECT_LT(clock.seconds(), 2.0);
}

TEST(HttpChatModel, ServerErrorsThenSuccessAreRetriedAndLogged) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  std::mutex mu;
  std::vector<std::string> lines;
  c.log = [&](const std::string& line) {
    std::lock_guard lock(mu);
    lines.push_back(line);
  };
  HttpChatModel model(make_endpoint(c));
  server.push(ScriptedReply::error(503, "The server is overloaded"));
  server.push(ScriptedReply::error(500, "Internal error"));
  server.push(ScriptedReply::text("fine"));
  ChatResponse r = model.chat(text_request());
  EXPECT_EQ(r.message.content, "fine");
  EXPECT_EQ(r.attempts, 3);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("HTTP 503: The server is overloaded"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("attempt 2 of 3"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("HTTP 500"), std::string::npos) << lines[1];
  for (const std::string& line : lines) EXPECT_EQ(line.find(kKey), std::string::npos);
}

TEST(HttpChatModel, UnusableSuccessBodyIsRetried) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  ScriptedReply truncated;
  truncated.body = R"({"choices": [{"message": {"role": "assis)";
  ScriptedReply no_choices;
  no_choices.body = R"({"choices": []})";
  server.push(truncated);
  server.push(no_choices);
  server.push(ScriptedReply::text("third time lucky"));
  ChatResponse r = model.chat(text_request());
  EXPECT_EQ(r.message.content, "third time lucky");
  EXPECT_EQ(r.attempts, 3);
}

TEST(HttpChatModel, RetriesExhaustedIsAnInfraError) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  for (int i = 0; i < 3; ++i) server.push(ScriptedReply::error(502, "Bad gateway"));
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 502);
    EXPECT_EQ(e.attempts(), 3);
    EXPECT_NE(what.find("gpt-4o-mini"), std::string::npos) << what;
    EXPECT_NE(what.find("after 3 attempts"), std::string::npos) << what;
    EXPECT_NE(what.find("HTTP 502: Bad gateway"), std::string::npos) << what;
    EXPECT_NE(what.find(server.base_url() + "/chat/completions"), std::string::npos) << what;
  }
  EXPECT_EQ(server.n_requests(), 3u);
}

TEST(HttpChatModel, ClientErrorFailsAtOnce) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::error(400, "This model's maximum context length is 128000 tokens."));
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_EQ(e.http_status(), 400);
    EXPECT_EQ(e.attempts(), 1);
    EXPECT_NE(std::string(e.what()).find("maximum context length"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.n_requests(), 1u);
}

TEST(HttpChatModel, StallPastTimeoutIsRetriedThenInfraError) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  c.timeout_s = 0.3;
  c.retry.max_attempts = 2;
  HttpChatModel model(make_endpoint(c));
  server.push(ScriptedReply::text("too late").after(10));
  server.push(ScriptedReply::text("too late").after(10));
  Stopwatch clock;
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_EQ(e.attempts(), 2);
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_LT(clock.seconds(), 5.0);
  EXPECT_EQ(server.n_requests(), 2u);
}

TEST(HttpChatModel, StallThenAnswerSucceeds) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  c.timeout_s = 0.3;
  HttpChatModel model(make_endpoint(c));
  server.push(ScriptedReply::text("too late").after(10));
  server.push(ScriptedReply::text("in time"));
  ChatResponse r = model.chat(text_request());
  EXPECT_EQ(r.message.content, "in time");
  EXPECT_EQ(r.attempts, 2);
}

TEST(HttpChatModel, ConnectionRefusedIsAnInfraError) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  server.stop();
  HttpChatModel model(make_endpoint(c));
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_EQ(e.attempts(), 3);
  }
}

TEST(HttpChatModel, MalformedToolArgumentsAreAskedAgainThenTheAgentsFailure) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));  // invalid_reply_attempts = 3
  for (int i = 0; i < 3; ++i) server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "red)"));
  ChatResponse r = model.chat(tool_request());  // no exception: not an infrastructure problem
  EXPECT_EQ(r.status, ReplyStatus::kInvalidToolArguments);
  EXPECT_NE(r.problem.find("search_product_by_query"), std::string::npos) << r.problem;
  EXPECT_NE(r.problem.find("not valid JSON"), std::string::npos) << r.problem;
  ASSERT_EQ(r.message.tool_calls.size(), 1u);
  EXPECT_EQ(r.message.tool_calls[0].arguments_json, R"({"query": "red)");
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.prompt_tokens, 3 * 13);  // every answered attempt is billed
  EXPECT_EQ(r.completion_tokens, 3 * 9);
  EXPECT_EQ(server.n_requests(), 3u);
  // The same request each time.
  auto got = server.requests();
  EXPECT_EQ(got[0].body, got[2].body);
}

TEST(HttpChatModel, MalformedThenValidToolArguments) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::tool_call("search_product_by_query", "[\"not an object\"]"));
  server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "red shoes"})"));
  ChatResponse r = model.chat(tool_request());
  EXPECT_EQ(r.status, ReplyStatus::kOk);
  EXPECT_EQ(r.message.tool_calls.at(0).arguments_json, R"({"query": "red shoes"})");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.prompt_tokens, 26);
}

TEST(HttpChatModel, UnknownToolNamePassesThrough) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::tool_call("buy_everything", "{}"));
  ChatResponse r = model.chat(tool_request());
  EXPECT_EQ(r.status, ReplyStatus::kOk);  // the environment answers "Unknown action", not the client
  EXPECT_EQ(r.message.tool_calls.at(0).name, "buy_everything");
}

TEST(HttpChatModel, KeyIsSentAsBearerButNeverShown) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  std::vector<std::string> lines;
  c.log = [&](const std::string& line) { lines.push_back(line); };
  HttpChatModel model(make_endpoint(c));
  // A server that echoes the key back, in an error body and in a transient one.
  server.push(ScriptedReply::error(503, std::string("overloaded; your key ") + kKey + " is fine"));
  server.push(ScriptedReply::error(401, std::string("Incorrect API key provided: ") + kKey + "."));
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 401);
    EXPECT_EQ(what.find(kKey), std::string::npos) << what;
    EXPECT_EQ(what.find("SECRET"), std::string::npos) << what;
    EXPECT_NE(what.find("Incorrect API key provided: [redacted]"), std::string::npos) << what;
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find(kKey), std::string::npos) << lines[0];
  for (const auto& req : server.requests()) {
    EXPECT_EQ(req.header("authorization"), std::string("Bearer ") + kKey);
    EXPECT_EQ(req.body.find(kKey), std::string::npos);
  }
  EXPECT_EQ(model.describe().find(kKey), std::string::npos);
  EXPECT_EQ(c.describe_json().find(kKey), std::string::npos);
}

// Credentials in the base URL's userinfo go out as curl's Basic authorization; a server that echoes its request
// headers in an error must not carry them into the error (and so into a record's `error` field), in any form.
TEST(HttpChatModel, UrlCredentialsAreRedactedInEveryForm) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  c.api_key = ApiKey();
  const std::string base = server.base_url();
  c.base_url = "http://alice:p%40ss-w0rd@" + base.substr(std::string("http://").size());
  const std::string b64 = "YWxpY2U6cEBzcy13MHJk";  // base64("alice:p@ss-w0rd")
  server.push(ScriptedReply::error(401, "bad credentials: Authorization: Basic " + b64 +
                                            " (alice:p%40ss-w0rd, alice:p@ss-w0rd, password p@ss-w0rd)"));
  HttpChatModel model(make_endpoint(c));
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    const std::string what = e.what();
    for (const std::string& secret : {b64, std::string("p%40ss-w0rd"), std::string("p@ss-w0rd")})
      EXPECT_EQ(what.find(secret), std::string::npos) << secret << " in " << what;
    EXPECT_NE(what.find("Basic [redacted]"), std::string::npos) << what;
  }
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].header("authorization"), "Basic " + b64);  // what curl sent: the form redacted
  EXPECT_EQ(redact_secrets("x", endpoint_secrets(c)), "x");
}

TEST(HttpChatModel, NoAuthorizationHeaderWithoutKey) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  c.api_key = ApiKey();
  HttpChatModel model(make_endpoint(c));
  server.push(ScriptedReply::text("local model"));
  model.chat(text_request());
  EXPECT_EQ(server.requests().at(0).header("authorization"), "");
}

TEST(HttpChatModel, CredentialsInTheUrlAreNotShown) {
  OpenAITestServer server;
  EndpointConfig c = fast_config(server);
  c.base_url = "http://alice:hunter2@127.0.0.1:" + std::to_string(server.port()) + "/v1";
  HttpChatModel model(make_endpoint(c));
  server.push(ScriptedReply::error(404, "no such model"));
  try {
    model.chat(text_request());
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model.describe().find("hunter2"), std::string::npos);
  EXPECT_EQ(c.describe_json().find("hunter2"), std::string::npos);
}

TEST(HttpChatModel, InFlightCapHoldsAcrossThreads) {
  OpenAITestServer server;
  server.set_chat_handler([](const test::ReceivedRequest&) { return ScriptedReply::text("ok").after(0.05); });
  EndpointConfig c = fast_config(server);
  c.max_in_flight = 2;
  auto endpoint = make_endpoint(c);
  HttpChatModel model(endpoint);
  std::atomic<int> ok{0};
  Stopwatch clock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2; ++i)
        if (model.chat(text_request("thread " + std::to_string(t))).message.content == "ok") ++ok;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 16);
  EXPECT_EQ(server.n_requests(), 16u);
  EXPECT_LE(server.max_in_flight(), 2);
  EXPECT_GE(server.max_in_flight(), 1);
  EXPECT_GE(clock.seconds(), 16 / 2 * 0.05 * 0.9);  // at most two at a time
}

TEST(HttpChatModel, ManyThreadsWithoutCapRunConcurrently) {
  OpenAITestServer server;
  server.set_chat_handler([](const test::ReceivedRequest&) { return ScriptedReply::text("ok").after(0.2); });
  EndpointConfig c = fast_config(server);
  c.max_in_flight = 8;
  HttpChatModel model(make_endpoint(c));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { model.chat(text_request()); });
  for (auto& th : threads) th.join();
  EXPECT_GE(server.max_in_flight(), 2);  // the cap is what limited the previous test
}

TEST(ChatRequest, CheckToolArguments) {
  Message m = Message::assistant("");
  m.tool_calls.push_back({"c1", "search_product_by_query", R"({"query": "x"})"});
  EXPECT_EQ(check_tool_arguments(m), "");
  m.tool_calls.push_back({"c2", "stop", ""});
  EXPECT_NE(check_tool_arguments(m).find("'stop': arguments are not valid JSON"), std::string::npos);
  m.tool_calls.back().arguments_json = "42";
  EXPECT_NE(check_tool_arguments(m).find("not a JSON object"), std::string::npos);
}

TEST(ChatRequest, ReplyStatusNames) {
  EXPECT_EQ(to_string(ReplyStatus::kInvalidToolArguments), "invalid_tool_arguments");
  EXPECT_EQ(parse_reply_status("ok"), ReplyStatus::kOk);
  EXPECT_EQ(parse_reply_status("invalid_tool_arguments"), ReplyStatus::kInvalidToolArguments);
  EXPECT_THROW(parse_reply_status("bogus"), DataError);
}

TEST(HttpChatModel, RawTextCompletionGoesToCompletionsWithThePromptVerbatim) {
  OpenAITestServer server;
  HttpChatModel model(make_endpoint(fast_config(server)));
  server.push(ScriptedReply::completion("wireless earbuds with long battery life", 40, 8));

  ChatRequest req;
  req.model = "puma-lora";
  req.prompt = "### Instruction:find earbuds\n  \nMemory: none\n\nTool: search_product_by_query\n\n### Tool Parameter:\n";
  req.temperature = 0.0;
  req.max_tokens = 256;
  req.stop = {"</s>"};
  ChatResponse r = model.chat(req);
  EXPECT_EQ(r.status, ReplyStatus::kOk);
  EXPECT_EQ(r.message.role, "assistant");
  EXPECT_EQ(r.message.content, "wireless earbuds with long battery life");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.prompt_tokens, 40);
  EXPECT_EQ(r.completion_tokens, 8);

  auto got = server.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/v1/completions");
  json body = json::parse(got[0].body);
  EXPECT_EQ(body["prompt"], *req.prompt);
  EXPECT_FALSE(body.contains("messages"));
  EXPECT_EQ(body["stop"], json::array({"</s>"}));
  EXPECT_EQ(body["max_tokens"], 256);

  // A completions body without text is an unusable reply, not a crash (retried, then an InfraError).
  ChatRequest bad = req;
  for (int i = 0; i < 4; ++i) server.push(ScriptedReply::text("a chat reply where a completion was expected"));
  EXPECT_THROW(model.chat(bad), InfraError);
  // Messages and a raw prompt together are the caller's mistake.
  ChatRequest both = req;
  both.messages.push_back(Message::user("hi"));
  EXPECT_THROW(request_body_json(both), UsageError);
  // The cache tells the two kinds apart.
  ChatRequest chat_form;
  chat_form.model = req.model;
  chat_form.messages.push_back(Message::user(*req.prompt));
  EXPECT_NE(canonical_request_json(chat_form), canonical_request_json(req));
  EXPECT_NE(canonical_request_json(req).find("\"kind\":\"completion\""), std::string::npos);
}

// Token ids asked for (RL): the request carries OpenAI's logprobs and vLLM's return_token_ids, the reply's ids and
// log-probabilities come back as a TokenTrace, survive the record/replay cache, and a malformed trace is a problem.
TEST(Wire, TokenTracesAreAskedForReadAndCached) {
  ChatRequest req;
  req.model = "puma";
  req.prompt = "### Tool:\n";
  req.return_tokens = true;
  json body = json::parse(request_body_json(req));
  EXPECT_EQ(body["logprobs"], 0);
  EXPECT_EQ(body["return_token_ids"], true);
  req.return_tokens = false;
  EXPECT_FALSE(json::parse(request_body_json(req)).contains("return_token_ids"));
  // the copy constraint travels in the body, so a cached free completion never answers a constrained request
  EXPECT_FALSE(json::parse(request_body_json(req)).contains("prompt_words_only"));
  ChatRequest copy = req;
  copy.prompt_words_only = true;
  EXPECT_EQ(json::parse(request_body_json(copy))["prompt_words_only"], true);
  EXPECT_NE(canonical_request_json(copy), canonical_request_json(req));
  ChatRequest chat_copy;
  chat_copy.model = "puma";
  chat_copy.messages.push_back(Message::user("hi"));
  chat_copy.prompt_words_only = true;
  EXPECT_THROW(request_body_json(chat_copy), UsageError);
  // top_k too (vLLM's field; unset, the server's default), and a cached top-k 50 sample never answers a top-k 1 one
  EXPECT_FALSE(json::parse(request_body_json(req)).contains("top_k"));
  ChatRequest top1 = req, top50 = req;
  top1.top_k = 1;
  top50.top_k = 50;
  EXPECT_EQ(json::parse(request_body_json(top1))["top_k"], 1);
  EXPECT_NE(canonical_request_json(top1), canonical_request_json(top50));

  const std::string reply = R"({"choices": [{"index": 0, "text": "ab", "finish_reason": "stop",
      "token_ids": [5, 6, 2], "prompt_token_ids": [1, 9],
      "logprobs": {"tokens": ["token_id:5", "token_id:6", "token_id:2"], "token_logprobs": [-0.5, -1.25, -0.125]}}]})";
  ChatResponse out;
  ASSERT_EQ(parse_completion_reply(reply, out), "");
  ASSERT_TRUE(out.tokens);
  EXPECT_EQ(out.tokens->completion_ids, (std::vector<int32_t>{5, 6, 2}));
  EXPECT_EQ(out.tokens->prompt_ids, (std::vector<int32_t>{1, 9}));
  EXPECT_EQ(out.tokens->logprobs, (std::vector<float>{-0.5f, -1.25f, -0.125f}));
  ChatResponse again = response_from_json(response_to_json(out));
  ASSERT_TRUE(again.tokens);
  EXPECT_EQ(again.tokens->completion_ids, out.tokens->completion_ids);
  EXPECT_EQ(again.tokens->logprobs, out.tokens->logprobs);

  ChatResponse plain;
  ASSERT_EQ(parse_completion_reply(R"({"choices": [{"text": "ab"}]})", plain), "");
  EXPECT_FALSE(plain.tokens);
  ChatResponse broken;
  EXPECT_NE(parse_completion_reply(R"({"choices": [{"text": "ab", "token_ids": [1, "x"]}]})", broken), "");
  EXPECT_NE(parse_completion_reply(
                R"({"choices": [{"text": "ab", "token_ids": [1, 2], "logprobs": {"token_logprobs": [-1]}}]})", broken),
            "");
}

}  // namespace
}  // namespace pwab::llm
