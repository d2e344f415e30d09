// The fc agent against the real HTTP client and the loopback OpenAI server, through runner::run_episode: the
// registry and options, the prompts, what each request carries (system prompt with memory, tools without the
// details tool, tool_choice auto, temperature 0), single- and multi-turn conversations, only the first tool call
// kept, malformed arguments, unknown tools, infrastructure failures, task-specific memory, and tokens in the
// episode result and the ledger.
#include "agents/fc_agent.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/synth.h"
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

struct Fixture : fctest::AgentWorld {
  AgentContext context(LlmAccess access) {
    AgentContext c = AgentWorld::context();
    c.llm = std::move(access);
    return c;
  }
  std::unique_ptr<AgentFactory> factory(const std::string& memory = "none", int k = 10,
                                        std::map<std::string, std::string> extra = {}) {
    AgentOptions o;
    o.memory = memory;
    o.memory_length = k;
    o.extra = std::move(extra);
    return make_agent_factory("fc", o, context(llm.access()));
  }
};

int count_rules(const std::string& prompt) {
  int n = 0;
  for (std::size_t p = prompt.find("\n- "); p != std::string::npos; p = prompt.find("\n- ", p + 1)) ++n;
  return n;
}

TEST(FcAgent, RegisteredWithItsPaperRows) {
  auto agents = list_agents();
  ASSERT_GE(agents.size(), 2u);
  EXPECT_EQ(agents[0].name, "heuristic");
  auto it = std::find_if(agents.begin(), agents.end(), [](const AgentInfo& i) { return i.name == "fc"; });
  ASSERT_NE(it, agents.end());
  EXPECT_NE(it->paper_row.find("No / Random / Last / Relevant Memory (GPT function calling)"), std::string::npos);
  EXPECT_NE(it->paper_row.find("PUMA (gpt) with --memory taskspec"), std::string::npos);
}

TEST(FcAgent, OptionsAndUsageErrors) {
  Fixture fx;
  AgentContext offline = fctest::context_of(&ds(), &fx.embedder, fx.cache.path(), 7);
  try {
    make_agent_factory("fc", {}, offline);
    FAIL() << "no LLM accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--model"), std::string::npos) << e.what();
  }
  auto expect_usage = [&](std::string memory, int k, std::map<std::string, std::string> extra) {
    EXPECT_THROW(fx.factory(memory, k, extra), UsageError) << memory << " " << k;
  };
  expect_usage("recmind", 10, {});
  expect_usage("taskspe", 10, {});
  expect_usage("last", 0, {});
  expect_usage("last", 10, {{"temperature", "0"}});
  expect_usage("last", 10, {{"relevance", "partial"}});
  expect_usage("taskspec", 10, {{"function_model", "llama"}});
  expect_usage("taskspec", 10, {{"function_file", (fx.cache / "missing.json").string()}});
  expect_usage("last", 10, {{"max_steps", "0"}});
  AgentContext no_embedder = fx.context(fx.llm.access());
  no_embedder.embedder = nullptr;
  AgentOptions relevant;
  relevant.memory = "relevant";
  EXPECT_THROW(make_agent_factory("fc", relevant, no_embedder), UsageError);
  AgentOptions last;
  last.memory = "last";
  EXPECT_NO_THROW(make_agent_factory("fc", last, no_embedder));

  LlmAccess access = fx.llm.access("gpt-4o");
  access.temperature = 0.5;
  access.seed = 2024;
  AgentOptions o;
  o.memory = "relevant";
  o.memory_length = 5;
  auto f = make_agent_factory("fc", o, fx.context(access));
  EXPECT_EQ(f->name(), "fc");
  EXPECT_FALSE(f->react_style());
  json c = json::parse(f->config_json());
  EXPECT_EQ(c["agent"], "fc");
  EXPECT_EQ(c["model"], "gpt-4o");
  EXPECT_EQ(c["temperature"], 0.5);
  EXPECT_EQ(c["seed"], 2024);
  EXPECT_TRUE(c["max_tokens"].is_null());
  EXPECT_EQ(c["memory"], "relevant");
  EXPECT_EQ(c["memory_length"], 5);
  EXPECT_EQ(c["relevance"], "full");
  EXPECT_EQ(c["prompts"], std::string(kFcPromptsVersion));
  EXPECT_EQ(c["function_model"], "none");
  EXPECT_EQ(c["embedder"], "keywords");
  EXPECT_EQ(c["max_steps"], 10);
  // The default memory is none, and the temperature defaults to the original's 0.0.
  c = json::parse(fx.factory("")->config_json());
  EXPECT_EQ(c["memory"], "none");
  EXPECT_EQ(c["temperature"], 0.0);
}

TEST(FcAgent, PromptLayouts) {
  std::string single = fc_system_prompt(data::Track::kSingleTurn, 10);
  std::string multi = fc_system_prompt(data::Track::kMultiTurn, 7);
  std::string ts_single = taskspec_system_prompt(data::Track::kSingleTurn, 10);
  std::string ts_multi = taskspec_system_prompt(data::Track::kMultiTurn, 7);
  for (const std::string* p : {&single, &multi, &ts_single, &ts_multi}) {
    EXPECT_NE(p->find("\n\nRules:\n- "), std::string::npos);
    EXPECT_TRUE(p->ends_with(".\n"));
    EXPECT_EQ(p->substr(0, p->find("Rules:")), single.substr(0, single.find("Rules:")));  // one opening line
  }
  EXPECT_EQ(count_rules(single), 7);
  EXPECT_EQ(count_rules(multi), 12);
  EXPECT_EQ(count_rules(ts_single), 6);
  EXPECT_EQ(count_rules(ts_multi), 10);
  // Single- and multi-turn share the first three rules.
  auto first_rules = [](const std::string& p, int n) {
    std::size_t at = p.find("Rules:\n");
    for (int i = 0; i < n; ++i) at = p.find('\n', at + 1);
    return p.substr(0, at);
  };
  EXPECT_EQ(first_rules(single, 4), first_rules(multi, 4));
  EXPECT_NE(single.find("search_product_by_query, get_recommendations_by_history or add_product_review"),
            std::string::npos);
  EXPECT_NE(multi.find("at most 7 steps"), std::string::npos);
  EXPECT_NE(ts_multi.find("at most 7 steps"), std::string::npos);
  EXPECT_NE(multi.find("'stop'"), std::string::npos);
  EXPECT_EQ(single.find("steps"), std::string::npos);
}

TEST(FcAgent, SingleTurnRequestAndReward) {
  Fixture fx;
  auto f = fx.factory("last", 2);
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "call_1", 120, 15));
  runner::EpisodeResult r = fx.run(*f, task(0));

  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].action.name, "search_product_by_query");
  EXPECT_EQ(r.actions[0].action.arguments_json, kSearchArgs);
  EXPECT_EQ(r.prompt_tokens, 120);
  EXPECT_EQ(r.completion_tokens, 15);
  llm::Usage u = fx.llm.ledger.task("test/0", llm::Role::kAgent);
  EXPECT_EQ(u.calls, 1);
  EXPECT_EQ(u.prompt_tokens, 120);
  EXPECT_EQ(u.completion_tokens, 15);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kUser).calls, 0);

  ASSERT_EQ(fx.llm.server.n_requests(), 1u);
  json body = fx.body(0);
  EXPECT_EQ(body["model"], "gpt-4o-mini");
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["tools"], json::parse(env::tools_json(false)));
  std::vector<std::string> names;
  for (const auto& t : body["tools"]) names.push_back(t["function"]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"search_product_by_query", "get_recommendations_by_history",
                                             "add_product_review", "stop"}));
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  MemoryOptions mo;
  mo.k = 2;
  std::string memory = baseline_memory(ds(), task(0), MemoryStrategy::kLast, mo, nullptr);
  EXPECT_EQ(body["messages"][0]["content"], fc_system_prompt(data::Track::kSingleTurn, 10) + memory);
  EXPECT_NE(memory.find("\nMEMORY 1:\n"), std::string::npos);
  EXPECT_EQ(memory.find("\nMEMORY 2:\n"), std::string::npos);  // k = 2 honoured
  EXPECT_EQ(body["messages"][1]["role"], "user");
  EXPECT_EQ(body["messages"][1]["content"], "USER AUSER: I need a new electric kettle");
  EXPECT_EQ(body["messages"][1]["content"], r.first_observation);
}

TEST(FcAgent, SamplingSettingsFromTheRun) {
  Fixture fx;
  LlmAccess access = fx.llm.access("gpt-4o");
  access.temperature = 0.7;
  access.max_tokens = 256;
  access.seed = 2024;
  auto f = make_agent_factory("fc", {}, fx.context(access));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  fx.run(*f, task(0));
  json body = fx.body(0);
  EXPECT_EQ(body["model"], "gpt-4o");
  EXPECT_EQ(body["temperature"], 0.7);
  EXPECT_EQ(body["max_tokens"], 256);
  EXPECT_EQ(body["seed"], 2024);
}

TEST(FcAgent, EachMemoryStrategyReachesTheSystemPrompt) {
  Fixture fx;
  const std::string base = fc_system_prompt(data::Track::kSingleTurn, 10);
  MemoryOptions mo;
  mo.k = 3;
  mo.run_seed = 7;
  for (MemoryStrategy s : {MemoryStrategy::kNone, MemoryStrategy::kRandom, MemoryStrategy::kLast, MemoryStrategy::kRelevant}) {
    auto f = fx.factory(std::string(to_string(s)), 3);
    auto& fc = dynamic_cast<FcAgentFactory&>(*f);
    std::string expected = base;
    if (s != MemoryStrategy::kNone) expected += baseline_memory(ds(), task(0), s, mo, &fx.embedder);
    EXPECT_EQ(fc.system_message(task(0), data::Track::kSingleTurn), expected) << to_string(s);
    // The same text goes out in the request, and again for the same task (random memory is deterministic).
    std::size_t before = fx.llm.server.n_requests();
    fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
    fx.run(*f, task(0));
    EXPECT_EQ(fx.body(before)["messages"][0]["content"], expected) << to_string(s);
  }
  // An empty history: the header alone after the prompt.
  auto f = fx.factory("relevant", 3);
  EXPECT_EQ(dynamic_cast<FcAgentFactory&>(*f).system_message(task(3), data::Track::kSingleTurn),
            base + std::string(memory_header(MemoryStrategy::kRelevant)));
}

TEST(FcAgent, MultiTurnRespondThenToolCallThenStop) {
  Fixture fx;
  auto f = fx.factory("none");
  fx.llm.server.push(ScriptedReply::text("Which colour would you like?", 11, 7));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "call_a", 13, 9));
  fx.llm.server.push(ScriptedReply::tool_call("stop", "{}", "call_b", 17, 3));
  FixedUser user({"Something red, please."});
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kMultiTurn, &user);

  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.actions.size(), 3u);
  EXPECT_EQ(r.actions[0].action.name, "respond");
  EXPECT_EQ(json::parse(r.actions[0].action.arguments_json), json({{"content", "Which colour would you like?"}}));
  EXPECT_EQ(r.actions[0].observation, "Something red, please.");
  EXPECT_EQ(user.heard, std::vector<std::string>{"Which colour would you like?"});
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  EXPECT_EQ(r.prompt_tokens, 11 + 13 + 17);
  EXPECT_EQ(r.completion_tokens, 7 + 9 + 3);
  llm::Usage u = fx.llm.ledger.task("test/0", llm::Role::kAgent);
  EXPECT_EQ(u.calls, 3);
  EXPECT_EQ(u.prompt_tokens, 41);
  EXPECT_EQ(u.completion_tokens, 19);

  ASSERT_EQ(fx.llm.server.n_requests(), 3u);
  json first = fx.body(0);
  EXPECT_EQ(first["messages"][0]["content"], fc_system_prompt(data::Track::kMultiTurn, 10));
  // After the text reply: the assistant's text, then the user's answer as a user message.
  json second = fx.body(1)["messages"];
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[2]["role"], "assistant");
  EXPECT_EQ(second[2]["content"], "Which colour would you like?");
  EXPECT_FALSE(second[2].contains("tool_calls"));
  EXPECT_EQ(second[3], json({{"role", "user"}, {"content", "Something red, please."}}));
  // After the tool call: the assistant's call, then the tool's result as a tool message.
  json third = fx.body(2)["messages"];
  ASSERT_EQ(third.size(), 6u);
  EXPECT_EQ(third[4]["role"], "assistant");
  EXPECT_TRUE(third[4]["content"].is_null());
  ASSERT_EQ(third[4]["tool_calls"].size(), 1u);
  EXPECT_EQ(third[4]["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(third[4]["tool_calls"][0]["function"]["arguments"], kSearchArgs);
  EXPECT_EQ(third[5]["role"], "tool");
  EXPECT_EQ(third[5]["tool_call_id"], "call_a");
  EXPECT_EQ(third[5]["name"], "search_product_by_query");
  EXPECT_EQ(third[5]["content"], r.actions[1].observation);
  EXPECT_TRUE(r.actions[1].observation.starts_with("['Product 0: \\n")) << r.actions[1].observation;
}

TEST(FcAgent, SingleTurnTextReplyEndsUnscored) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::text("Could you tell me your budget?"));
  runner::EpisodeResult r = fx.run(*f, task(0));
  EXPECT_EQ(r.ending, "respond");
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.attempts[0].result_acc, 0.0);
  EXPECT_EQ(r.actions[0].observation, "Error: ###STOP###");
}

TEST(FcAgent, OnlyTheFirstToolCallIsUsedAndKept) {
  Fixture fx;
  auto f = fx.factory();
  json calls = json::array(
      {{{"id", "call_1"}, {"type", "function"}, {"function", {{"name", "search_product_by_query"}, {"arguments", kSearchArgs}}}},
       {{"id", "call_2"}, {"type", "function"}, {"function", {{"name", "add_product_review"}, {"arguments", R"({"review": "x"})"}}}}});
  json body = {{"id", "chatcmpl-2"}, {"object", "chat.completion"}, {"created", 0}, {"model", "m"},
               {"choices", json::array({{{"index", 0},
                                         {"message", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}}},
                                         {"finish_reason", "tool_calls"}}})},
               {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 4}, {"total_tokens", 9}}}};
  ScriptedReply two;
  two.body = body.dump();
  fx.llm.server.push(two);
  fx.llm.server.push(ScriptedReply::tool_call("stop", "{}", "call_3"));
  runner::EpisodeResult r = fx.run(*f, task(0), data::Track::kMultiTurn, nullptr);
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[0].action.name, "search_product_by_query");
  EXPECT_EQ(r.actions[1].action.name, "stop");
  EXPECT_EQ(r.attempts.size(), 1u);
  json msgs = fx.body(1)["messages"];
  ASSERT_EQ(msgs.size(), 4u);
  ASSERT_EQ(msgs[2]["tool_calls"].size(), 1u);
  EXPECT_EQ(msgs[2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(msgs[3]["tool_call_id"], "call_1");
}

TEST(FcAgent, MalformedArgumentsAreTheAgentsFailure) {
  Fixture fx;
  auto f = fx.factory();
  const std::string bad = R"({"query": "red kettle")";  // cut short
  for (int i = 0; i < 3; ++i)  // the client asks again up to invalid_reply_attempts (3) times in all
    fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", bad, "call_x", 10, 2));
  runner::EpisodeResult r = fx.run(*f, task(0));
  EXPECT_EQ(fx.llm.server.n_requests(), 3u);
  EXPECT_EQ(r.ending, "task_function");
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].action.name, "search_product_by_query");
  EXPECT_EQ(r.actions[0].action.arguments_json, bad);
  EXPECT_TRUE(r.actions[0].observation.starts_with("Error: ")) << r.actions[0].observation;
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.attempts[0].result_acc, 0.0);
  EXPECT_EQ(r.prompt_tokens, 30);  // every re-asked reply is billed
  EXPECT_EQ(r.completion_tokens, 6);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).prompt_tokens, 30);

  // Multi-turn: the loop goes on, and the model sees its call and the Error observation.
  Fixture mt;
  auto g = mt.factory();
  for (int i = 0; i < 3; ++i) mt.llm.server.push(ScriptedReply::tool_call("search_product_by_query", bad, "call_x"));
  mt.llm.server.push(ScriptedReply::tool_call("stop", "{}", "call_y"));
  r = mt.run(*g, task(0), data::Track::kMultiTurn, nullptr);
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 2);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  json msgs = mt.body(3)["messages"];
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[2]["tool_calls"][0]["function"]["arguments"], bad);
  EXPECT_EQ(msgs[3]["role"], "tool");
  EXPECT_TRUE(msgs[3]["content"].get<std::string>().starts_with("Error: "));
}

TEST(FcAgent, UnknownToolContinuesTheLoop) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::tool_call("teleport", "{}", "call_t"));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "call_s"));
  runner::EpisodeResult r = fx.run(*f, task(0));
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 2);
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[0].observation, "Unknown action teleport");
  EXPECT_FALSE(r.actions[0].done);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  json msgs = fx.body(1)["messages"];
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[3], json({{"role", "tool"}, {"content", "Unknown action teleport"}, {"tool_call_id", "call_t"},
                           {"name", "teleport"}}));
}

TEST(FcAgent, ServerFailuresPropagateAsInfraError) {
  Fixture fx;
  auto f = fx.factory();
  for (int i = 0; i < 3; ++i) fx.llm.server.push(ScriptedReply::error(500, "upstream down"));
  auto agent = f->make(task(0));
  try {
    runner::run_episode(fx.env, task(0), *agent, nullptr, {data::Track::kSingleTurn, 10});
    FAIL() << "no InfraError";
  } catch (const llm::InfraError& e) {
    EXPECT_EQ(e.http_status(), 500);
    EXPECT_EQ(e.attempts(), 3);
  }
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 0);
}

TEST(FcAgent, TaskSpecificMemoryWithKeywordClassifier) {
  Fixture fx;
  auto f = fx.factory("taskspec", 2, {{"function_model", "keywords"}});
  auto& fc = dynamic_cast<FcAgentFactory&>(*f);
  EXPECT_EQ(json::parse(f->config_json())["function_model"], "keyword rules");
  MemoryOptions mo;
  mo.k = 2;
  for (uint32_t i : {0u, 1u, 2u}) {
    std::string fn = fc.predicted_function(task(i));
    EXPECT_EQ(fn, env::task_function(task(i).type)) << task(i).instruction;
    for (auto track : {data::Track::kSingleTurn, data::Track::kMultiTurn})
      EXPECT_EQ(fc.system_message(task(i), track),
                taskspec_system_prompt(track, 10) + "\n" + taskspec_memory(ds(), task(i), fn, mo, fx.embedder).text);
  }
  EXPECT_NE(fc.system_message(task(0), data::Track::kSingleTurn)
                .find("\n- Task type: search\n- Complete the task with the search_product_by_query tool\n"
                      "- Task-specific Memory:\nTitle:Red Electric Kettle\n"),
            std::string::npos);
  // Empty history: the plain prompt, no tool hint.
  EXPECT_EQ(fc.system_message(task(3), data::Track::kSingleTurn), fc_system_prompt(data::Track::kSingleTurn, 10));
  // Through an episode.
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  runner::EpisodeResult r = fx.run(*f, task(0));
  EXPECT_EQ(fx.body(0)["messages"][0]["content"], fc.system_message(task(0), data::Track::kSingleTurn));
  EXPECT_DOUBLE_EQ(r.attempts.at(0).result_acc, 0.5);
}

TEST(FcAgent, TaskSpecificMemoryFromAFunctionFileWithUnknownTools) {
  Fixture fx;
  std::filesystem::path file = fx.cache / "functions.json";
  std::ofstream(file) << json({{"I need a new electric kettle", {"teleport_product"}},
                               {"Recommend me something to go with my shirt", "get_recommendations_by_history"},
                               {"Please write a review of this kettle for me", 42}})
                             .dump();
  auto f = fx.factory("taskspec", 2, {{"function_file", file.string()}, {"function_model", "keywords"}});
  auto& fc = dynamic_cast<FcAgentFactory&>(*f);
  EXPECT_EQ(fc.options().function_model, FunctionModel::kFile);
  EXPECT_TRUE(json::parse(f->config_json())["function_model"].get<std::string>().starts_with("file "));
  const std::string plain = fc_system_prompt(data::Track::kSingleTurn, 10);
  // docs/decisions.md D3: an unknown tool, an unusable value or a missing instruction is no memory, never review, never
  // a crash.
  EXPECT_EQ(fc.system_message(task(0), data::Track::kSingleTurn), plain);
  EXPECT_EQ(fc.system_message(task(2), data::Track::kSingleTurn), plain);
  EXPECT_EQ(fc.system_message(task(3), data::Track::kSingleTurn), plain);
  EXPECT_NE(fc.system_message(task(1), data::Track::kSingleTurn).find("- Task type: recommend\n"), std::string::npos);
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  EXPECT_NO_THROW(fx.run(*f, task(0)));
}

TEST(FcAgent, TaskSpecificMemoryWithFastTextClassifier) {
  // The synthetic mini dataset has train tasks, so the default function model is the heuristic's fastText one.
  static const data::Dataset mini = data::synthesize(data::SynthOptions{});
  embed::HashingEmbedder embedder;
  ServerLlm llm;
  pwab::test::TempDir cache;
  AgentContext c = fctest::context_of(&mini, &embedder, cache.path(), 1);
  c.llm = llm.access();
  AgentOptions o;
  o.memory = "taskspec";
  auto f = make_agent_factory("fc", o, c);
  auto& fc = dynamic_cast<FcAgentFactory&>(*f);
  EXPECT_TRUE(json::parse(f->config_json())["function_model"].get<std::string>().starts_with("fasttext "));
  auto classifier = FunctionClassifier::open_or_train(mini, cache.path());  // the cached model
  int with_memory = 0, correct = 0;
  const auto& tasks = mini.tasks(data::Split::kTest);
  for (std::size_t i = 0; i < std::min<std::size_t>(tasks.size(), 20); ++i) {
    const data::Task& t = tasks[i];
    std::string fn = fc.predicted_function(t);
    EXPECT_EQ(fn, classifier->predict(t.instruction).function);
    correct += fn == env::task_function(t.type);
    MemoryOptions mo;  // k = 10, full pretty_history retrieval text
    TaskSpecMemory m = taskspec_memory(mini, t, fn, mo, embedder);
    std::string expected = m.text == "none" ? fc_system_prompt(data::Track::kSingleTurn, 10)
                                            : taskspec_system_prompt(data::Track::kSingleTurn, 10) + "\n" + m.text;
    EXPECT_EQ(fc.system_message(t, data::Track::kSingleTurn), expected);
    if (m.text != "none") {
      ++with_memory;
      EXPECT_LE(m.items.size(), 10u);
      EXPECT_EQ(m.items.size(), std::min<std::size_t>(10, mini.visible_history(t).size()));
    }
  }
  EXPECT_GT(with_memory, 10);
  EXPECT_GE(correct, 15);
}

TEST(FcAgent, TaskSpecificMemoryWithAnLlmFunctionModel) {
  // `function_model=llm`: the episode's model is asked first (a chat request with the routing prompt); its
  // answer picks the memory, and its tokens count with the first step and under the task in the ledger.
  Fixture fx;
  auto f = fx.factory("taskspec", 2, {{"function_model", "llm"}});
  EXPECT_EQ(json::parse(f->config_json())["function_model"], "llm gpt-4o-mini/pwab-function-choice/1");
  auto& fc = dynamic_cast<FcAgentFactory&>(*f);
  EXPECT_THROW(fc.system_message(task(0), data::Track::kSingleTurn), UsageError);  // needs the episode's model
  fx.llm.server.push(ScriptedReply::text("I would use get_recommendations_by_history here.", 60, 9));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "call_1", 100, 10));
  runner::EpisodeResult r = fx.run(*f, task(0));
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.prompt_tokens, 160);
  EXPECT_EQ(r.completion_tokens, 19);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 2);
  json routing = fx.body(0);
  EXPECT_EQ(routing["messages"][0]["content"], function_choice_prompt());
  EXPECT_EQ(routing["messages"][1]["content"], task(0).instruction);
  EXPECT_FALSE(routing.contains("tools"));
  EXPECT_EQ(fx.body(1)["messages"][0]["content"],
            fc.system_message(task(0), data::Track::kSingleTurn, "get_recommendations_by_history"));
  EXPECT_NE(fx.body(1)["messages"][0]["content"].get<std::string>().find("- Task type: recommend\n"),
            std::string::npos);
}

}  // namespace
}  // namespace pwab::agents
