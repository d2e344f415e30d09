// The react and reflection agents against the real HTTP client and the loopback OpenAI server, through
// runner::run_episode: registry and options, the reply parser, the prompt (tools and memory), single- and
// multi-turn conversations, malformed replies re-asked then recorded, unknown tools, the single-turn cap of 3,
// the reflection call (role other, not a step) and infrastructure failures.
#include "agents/react_agent.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "env/tools.h"
#include "fc_test_util.h"
#include "support/test_support.h"

namespace pwab::agents {
namespace {

using json = nlohmann::json;
using fctest::FixedUser;
using fctest::KeywordEmbedder;
using fctest::ServerLlm;
using pwab::test::ScriptedReply;

const data::Dataset& ds() { return fctest::tiny_dataset(); }
const data::Task& task(uint32_t i) { return fctest::tiny_task(i); }

constexpr const char* kSearchArgs = R"({"query": "red electric kettle"})";

std::string step(std::string_view action, std::string_view args) {
  return "Thought:\nI know what to do.\nAction:\n" + std::string(action) + "\nArguments:\n" + std::string(args);
}

struct Fixture : fctest::AgentWorld {
  std::unique_ptr<AgentFactory> factory(const std::string& name = "react", const std::string& memory = "none",
                                        int k = 10, std::map<std::string, std::string> extra = {}) {
    AgentOptions o;
    o.memory = memory;
    o.memory_length = k;
    o.extra = std::move(extra);
    return make_agent_factory(name, o, context());
  }
};

TEST(ReactAgent, RegisteredWithOptions) {
  auto agents = list_agents();
  auto find = [&](std::string_view n) {
    return std::find_if(agents.begin(), agents.end(), [&](const AgentInfo& i) { return i.name == n; });
  };
  ASSERT_NE(find("react"), agents.end());
  ASSERT_NE(find("reflection"), agents.end());
  EXPECT_EQ(find("react")->paper_row, "ReAct");
  EXPECT_NE(find("reflection")->paper_row.find("Reflection"), std::string::npos);

  Fixture fx;
  auto f = fx.factory();
  EXPECT_EQ(f->name(), "react");
  EXPECT_TRUE(f->react_style());
  EXPECT_EQ(runner::loop_bound(-1, f->react_style()), 3);
  json cfg = json::parse(f->config_json());
  EXPECT_EQ(cfg["agent"], "react");
  EXPECT_EQ(cfg["memory"], "none");
  EXPECT_EQ(cfg["parse_retries"], 2);
  EXPECT_EQ(fx.factory("reflection")->name(), "reflection");
  EXPECT_EQ(json::parse(fx.factory("react", "last", 3, {{"parse_retries", "0"}})->config_json())["parse_retries"], 0);
  EXPECT_THROW(fx.factory("react", "everything"), UsageError);
  EXPECT_THROW(fx.factory("react", "none", 0), UsageError);
  EXPECT_THROW(fx.factory("react", "none", 10, {{"parse_retries", "11"}}), UsageError);
  EXPECT_THROW(fx.factory("reflection", "none", 10, {{"colour", "red"}}), UsageError);
  AgentContext offline = fctest::context_of(&ds(), &fx.embedder, fx.cache.path(), 7);
  EXPECT_THROW(make_agent_factory("react", {}, offline), UsageError);
}

TEST(ReactAgent, ParserRules) {
  auto parse = [](std::string_view s) { return parse_react_reply(s); };
  ReactParse p = parse(step("search_product_by_query", kSearchArgs));
  ASSERT_TRUE(p.action) << p.problem;
  EXPECT_EQ(p.action->name, "search_product_by_query");
  EXPECT_EQ(p.action->arguments_json, kSearchArgs);

  // Prose around, a code fence, markdown markers, case and spacing variants, values on the marker lines,
  // trailing text after the JSON.
  p = parse("Sure! Here is my step.\n```\n**Thought:** find it\n  ACTION :  Search_Product_By_Query\narguments: "
            "{\"query\": \"a {braced} \\\"kettle\\\"\"} and that is all\n```\nHope this helps.");
  ASSERT_TRUE(p.action) << p.problem;
  EXPECT_EQ(p.action->name, "search_product_by_query");
  EXPECT_EQ(json::parse(p.action->arguments_json), json({{"query", "a {braced} \"kettle\""}}));

  // The last Action block counts.
  p = parse(step("stop", "{}") + "\n" + step("get_recommendations_by_history", R"({"product_sequence": ["B0X"]})"));
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->name, "get_recommendations_by_history");

  // respond: plain text (several lines), a JSON string, or {"content": ...}.
  p = parse("Thought: ask\nAction: Respond\nArguments: Which colour?\nRed or blue?");
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->name, "respond");
  EXPECT_EQ(json::parse(p.action->arguments_json), json({{"content", "Which colour?\nRed or blue?"}}));
  p = parse("Action: respond\nArguments: \"Hi\"");
  EXPECT_EQ(json::parse(p.action->arguments_json), json({{"content", "Hi"}}));
  p = parse("Action: respond\nArguments: {\"content\": \"Hello\"}");
  EXPECT_EQ(json::parse(p.action->arguments_json), json({{"content", "Hello"}}));

  // stop may leave its arguments out; unknown names pass through.
  p = parse("Thought: done\nAction: stop");
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->name, "stop");
  EXPECT_EQ(p.action->arguments_json, "{}");
  p = parse(step("teleport", "{}"));
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->name, "teleport");

  // Failures say why.
  EXPECT_FALSE(parse("I think you want a kettle.").action);
  EXPECT_FALSE(parse("Action:\nArguments: {}").action);
  EXPECT_FALSE(parse("Action: search_product_by_query\nArguments: {\"query\": ").action);
  EXPECT_FALSE(parse("Action: search_product_by_query\nArguments: red kettle").action);
  EXPECT_FALSE(parse("Action: search_product_by_query").action);
  EXPECT_FALSE(parse("Action: respond\nArguments:").action);
  EXPECT_FALSE(parse("Action: respond").problem.empty());
}

TEST(ReactAgent, SingleTurnHappyPath) {
  Fixture fx;
  auto f = fx.factory("react", "last", 2);
  fx.llm.server.push(ScriptedReply::text(step("search_product_by_query", kSearchArgs), 120, 15));
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kSingleTurn, nullptr, runner::loop_bound(-1, true));

  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].action.arguments_json, kSearchArgs);
  EXPECT_EQ(r.prompt_tokens, 120);
  EXPECT_EQ(r.completion_tokens, 15);
  llm::Usage u = fx.llm.ledger.task("test/0", llm::Role::kAgent);
  EXPECT_EQ(u.calls, 1);
  EXPECT_EQ(u.prompt_tokens, 120);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kOther).calls, 0);

  ASSERT_EQ(fx.llm.server.n_requests(), 1u);
  json body = fx.body(0);
  EXPECT_FALSE(body.contains("tools"));  // a text protocol: no native tools
  EXPECT_EQ(body["temperature"], 0.0);
  ASSERT_EQ(body["messages"].size(), 2u);
  std::string system = body["messages"][0]["content"];
  auto& rf = dynamic_cast<ReactAgentFactory&>(*f);
  EXPECT_EQ(system, rf.system_message(task(0), data::Track::kSingleTurn));
  EXPECT_TRUE(system.starts_with(fc_system_prompt(data::Track::kSingleTurn, 10) + "\n# Available tools\n" +
                                 env::tools_json(false) + std::string(react_instruction())));
  EXPECT_NE(system.find("\nMEMORY 1:\n"), std::string::npos);
  EXPECT_EQ(system.find("\nMEMORY 2:\n"), std::string::npos);  // k = 2
  EXPECT_EQ(body["messages"][1]["content"], r.first_observation);
}

TEST(ReactAgent, CodeFencedReplyParsed) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::text("Here you go:\n```text\n" + step("search_product_by_query", kSearchArgs) +
                                         "\n```\nLet me know if that works."));
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kSingleTurn, nullptr, 3);
  EXPECT_EQ(r.ending, "task_function");
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  EXPECT_EQ(fx.llm.server.n_requests(), 1u);
}

TEST(ReactAgent, MultiTurnRespondThenToolThenStop) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::text(step("respond", "Which colour would you like?"), 11, 7));
  fx.llm.server.push(ScriptedReply::text(step("search_product_by_query", kSearchArgs), 13, 9));
  fx.llm.server.push(ScriptedReply::text("Thought: done\nAction: stop\nArguments: {}", 17, 3));
  FixedUser user({"Something red, please."});
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kMultiTurn, &user);

  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.actions.size(), 3u);
  EXPECT_EQ(r.actions[0].action.name, "respond");
  EXPECT_EQ(user.heard, std::vector<std::string>{"Which colour would you like?"});
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  EXPECT_EQ(r.prompt_tokens, 41);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 3);

  json second = fx.body(1)["messages"];
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[2], json({{"role", "assistant"}, {"content", step("respond", "Which colour would you like?")}}));
  EXPECT_EQ(second[3], json({{"role", "user"}, {"content", "Something red, please."}}));
  EXPECT_EQ(second[0]["content"], dynamic_cast<ReactAgentFactory&>(*f).system_message(task(0), data::Track::kMultiTurn));
  json third = fx.body(2)["messages"];
  ASSERT_EQ(third.size(), 6u);
  EXPECT_EQ(third[4]["role"], "assistant");
  EXPECT_EQ(third[5], json({{"role", "user"}, {"content", "API output: " + r.actions[1].observation}}));
}

TEST(ReactAgent, MalformedReplyRetriedThenRecordedAsFailure) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::text("I would search for a kettle.", 10, 1));
  fx.llm.server.push(ScriptedReply::text("Action: search_product_by_query\nArguments: kettle", 20, 2));
  fx.llm.server.push(ScriptedReply::text("Still no format.", 30, 3));
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kSingleTurn, nullptr, 3);

  EXPECT_EQ(fx.llm.server.n_requests(), 3u);  // 1 + parse_retries (2)
  EXPECT_EQ(r.steps, 1);                       // re-asks are not steps
  EXPECT_EQ(r.ending, "respond");
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].action.name, "respond");
  EXPECT_EQ(json::parse(r.actions[0].action.arguments_json), json({{"content", "Still no format."}}));
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.attempts[0].result_acc, 0.0);
  EXPECT_EQ(r.prompt_tokens, 60);  // every attempt billed to the step
  EXPECT_EQ(r.completion_tokens, 6);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 3);

  // Each re-ask shows the bad reply and a correction.
  json retry = fx.body(1)["messages"];
  ASSERT_EQ(retry.size(), 4u);
  EXPECT_EQ(retry[2], json({{"role", "assistant"}, {"content", "I would search for a kettle."}}));
  EXPECT_EQ(retry[3]["role"], "user");
  EXPECT_NE(retry[3]["content"].get<std::string>().find("Arguments:"), std::string::npos);
  EXPECT_EQ(fx.body(2)["messages"][2]["content"], "Action: search_product_by_query\nArguments: kettle");

  // A good reply on a re-ask is used, and only it stays in the conversation.
  Fixture fx2;
  auto f2 = fx2.factory("react", "none", 10, {{"parse_retries", "1"}});
  fx2.llm.server.push(ScriptedReply::text("no format"));
  fx2.llm.server.push(ScriptedReply::text(step("teleport", "{}")));
  fx2.llm.server.push(ScriptedReply::text(step("search_product_by_query", kSearchArgs)));
  runner::EpisodeResult r2 = fx2.run(*f2, task(0), data::Track::kSingleTurn, nullptr, 3);
  EXPECT_EQ(r2.steps, 2);
  EXPECT_EQ(r2.ending, "task_function");
  json third = fx2.body(2)["messages"];
  ASSERT_EQ(third.size(), 4u);
  EXPECT_EQ(third[2]["content"], step("teleport", "{}"));
  EXPECT_EQ(third[3]["content"], "API output: Unknown action teleport");
}

//! Answers from a list and keeps every request (to see what the wire does not carry: the sample index).
class ListModel final : public llm::ChatModel {
 public:
  explicit ListModel(std::vector<std::string> replies, std::vector<llm::ChatRequest>* seen)
      : replies_(std::move(replies)), seen_(seen) {}
  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    seen_->push_back(request);
    llm::ChatResponse r;
    r.message = llm::Message::assistant(replies_.at(seen_->size() - 1));
    r.model = request.model;
    return r;
  }
  std::string describe() const override { return "list"; }

 private:
  std::vector<std::string> replies_;
  std::vector<llm::ChatRequest>* seen_;
};

TEST(ReactAgent, ReAsksAreNewSamplesAndAFailureReachesTheUser) {
  Fixture fx;
  std::vector<llm::ChatRequest> seen;
  AgentContext c = fctest::context_of(&ds(), &fx.embedder, fx.cache.path(), 7);
  c.llm.model = "m";
  c.llm.open = [&](const std::string&, llm::Role) -> std::unique_ptr<llm::ChatModel> {
    return std::make_unique<ListModel>(std::vector<std::string>{"bad", "worse", "worst", step("stop", "{}")}, &seen);
  };
  auto f = make_agent_factory("react", {}, c);
  FixedUser user({"What?"});
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kMultiTurn, &user);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].sample, 0);
  EXPECT_EQ(seen[1].sample, 1);
  EXPECT_EQ(seen[2].sample, 2);
  EXPECT_EQ(seen[3].sample, 0);  // a new step starts again at 0
  EXPECT_NE(llm::canonical_request_json(seen[0]), llm::canonical_request_json(seen[1]));
  EXPECT_EQ(user.heard, std::vector<std::string>{"worst"});
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.ending, "stop");
  // The conversation keeps the last bad reply, not the re-asks.
  ASSERT_EQ(seen[3].messages.size(), 4u);
  EXPECT_EQ(seen[3].messages[2].content, "worst");
  EXPECT_EQ(seen[3].messages[3].content, "What?");
}

TEST(ReactAgent, UnknownToolContinues) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::text(step("teleport", R"({"to": "moon"})")));
  fx.llm.server.push(ScriptedReply::text(step("search_product_by_query", kSearchArgs)));
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kSingleTurn, nullptr, 3);
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 2);
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[0].observation, "Unknown action teleport");
  EXPECT_FALSE(r.actions[0].done);
  json msgs = fx.body(1)["messages"];
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[3]["content"], "API output: Unknown action teleport");
}

TEST(ReactAgent, SingleTurnCapIsThree) {
  Fixture fx;
  auto f = fx.factory();
  for (int i = 0; i < 5; ++i) fx.llm.server.push(ScriptedReply::text(step("teleport", "{}")));
  runner::EpisodeResult r =
      fx.run(*f, task(0), data::Track::kSingleTurn, nullptr, runner::loop_bound(-1, f->react_style()));
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.ending, "step_cap");
  EXPECT_TRUE(r.attempts.empty());
  EXPECT_EQ(fx.llm.server.n_requests(), 3u);
}

TEST(ReactAgent, ReflectionAfterEachUserReplyUnderRoleOther) {
  Fixture fx;
  auto f = fx.factory("reflection");
  fx.llm.server.push(ScriptedReply::text(step("respond", "Which colour?"), 11, 7));
  fx.llm.server.push(ScriptedReply::text("I should have searched for a red kettle.", 50, 20));  // reflection
  fx.llm.server.push(ScriptedReply::text(step("respond", "Electric?"), 13, 9));
  fx.llm.server.push(ScriptedReply::text("Ask less, search sooner.", 60, 25));  // reflection
  fx.llm.server.push(ScriptedReply::text(step("search_product_by_query", kSearchArgs), 15, 5));
  fx.llm.server.push(ScriptedReply::text(step("stop", "{}"), 17, 3));
  FixedUser user({"Red.", "Yes, electric."});
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kMultiTurn, &user);

  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 4);  // reflections are not steps
  EXPECT_EQ(r.prompt_tokens, 11 + 13 + 15 + 17);
  EXPECT_EQ(r.completion_tokens, 7 + 9 + 5 + 3);
  llm::Usage agent = fx.llm.ledger.task("test/0", llm::Role::kAgent);
  EXPECT_EQ(agent.calls, 4);
  EXPECT_EQ(agent.prompt_tokens, 56);
  llm::Usage other = fx.llm.ledger.task("test/0", llm::Role::kOther);
  EXPECT_EQ(other.calls, 2);
  EXPECT_EQ(other.prompt_tokens, 110);
  EXPECT_EQ(other.completion_tokens, 45);
  ASSERT_EQ(fx.llm.server.n_requests(), 6u);

  // The reflection request: one system message, no temperature (the API default), the sections filled.
  json refl = fx.body(1);
  EXPECT_FALSE(refl.contains("temperature"));
  EXPECT_FALSE(refl.contains("tools"));
  ASSERT_EQ(refl["messages"].size(), 1u);
  EXPECT_EQ(refl["messages"][0]["role"], "system");
  std::string expected_actions = "user:" + r.first_observation + "\nassistant:" + step("respond", "Which colour?") + "\n";
  EXPECT_EQ(refl["messages"][0]["content"], reflection_prompt(task(0).instruction, expected_actions, "Red."));
  // The next agent call carries the reflection as an assistant message after the user's reply.
  json msgs = fx.body(2)["messages"];
  ASSERT_EQ(msgs.size(), 5u);
  EXPECT_EQ(msgs[3], json({{"role", "user"}, {"content", "Red."}}));
  EXPECT_EQ(msgs[4], json({{"role", "assistant"}, {"content", "I should have searched for a red kettle."}}));
  EXPECT_EQ(fx.body(2)["temperature"], 0.0);
  // The second reflection sees the first one in the record.
  std::string second = fx.body(3)["messages"][0]["content"];
  EXPECT_NE(second.find("assistant:I should have searched for a red kettle.\n"), std::string::npos);
  EXPECT_NE(second.find("User feedback:\nYes, electric."), std::string::npos);
  // No reflection after a tool result.
  EXPECT_EQ(fx.body(5)["messages"].size(), 10u);
}

TEST(ReactAgent, ServerFailuresPropagateAsInfraError) {
  Fixture fx;
  auto f = fx.factory();
  for (int i = 0; i < 3; ++i) fx.llm.server.push(ScriptedReply::error(500, "upstream down"));
  auto agent = f->make(task(0));
  EXPECT_THROW(runner::run_episode(fx.env, task(0), *agent, nullptr, {data::Track::kSingleTurn, 3}),
               llm::InfraError);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 0);

  // A failing reflection call too.
  Fixture fx2;
  auto f2 = fx2.factory("reflection");
  fx2.llm.server.push(ScriptedReply::text(step("respond", "Which colour?")));
  for (int i = 0; i < 3; ++i) fx2.llm.server.push(ScriptedReply::error(503, "overloaded"));
  FixedUser user({"Red."});
  auto agent2 = f2->make(task(0));
  EXPECT_THROW(runner::run_episode(fx2.env, task(0), *agent2, &user, {data::Track::kMultiTurn, 10}),
               llm::InfraError);
}

TEST(ReactAgent, EachMemoryOptionReachesThePrompt) {
  Fixture fx;
  const std::string base = fc_system_prompt(data::Track::kSingleTurn, 10) + "\n# Available tools\n" +
                           env::tools_json(false) + std::string(react_instruction());
  MemoryOptions mo;
  mo.k = 3;
  mo.run_seed = 7;
  for (MemoryStrategy s : {MemoryStrategy::kNone, MemoryStrategy::kRandom, MemoryStrategy::kLast, MemoryStrategy::kRelevant}) {
    auto f = fx.factory("react", std::string(to_string(s)), 3);
    std::string expected = base;
    if (s != MemoryStrategy::kNone) expected += baseline_memory(ds(), task(0), s, mo, &fx.embedder);
    std::size_t before = fx.llm.server.n_requests();
    fx.llm.server.push(ScriptedReply::text(step("search_product_by_query", kSearchArgs)));
    fx.run(*f, task(0), data::Track::kSingleTurn, nullptr, 3);
    EXPECT_EQ(fx.body(before)["messages"][0]["content"], expected) << to_string(s);
  }
  // Task-specific memory (keyword function model): its own prompt, the tools, then "\n" + the memory.
  auto f = fx.factory("reflection", "taskspec", 3);
  std::string system = dynamic_cast<ReactAgentFactory&>(*f).system_message(task(0), data::Track::kMultiTurn);
  TaskSpecMemory m = taskspec_memory(ds(), task(0), "search_product_by_query", mo, fx.embedder);
  ASSERT_NE(m.text, kNoMemory);
  EXPECT_EQ(system, taskspec_system_prompt(data::Track::kMultiTurn, 10) + "\n# Available tools\n" +
                        env::tools_json(false) + std::string(react_instruction()) + "\n" + m.text);
  std::size_t before = fx.llm.server.n_requests();
  fx.llm.server.push(ScriptedReply::text(step("stop", "{}")));
  FixedUser user({});
  fx.run(*f, task(0), data::Track::kMultiTurn, &user);
  EXPECT_EQ(fx.body(before)["messages"][0]["content"], system);
}

}  // namespace
}  // namespace pwab::agents
