// The remote agent against a real HTTP server on loopback (the test server answers whatever body a test
// scripts), through runner::run_episode and run_tasks: the registry and options, the request layout (every
// field, the visible history oldest first, the conversation growing one turn per step), reply parsing and
// tokens, malformed replies and 5xx retried, errors recorded as the task's infrastructure error, and bad tool
// calls reaching the environment as Error observations.
#include "agents/remote_agent.h"
#include "agents/remote_reply.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "env/tools.h"
#include "fc_test_util.h"
#include "runner/run.h"
#include "support/test_support.h"

namespace pwab::agents {
namespace {

using json = nlohmann::json;
using fctest::FixedUser;
using pwab::test::ScriptedReply;

const data::Task& task(uint32_t i) { return fctest::tiny_task(i); }

ScriptedReply reply(const json& body) { return ScriptedReply{200, body.dump(), {}, 0}; }
ScriptedReply raw(std::string body) { return ScriptedReply{200, std::move(body), {}, 0}; }

//! The tiny world of the LLM agent tests; its loopback server plays the remote agent at .../chat/completions.
struct Fixture : fctest::AgentWorld {
  std::string url() const { return llm.server.base_url() + "/chat/completions"; }
  std::unique_ptr<AgentFactory> factory(std::map<std::string, std::string> extra = {}) {
    AgentOptions o;
    o.extra = {{"url", url()}, {"retries", "3"}, {"retry_delay", "0"}, {"timeout", "10"}};
    for (auto& [k, v] : extra) o.extra[k] = v;
    return make_agent_factory("remote", o, fctest::context_of(&dataset, &embedder, cache.path(), 7));
  }
  json request(std::size_t i) const { return body(i); }
};

TEST(RemoteAgent, RegisteredWithOptions) {
  auto agents = list_agents();
  EXPECT_TRUE(std::any_of(agents.begin(), agents.end(), [](const AgentInfo& i) { return i.name == "remote"; }));

  auto options = [](std::map<std::string, std::string> extra) {
    AgentOptions o;
    o.extra = std::move(extra);
    return o;
  };
  auto usage_error = [&](std::map<std::string, std::string> extra, const std::string& says) {
    try {
      parse_remote_options(options(extra));
      ADD_FAILURE() << "accepted; expected an error saying " << says;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  usage_error({}, "--agent-url");
  usage_error({{"url", "ftp://host/"}}, "not an http");
  usage_error({{"url", "http://h/"}, {"colour", "red"}}, "unknown option 'colour'");
  usage_error({{"url", "http://h/"}, {"timeout", "soon"}}, "timeout");
  usage_error({{"url", "http://h/"}, {"retries", "0"}}, "retries");
  usage_error({{"url", "http://h/"}, {"product_details", "maybe"}}, "product_details");
  AgentOptions with_memory = options({{"url", "http://h/"}});
  with_memory.memory = "last";
  EXPECT_THROW(parse_remote_options(with_memory), UsageError);

  RemoteOptions o = parse_remote_options(options({{"url", "http://127.0.0.1:9/agent"}, {"timeout", "2.5"}}));
  EXPECT_EQ(o.url, "http://127.0.0.1:9/agent");
  EXPECT_DOUBLE_EQ(o.timeout_s, 2.5);

  // The identity in the manifest: the URL (credentials removed) unless a name is given, then the URL is left out
  // so that a new port does not stop --resume. Transport settings are not part of it.
  Fixture fx;
  auto by_url = fx.factory();
  EXPECT_EQ(json::parse(by_url->config_json()),
            json({{"protocol", "pwab-agent/1"}, {"name", fx.url()}, {"product_details", false}}));
  auto named = fx.factory({{"name", "my-agent v2"}, {"timeout", "99"}});
  EXPECT_EQ(json::parse(named->config_json()),
            json({{"protocol", "pwab-agent/1"}, {"name", "my-agent v2"}, {"product_details", false}}));
}

// A token (--agent-token / PWAB_AGENT_TOKEN, passed as the option "token") goes out as a bearer token on every
// request and stays out of the manifest; without one no Authorization header is sent.
TEST(RemoteAgent, SendsItsBearerTokenAndKeepsItOutOfTheManifest) {
  Fixture fx;
  fx.llm.server.push(reply({{"name", "stop"}}));
  auto f = fx.factory({{"token", "agent-secret-1"}});
  EXPECT_EQ(f->config_json().find("agent-secret-1"), std::string::npos);
  FixedUser user({});
  fx.run(*f, task(0), data::Track::kMultiTurn, &user);
  ASSERT_EQ(fx.llm.server.n_requests(), 1u);
  EXPECT_EQ(fx.llm.server.requests()[0].header("authorization"), "Bearer agent-secret-1");

  Fixture plain;
  plain.llm.server.push(reply({{"name", "stop"}}));
  auto g = plain.factory();
  plain.run(*g, task(0), data::Track::kMultiTurn, &user);
  EXPECT_EQ(plain.llm.server.requests()[0].header("authorization"), "");
}

TEST(RemoteAgent, RequestsCarryTheWholeEpisodeAndTheConversationGrows) {
  Fixture fx;
  fx.llm.server.push(reply({{"name", "respond"}, {"arguments", {{"content", "Which colour?"}}}}));
  fx.llm.server.push(reply({{"name", "search_product_by_query"},
                            {"arguments", {{"query", "red kettle"}}},
                            {"usage", {{"prompt_tokens", 120}, {"completion_tokens", 8}}}}));
  fx.llm.server.push(reply({{"name", "stop"}, {"usage", {{"prompt_tokens", 5}}}}));
  auto f = fx.factory();
  FixedUser user({"A red one, please."});
  auto result = fx.run(*f, task(0), data::Track::kMultiTurn, &user);

  ASSERT_EQ(fx.llm.server.n_requests(), 3u);
  EXPECT_EQ(result.steps, 3);
  EXPECT_EQ(result.ending, "stop");
  ASSERT_EQ(result.attempts.size(), 1u);
  EXPECT_DOUBLE_EQ(result.attempts[0].function_acc, 1.0);
  EXPECT_DOUBLE_EQ(result.attempts[0].result_acc, 0.5);  // the fixed search ranks the target second of two
  EXPECT_EQ(result.prompt_tokens, 125);
  EXPECT_EQ(result.completion_tokens, 8);
  EXPECT_EQ(user.heard, std::vector<std::string>{"Which colour?"});

  json first = fx.request(0);
  EXPECT_EQ(first["protocol"], "pwab-agent/1");
  EXPECT_EQ(first["step"], 1);
  EXPECT_EQ(first["track"], "multi");
  EXPECT_EQ(first["max_steps"], 10);
  EXPECT_EQ(first["task"], json({{"key", "test/0"}, {"user_id", "AUSER"}}));
  EXPECT_EQ(first["first_observation"], result.first_observation);
  EXPECT_EQ(first["first_observation"], env::initial_observation(fx.dataset, task(0)));
  EXPECT_EQ(first["tools"], json::parse(env::tools_json(false)));
  EXPECT_EQ(first["conversation"], json::array());
  ASSERT_TRUE(first["episode_id"].is_string());
  EXPECT_EQ(first["episode_id"].get<std::string>().rfind("test/0-", 0), 0u) << first["episode_id"];

  // The visible history (before the task's time 1000), oldest first, stored order on equal times.
  const json& history = first["history"];
  std::vector<std::string> asins;
  for (const auto& item : history) asins.push_back(item["asin"]);
  EXPECT_EQ(asins, (std::vector<std::string>{"B0SHIRT001", "B0MUG00001", "B0KETTLE01", "B0KETTLE02", "B0SOCKS001"}));
  EXPECT_EQ(history[0], json({{"asin", "B0SHIRT001"},
                              {"title", "Blue Cotton Shirt"},
                              {"category", "AMAZON FASHION"},
                              {"price", nullptr},  // none in the catalogue
                              {"rating", 3.0},
                              {"review_title", "Title"},
                              {"review", "The shirt shrank."},
                              {"timestamp", 100}}));
  EXPECT_EQ(history[2]["price"], 29.99);

  // Every later request is the first plus one more turn per step; everything else is unchanged.
  for (std::size_t i = 1; i < 3; ++i) {
    json r = fx.request(i);
    EXPECT_EQ(r["step"], i + 1);
    ASSERT_EQ(r["conversation"].size(), i);
    for (const char* key : {"protocol", "episode_id", "task", "track", "max_steps", "tools", "first_observation",
                            "history"})
      EXPECT_EQ(r[key], first[key]) << key;
    if (i == 2) {
      EXPECT_EQ(json(r["conversation"][0]), fx.request(1)["conversation"][0]);
    }
  }
  json conversation = fx.request(2)["conversation"];
  EXPECT_EQ(conversation[0], json({{"action", {{"name", "respond"}, {"arguments", {{"content", "Which colour?"}}}}},
                                   {"observation", "A red one, please."}}));
  EXPECT_EQ(conversation[1]["action"],
            json({{"name", "search_product_by_query"}, {"arguments", {{"query", "red kettle"}}}}));
  EXPECT_EQ(conversation[1]["observation"], result.actions[1].observation);
  EXPECT_NE(conversation[1]["observation"].get<std::string>().find("B0KETTLE02"), std::string::npos);

  // A new episode gets a new id, even for the same task.
  fx.llm.server.push(reply({{"name", "stop"}}));
  fx.run(*f, task(0), data::Track::kMultiTurn, &user);
  EXPECT_NE(fx.request(3)["episode_id"], first["episode_id"]);
}

TEST(RemoteAgent, SingleTurnEndsAtTheTaskFunctionAndOffersDetailsOnRequest) {
  Fixture fx;
  fx.llm.server.push(reply({{"name", "get_product_details_by_asin"}, {"arguments", {{"product_asin", "B0MUG00001"}}}}));
  fx.llm.server.push(reply({{"name", "get_recommendations_by_history"},
                            {"arguments", {{"product_sequence", {"B0KETTLE01", "B0SHIRT001"}}}}}));
  auto f = fx.factory({{"product_details", "true"}});
  auto result = fx.run(*f, task(1));
  EXPECT_EQ(result.steps, 2);
  EXPECT_EQ(result.ending, "task_function");
  ASSERT_EQ(result.attempts.size(), 1u);
  EXPECT_DOUBLE_EQ(result.attempts[0].result_acc, 1.0);  // the socks come first
  json first = fx.request(0);
  EXPECT_EQ(first["track"], "single");
  EXPECT_EQ(first["tools"], json::parse(env::tools_json(true)));
  EXPECT_NE(fx.request(1)["conversation"][0]["observation"].get<std::string>().find("Ceramic Mug"), std::string::npos);
  EXPECT_EQ(json::parse(f->config_json())["product_details"], true);
}

TEST(RemoteAgent, BadToolCallsAreObservationsNotErrors) {
  Fixture fx;
  fx.llm.server.push(reply({{"name", "fly_to_the_moon"}, {"arguments", {{"when", "now"}}}}));
  fx.llm.server.push(reply({{"name", "search_product_by_query"}, {"arguments", json::object()}}));
  fx.llm.server.push(reply({{"name", "respond"}, {"arguments", {{"text", "no content key"}}}}));
  fx.llm.server.push(reply({{"name", "stop"}}));
  auto f = fx.factory();
  FixedUser user({});
  auto result = fx.run(*f, task(0), data::Track::kMultiTurn, &user);
  EXPECT_EQ(result.ending, "stop");
  EXPECT_EQ(result.steps, 4);
  json conversation = fx.request(3)["conversation"];
  ASSERT_EQ(conversation.size(), 3u);
  EXPECT_EQ(conversation[0]["observation"], "Unknown action fly_to_the_moon");
  for (std::size_t i = 1; i < 3; ++i)
    EXPECT_EQ(conversation[i]["observation"].get<std::string>().rfind("Error: ", 0), 0u) << conversation[i];
  EXPECT_NE(conversation[1]["observation"].get<std::string>().find("query"), std::string::npos);
  ASSERT_EQ(result.attempts.size(), 1u);  // the search without a query: a scored [0, 0] attempt
  EXPECT_DOUBLE_EQ(result.attempts[0].function_acc, 0.0);
  EXPECT_TRUE(user.heard.empty());
}

TEST(RemoteAgent, MalformedRepliesAndServerErrorsAreRetried) {
  Fixture fx;
  fx.llm.server.push(ScriptedReply::error(503, "warming up"));
  fx.llm.server.push(raw("this is not json"));
  fx.llm.server.push(reply({{"name", "search_product_by_query"}, {"arguments", {{"query", "kettle"}}}}));
  auto f = fx.factory();
  auto result = fx.run(*f, task(0));
  EXPECT_EQ(result.ending, "task_function");
  EXPECT_EQ(fx.llm.server.n_requests(), 3u);
  EXPECT_EQ(fx.request(2), fx.request(0));  // a retry sends the same request
}

TEST(RemoteAgent, EveryWayOfBreakingTheProtocolIsNamed) {
  EXPECT_EQ(remote_reply_problem(R"({"name": "stop"})"), "");
  EXPECT_EQ(remote_reply_problem(R"({"name": "x", "arguments": {}, "usage": {"prompt_tokens": 3}, "extra": 1})"), "");
  EXPECT_NE(remote_reply_problem("<html>").find("not JSON"), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"name": "stop", "arguments": {"a": )" + std::string(100000, '[') +
                                 std::string(100000, ']') + "}}")
                .find("deeper than"),
            std::string::npos);
  EXPECT_NE(remote_reply_problem("[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"arguments": {}})").find("\"name\""), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"name": ""})").find("\"name\""), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"name": 3})").find("\"name\""), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"name": "x", "arguments": "{\"q\": 1}"})").find("arguments"), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"name": "x", "usage": 5})").find("usage"), std::string::npos);
  EXPECT_NE(remote_reply_problem(R"({"name": "x", "usage": {"completion_tokens": -1}})").find("completion_tokens"),
            std::string::npos);
}

TEST(RemoteAgent, AnAgentThatKeepsFailingErrsTheTaskAndResumeRetriesIt) {
  Fixture fx;
  fx.llm.server.push(raw("not json"));
  fx.llm.server.push(reply({{"arguments", json::object()}}));
  fx.llm.server.push(reply({{"name", "search_product_by_query"}, {"arguments", "query=kettle"}}));
  auto f = fx.factory();
  try {
    fx.run(*f, task(0));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    FAIL() << "a failing agent is not a usage error: " << e.what();
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("after 3 attempts"), std::string::npos) << what;
    EXPECT_NE(what.find("arguments"), std::string::npos) << what;  // the last problem
  }
  EXPECT_EQ(fx.llm.server.n_requests(), 3u);

  // Through the runner: the task is recorded with its error, the next task still runs, and resume retries it.
  runner::RunManifest m;
  m.config_json = f->config_json();
  std::vector<const data::Task*> tasks = {&task(0), &task(3)};
  auto run = [&](bool resume) {
    runner::RunDirectory dir = runner::RunDirectory::open(fx.cache.path() / "run", m, resume);
    runner::RunOptions opts;
    opts.concurrency = 1;
    opts.episode = {data::Track::kSingleTurn, 10};
    return runner::run_tasks(fx.env, tasks, dir, [&](const data::Task& t, int) { return f->make(t); }, nullptr, opts);
  };
  fx.llm.server.push(ScriptedReply::error(400, "I do not understand"));  // not retried
  fx.llm.server.push(reply({{"name", "search_product_by_query"}, {"arguments", {{"query", "kettle"}}}}));
  auto report = run(false);
  EXPECT_EQ(report.progress.errored, 1u);
  auto records = runner::read_records(fx.cache.path() / "run");
  ASSERT_EQ(records.size(), 2u);
  runner::sort_by_task(records);
  EXPECT_NE(records[0].error.find("I do not understand"), std::string::npos) << records[0].error;
  EXPECT_TRUE(records[1].error.empty()) << records[1].error;

  fx.llm.server.push(reply({{"name", "search_product_by_query"}, {"arguments", {{"query", "kettle"}}}}));
  report = run(true);
  EXPECT_EQ(report.progress.finished, 1u);
  EXPECT_EQ(report.progress.errored, 0u);
  EXPECT_EQ(fx.llm.server.n_pending(), 0u);
}

TEST(RemoteAgent, AnAgentThatIsDownErrsTheEpisode) {
  Fixture fx;
  auto f = fx.factory({{"retries", "2"}});
  fx.llm.server.stop();
  EXPECT_THROW(fx.run(*f, task(0)), Error);
}

}  // namespace
}  // namespace pwab::agents
