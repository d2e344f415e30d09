// The RecMind agent against the real HTTP client and the loopback OpenAI server: the registry and options, the
// prompts, its compact memory, and the details tool (its observation comes back, the loop goes on, and the task
// function that follows is scored).
#include "agents/recmind_agent.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "env/tools.h"
#include "fc_test_util.h"
#include "support/test_support.h"

namespace pwab::agents {
namespace {

using json = nlohmann::json;
using fctest::KeywordEmbedder;
using fctest::ServerLlm;
using pwab::test::ScriptedReply;

const data::Dataset& ds() { return fctest::tiny_dataset(); }
const data::Task& task(uint32_t i) { return fctest::tiny_task(i); }

constexpr const char* kSearchArgs = R"({"query": "red electric kettle"})";

struct Fixture : fctest::AgentWorld {
  std::unique_ptr<AgentFactory> factory(int k = 10, std::map<std::string, std::string> extra = {}) {
    AgentOptions o;
    o.memory_length = k;
    o.extra = std::move(extra);
    return make_agent_factory("recmind", o, context());
  }
};

int count_rules(const std::string& prompt) {
  int n = 0;
  for (std::size_t p = prompt.find("\n- "); p != std::string::npos; p = prompt.find("\n- ", p + 1)) ++n;
  return n;
}

TEST(RecMindAgent, RegisteredAndOptions) {
  bool found = false;
  for (const auto& a : list_agents())
    if (a.name == "recmind") found = a.paper_row == "RecMind";
  EXPECT_TRUE(found);
  Fixture fx;
  json config = json::parse(fx.factory(4)->config_json());
  EXPECT_EQ(config["agent"], "recmind");
  EXPECT_EQ(config["memory_length"], 4);
  EXPECT_EQ(config["prompts"], std::string(kRecMindPromptsVersion));
  AgentOptions bad;
  bad.memory = "last";
  EXPECT_THROW(parse_recmind_options(bad), UsageError);
  bad = {};
  bad.extra["nope"] = "1";
  EXPECT_THROW(parse_recmind_options(bad), UsageError);
  bad = {};
  bad.extra["max_steps"] = "0";
  EXPECT_THROW(parse_recmind_options(bad), UsageError);
  AgentContext no_llm = fctest::context_of(&ds(), nullptr, {}, 1);
  EXPECT_THROW(make_agent_factory("recmind", {}, no_llm), UsageError);
}

TEST(RecMindAgent, PromptLayouts) {
  std::string st = recmind_system_prompt(data::Track::kSingleTurn, 10);
  std::string mt = recmind_system_prompt(data::Track::kMultiTurn, 7);
  EXPECT_EQ(count_rules(st), 7);
  EXPECT_EQ(count_rules(mt), 12);
  EXPECT_NE(st.find("\n\nRules:\n- "), std::string::npos);
  EXPECT_NE(st.find("get_product_details_by_asin"), std::string::npos);
  EXPECT_NE(mt.find("at most 7 steps"), std::string::npos);
  EXPECT_EQ(st.back(), '\n');
  EXPECT_EQ(mt.back(), '\n');
}

TEST(RecMindAgent, MemoryRendering) {
  // Task 0 sees five items; newest first with ties in stored order: kettle 2 (500), socks (500), kettle 1, ...
  std::string m = recmind_memory(ds(), task(0), 2);
  EXPECT_EQ(m,
            "\nAll that you know about this user (every purchase and review they have made):\n\n"
            "\nMEMORY 0:\nProduct:\n- Title: Steel Electric Kettle\n- Parent Asin: B0KETTLE02\n- Main Category: Amazon "
            "Home\nReview:\n- Rating: 4.0\n- Text: Solid kettle, a bit loud.\n- Timestamp: 500\n"
            "\n"
            "\nMEMORY 1:\nProduct:\n- Title: Wool Socks\n- Parent Asin: B0SOCKS001\n- Main Category: AMAZON "
            "FASHION\nReview:\n- Rating: 2.0\n- Text: Itchy socks.\n- Timestamp: 500\n");
  std::string all = recmind_memory(ds(), task(0), 10);
  EXPECT_NE(all.find("\nMEMORY 4:\n"), std::string::npos);
  EXPECT_EQ(all.find("\nMEMORY 5:\n"), std::string::npos);  // the mug at time 2000 is not visible
  EXPECT_EQ(recmind_memory(ds(), task(3), 10), std::string(recmind_memory_header()));  // empty history
}

TEST(RecMindAgent, DetailsToolThenScoredTaskFunction) {
  Fixture fx;
  auto f = fx.factory(3);
  fx.llm.server.push(ScriptedReply::tool_call("get_product_details_by_asin", R"({"product_asin": "B0KETTLE01"})",
                                              "call_d", 30, 5));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "call_s", 40, 6));
  auto agent = f->make(task(0));
  runner::EpisodeResult r = runner::run_episode(fx.env, task(0), *agent, nullptr, {data::Track::kSingleTurn, 10});

  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 2);
  ASSERT_EQ(r.attempts.size(), 1u);  // the details call is not scored
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);
  EXPECT_EQ(r.prompt_tokens, 70);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 2);

  ASSERT_EQ(fx.llm.server.n_requests(), 2u);
  json first = fx.body(0);
  EXPECT_EQ(first["tools"], json::parse(env::tools_json(true)));
  EXPECT_EQ(first["tools"].size(), 5u);
  EXPECT_EQ(first["messages"][0]["content"],
            recmind_system_prompt(data::Track::kSingleTurn, 10) + recmind_memory(ds(), task(0), 3));
  json second = fx.body(1)["messages"];
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[2]["tool_calls"][0]["function"]["name"], "get_product_details_by_asin");
  EXPECT_EQ(second[3]["role"], "tool");
  EXPECT_EQ(second[3]["tool_call_id"], "call_d");
  std::string details = second[3]["content"];
  EXPECT_EQ(details.rfind("\nProduct Details:\n- Title: Red Electric Kettle\n- Parent Asin: B0KETTLE01\n", 0), 0u)
      << details;
}

TEST(RecMindAgent, UnknownAsinInDetailsKeepsGoingInMultiTurn) {
  Fixture fx;
  auto f = fx.factory(10, {{"max_steps", "4"}});
  fx.llm.server.push(ScriptedReply::tool_call("get_product_details_by_asin", R"({"product_asin": "B0NOPE"})", "c1"));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "c2"));
  fx.llm.server.push(ScriptedReply::tool_call("stop", "{}", "c3"));
  auto agent = f->make(task(0));
  fctest::FixedUser user({"Thanks"});
  runner::EpisodeResult r = runner::run_episode(fx.env, task(0), *agent, &user, {data::Track::kMultiTurn, 4});
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(fx.body(1)["messages"][3]["content"], "Product not found.");
  EXPECT_EQ(fx.body(0)["messages"][0]["content"],
            recmind_system_prompt(data::Track::kMultiTurn, 4) + recmind_memory(ds(), task(0), 10));
}

}  // namespace
}  // namespace pwab::agents
