// The InteRecAgent agent against the real HTTP client and the loopback OpenAI server: the profile rules, the
// heuristic and LLM initializations, updates from valid and invalid replies, the memory in the prompt, a run at
// concurrency 4 that equals the serial run (docs/decisions.md D10), and save / resume without applying a task twice.
#include "agents/interec_agent.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"
#include "env/tools.h"
#include "fc_test_util.h"
#include "runner/run.h"
#include "support/test_support.h"

namespace pwab::agents {
namespace {

using json = nlohmann::json;
using fctest::KeywordEmbedder;
using fctest::ServerLlm;
using pwab::test::ReceivedRequest;
using pwab::test::ScriptedReply;

//! The tiny dataset plus eight more test tasks (4..11), alternating between AUSER and BNEW.
const data::Dataset& ds() {
  static const data::Dataset d = [] {
    data::Dataset x = fctest::tiny();
    for (int i = 0; i < 8; ++i) {
      data::Task t = x.tasks(data::Split::kTest)[0];
      t.index = static_cast<uint32_t>(x.tasks(data::Split::kTest).size());
      t.user = static_cast<data::UserId>(i % 2);
      t.instruction = "Find item number " + std::to_string(t.index);
      x.add_task(t);
    }
    return x;
  }();
  return d;
}
const data::Task& task(uint32_t i) { return ds().tasks(data::Split::kTest)[i]; }
std::vector<const data::Task*> all_tasks() {
  std::vector<const data::Task*> out;
  for (const auto& t : ds().tasks(data::Split::kTest)) out.push_back(&t);
  return out;
}

constexpr const char* kSearchArgs = R"({"query": "red electric kettle"})";

struct Fixture : fctest::AgentWorld {
  Fixture() : AgentWorld(ds()) {}
  pwab::test::TempDir& dir = cache;

  std::unique_ptr<InterecAgentFactory> factory(std::string init, std::string memory_file = "") {
    AgentOptions o;
    o.extra["interec_init"] = std::move(init);
    if (!memory_file.empty()) o.extra["interec_memory"] = memory_file;
    return std::make_unique<InterecAgentFactory>(parse_interec_options(o), context());
  }
  // AgentWorld::run destroys the agent at the end of the call: the memory update happens then.
};

TEST(InterecAgent, RegisteredAndOptions) {
  bool found = false;
  for (const auto& a : list_agents())
    if (a.name == "interecagent") found = a.paper_row == "InteRecAgent";
  EXPECT_TRUE(found);
  AgentOptions o;
  o.extra["interec_init"] = "magic";
  EXPECT_THROW(parse_interec_options(o), UsageError);
  o = {};
  o.memory = "last";
  EXPECT_THROW(parse_interec_options(o), UsageError);
  o = {};
  o.extra["what"] = "x";
  EXPECT_THROW(parse_interec_options(o), UsageError);
  o = {};
  InterecOptions d = parse_interec_options(o);
  EXPECT_EQ(d.init, InterecInit::kLlm);
  EXPECT_TRUE(d.memory_file.empty());
}

TEST(InterecAgent, UpdateRuleWithOrderedSetsAndExpectCap) {
  InterecProfile p{{"A", "B"}, {"C"}, {}};
  apply_interec_update(p, {{"C", "D", "A"}, {"B"}, {"x", "y"}});
  EXPECT_EQ(p.like, (std::vector<std::string>{"A", "C", "D"}));
  EXPECT_EQ(p.dislike, (std::vector<std::string>{"B"}));
  EXPECT_EQ(p.expect, (std::vector<std::string>{"x", "y"}));
  for (int i = 0; i < 35; ++i) apply_interec_update(p, {{}, {}, {"e" + std::to_string(i)}});
  ASSERT_EQ(p.expect.size(), kInterecExpectCap);
  EXPECT_EQ(p.expect.front(), "e5");
  EXPECT_EQ(p.expect.back(), "e34");
}

TEST(InterecAgent, ParsesProfilesAndRejectsOthers) {
  auto p = parse_interec_profile("```json\n{\"like\": [\"A\"],\n\"dislike\": [], \"expect\": [\"books\"]}\n```", false);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, (InterecProfile{{"A"}, {}, {"books"}}));
  auto q = parse_interec_profile("Here you go: {\"like\": [\"B\"], \"dislike\": [\"C\"]}", true);
  ASSERT_TRUE(q);
  EXPECT_EQ(*q, (InterecProfile{{"B"}, {"C"}, {}}));
  EXPECT_FALSE(parse_interec_profile("Here you go: {\"like\": [\"B\"]}", false));
  EXPECT_FALSE(parse_interec_profile("{\"like\": \"B\"}", false));
  EXPECT_FALSE(parse_interec_profile("[1, 2]", false));
  EXPECT_FALSE(parse_interec_profile("no braces", true));
}

TEST(InterecAgent, HeuristicInitAndMemoryRendering) {
  // All of AUSER's behaviours are history-split (no time cut): 5 likes, 3 skipped, 4 likes, 5 likes, 2 dislikes.
  InterecProfile p = heuristic_interec_profile(ds(), 0);
  EXPECT_EQ(p, (InterecProfile{{"B0KETTLE01", "B0KETTLE02", "B0MUG00001"}, {"B0SOCKS001"}, {}}));
  EXPECT_EQ(heuristic_interec_profile(ds(), 1), (InterecProfile{{"B0MUG00001"}, {}, {}}));
  EXPECT_EQ(interec_memory(ds(), task(0), p, 1),
            "\n\nWhat you know about this user:\nHistory:\n"
            "\n- Title: Steel Electric Kettle\n- Parent Asin: B0KETTLE02\n- Main Category: Amazon Home\n- Rating: 4.0\n"
            "- Text: Solid kettle, a bit loud.\n"
            "\nLike:\n['B0KETTLE01', 'B0KETTLE02', 'B0MUG00001']\nDislike:\n['B0SOCKS001']\nExpect:\n[]");
  std::string two = interec_memory(ds(), task(0), {}, 2);
  EXPECT_NE(two.find("a bit loud.\n\n\n- Title: Wool Socks"), std::string::npos);
  EXPECT_EQ(interec_memory(ds(), task(3), {}, 10),
            "\n\nWhat you know about this user:\nHistory:\n\nLike:\n[]\nDislike:\n[]\nExpect:\n[]");
  std::string st = interec_system_prompt(data::Track::kSingleTurn, 10);
  EXPECT_NE(st.find("at most -1 steps"), std::string::npos);
  EXPECT_NE(interec_system_prompt(data::Track::kMultiTurn, 10).find("at most 10 steps"), std::string::npos);
}

TEST(InterecAgent, LlmInitThenUpdate) {
  Fixture fx;
  auto f = fx.factory("llm");
  fx.llm.server.push(ScriptedReply::text("Sure! ```json\n{\"like\": [\"B0KETTLE01\"],\n \"dislike\": [\"B0SOCKS001\"], "
                                         "\"expect\": [\"dropped\"]}\n```",
                                         50, 10));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs, "call_s", 20, 4));
  fx.llm.server.push(
      ScriptedReply::text(R"({"like": ["B0MUG00001"], "dislike": ["B0KETTLE01"], "expect": ["tea"]})", 30, 6));
  runner::EpisodeResult r = fx.run(*f, task(0));
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.prompt_tokens, 20);  // the episode's own step only

  ASSERT_EQ(fx.llm.server.n_requests(), 3u);
  json init = fx.body(0);
  ASSERT_EQ(init["messages"].size(), 1u);
  EXPECT_EQ(init["messages"][0]["role"], "system");
  EXPECT_EQ(init["temperature"], 0.0);
  EXPECT_EQ(init["max_tokens"], 5000);
  EXPECT_FALSE(init.contains("tools"));
  std::string init_prompt = init["messages"][0]["content"];
  EXPECT_EQ(init_prompt, interec_init_prompt(ds(), 0));
  EXPECT_NE(init_prompt.find("History:\n\nProduct:\n- Title: Red Electric Kettle\n- Parent ASIN: B0KETTLE01\n"
                             "- Categories: ['Home']\nReview:\n- Your Rating: 5.0\n"
                             "- Your Review Text: Boils fast, love this kettle.\n\nProduct:\n"),
            std::string::npos);

  json agent = fx.body(1);
  EXPECT_EQ(agent["tools"], json::parse(env::tools_json(false)));
  InterecProfile initial{{"B0KETTLE01"}, {"B0SOCKS001"}, {}};  // expect emptied on init
  EXPECT_EQ(agent["messages"][0]["content"],
            interec_system_prompt(data::Track::kSingleTurn, 10) + interec_memory(ds(), task(0), initial, 10));

  json update = fx.body(2);
  ASSERT_EQ(update["messages"].size(), 1u);
  EXPECT_FALSE(update.contains("temperature"));
  EXPECT_FALSE(update.contains("tools"));
  std::string up = update["messages"][0]["content"];
  std::string conv =
      "user:USER AUSER: I need a new electric kettle\n"
      "assistant:Function(arguments='{\"query\": \"red electric kettle\"}', name='search_product_by_query')";
  EXPECT_EQ(up, interec_update_prompt(conv));
  EXPECT_NE(up.find("{\"like\": [\"ITEM-100\"], \"dislike\": [\"ITEM-17\", \"ITEM-19\", \"ITEM-30\"], \"expect\": []}"),
            std::string::npos);

  EXPECT_EQ(f->profile(0), (InterecProfile{{"B0MUG00001"}, {"B0SOCKS001", "B0KETTLE01"}, {"tea"}}));
  EXPECT_TRUE(f->applied("test/0"));
  InterecStats s = f->stats();
  EXPECT_EQ(s.n_init_llm, 1);
  EXPECT_EQ(s.n_updates, 1);
  EXPECT_EQ(s.n_update_invalid, 0);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kOther).calls, 2);  // init + update
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 1);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kOther).prompt_tokens, 80);
}

TEST(InterecAgent, InvalidInitAndUpdateRepliesKeepTheOldProfile) {
  Fixture fx;
  auto f = fx.factory("llm");
  fx.llm.server.push(ScriptedReply::text("I cannot do that."));
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  fx.llm.server.push(ScriptedReply::text(R"({"like": ["B0MUG00001"])"));  // cut short: not JSON
  fx.run(*f, task(0));
  EXPECT_EQ(f->profile(0), InterecProfile{});
  InterecStats s = f->stats();
  EXPECT_EQ(s.n_init_invalid, 1);
  EXPECT_EQ(s.n_update_invalid, 1);
  EXPECT_EQ(s.n_updates, 0);
  EXPECT_TRUE(f->applied("test/0"));

  // Heuristic init, an invalid update: the heuristic profile stays.
  Fixture hx;
  auto h = hx.factory("heuristic");
  hx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  hx.llm.server.push(ScriptedReply::text("like: everything"));
  hx.run(*h, task(0));
  EXPECT_EQ(hx.llm.server.n_requests(), 2u);  // no init call
  EXPECT_EQ(h->profile(0), heuristic_interec_profile(ds(), 0));
  EXPECT_EQ(h->stats().n_update_invalid, 1);
}

//! Deterministic replies from the request alone: the agent searches for its prompt's Like list; the update
//! likes "L<w>" and expects "E<w>" for the last word w of the task's instruction.
ScriptedReply scripted(const ReceivedRequest& req) {
  json body = json::parse(req.body);
  std::string system = body["messages"][0]["content"];
  double jitter = static_cast<double>(std::hash<std::string>{}(req.body) % 4) * 0.002;
  if (body.contains("tools")) {
    auto a = system.find("\nLike:\n");
    std::string likes = system.substr(a + 7, system.find("\nDislike:") - a - 7);
    return ScriptedReply::tool_call("search_product_by_query", json{{"query", likes}}.dump()).after(jitter);
  }
  auto u = system.find("user:USER ");
  std::string line = system.substr(u, system.find('\n', u) - u);
  std::string tag = line.substr(line.rfind(' ') + 1);
  return ScriptedReply::text(json{{"like", {"L" + tag}}, {"dislike", json::array()}, {"expect", {"E" + tag}}}.dump())
      .after(jitter);
}

struct RunResult {
  std::string memory;
  std::vector<std::string> records;
  int max_in_flight = 0;
};

RunResult run_all(int concurrency) {
  Fixture fx;
  fx.llm.server.set_chat_handler(scripted);
  std::string file = (fx.dir.path() / "interec_memory.json").string();
  auto f = fx.factory("heuristic", file);
  auto tasks = all_tasks();
  runner::RunManifest m;
  m.config_json = f->config_json();
  runner::RunDirectory dir = runner::RunDirectory::open(fx.dir.path() / "run", m, false);
  f->plan(tasks);
  runner::RunOptions opts;
  opts.concurrency = concurrency;
  opts.episode = {data::Track::kSingleTurn, 10};
  runner::run_tasks(fx.env, tasks, dir, [&](const data::Task& t, int) { return f->make(t); }, nullptr, opts);
  RunResult out;
  out.memory = read_file(file);
  EXPECT_EQ(out.memory, f->memory_json());
  auto records = runner::read_records(fx.dir.path() / "run");
  runner::sort_by_task(records);
  for (auto& r : records) {
    EXPECT_TRUE(r.error.empty()) << r.error;
    r.seconds_env = r.seconds_agent = 0;
    out.records.push_back(r.to_json_line());
  }
  out.max_in_flight = fx.llm.server.max_in_flight();
  return out;
}

TEST(InterecAgent, ConcurrentRunEqualsSerialRun) {
  RunResult serial = run_all(1);
  RunResult concurrent = run_all(4);
  EXPECT_EQ(serial.max_in_flight, 1);
  // Two users: at most two episodes (or an episode and an update) at once; usually two were seen.
  EXPECT_LE(concurrent.max_in_flight, 2);
  RecordProperty("concurrent_max_in_flight", concurrent.max_in_flight);
  EXPECT_EQ(concurrent.memory, serial.memory);
  EXPECT_EQ(concurrent.records, serial.records);
  RunResult two = run_all(2);  // fewer workers than tasks waiting for their turn: no deadlock
  EXPECT_EQ(two.memory, serial.memory);
  EXPECT_EQ(two.records, serial.records);
  ASSERT_EQ(serial.records.size(), 12u);
  json mem = json::parse(serial.memory);
  EXPECT_EQ(mem["applied"].size(), 12u);
  EXPECT_EQ(mem["stats"]["n_updates"], 12);
  // AUSER's tasks in order: 0 ("kettle"), 1 ("shirt"), 2 ("me"), then 4, 6, 8, 10; each update appended its like.
  EXPECT_EQ(mem["users"]["AUSER"]["like"],
            json({"B0KETTLE01", "B0KETTLE02", "B0MUG00001", "Lkettle", "Lshirt", "Lme", "L4", "L6", "L8", "L10"}));
  EXPECT_EQ(mem["users"]["BNEW"]["expect"], json({"Ekettle", "E5", "E7", "E9", "E11"}));
  // Task 10 searched with the likes left by AUSER's six earlier tasks.
  EXPECT_NE(serial.records[10].find(R"(['B0KETTLE01', 'B0KETTLE02', 'B0MUG00001', 'Lkettle', 'Lshirt', 'Lme', 'L4', 'L6', 'L8'])"),
            std::string::npos);
}

TEST(InterecAgent, SavesAndResumesWithoutApplyingTwice) {
  Fixture fx;
  fx.llm.server.set_chat_handler(scripted);
  std::string file = (fx.dir.path() / "m.json").string();
  std::string after_two;
  {
    auto f = fx.factory("heuristic", file);
    f->plan({&task(0), &task(1)});
    fx.run(*f, task(0));
    fx.run(*f, task(1));
    after_two = read_file(file);
    EXPECT_EQ(f->profile(0).like.back(), "Lshirt");
  }
  auto g = fx.factory("heuristic", file);
  EXPECT_EQ(g->memory_json(), after_two);
  EXPECT_TRUE(g->applied("test/1"));
  InterecProfile before = g->profile(0);
  // Task 1 again (its record was lost, say): it runs on the saved profile, but is not applied a second time.
  g->plan(all_tasks());
  std::size_t n = fx.llm.server.n_requests();
  fx.run(*g, task(1));
  EXPECT_EQ(fx.llm.server.n_requests(), n + 1);  // the agent step only, no update call
  EXPECT_EQ(g->profile(0), before);
  EXPECT_EQ(read_file(file), after_two);
  // Task 2 is new: applied once.
  fx.run(*g, task(2));
  EXPECT_EQ(g->profile(0).like.back(), "Lme");
  EXPECT_EQ(g->stats().n_updates, 3);
  EXPECT_NE(read_file(file).find("\"test/2\""), std::string::npos);

  // A file made with the other initialization is refused.
  EXPECT_THROW(fx.factory("llm", file), UsageError);
  write_file_atomic(file, "{}");
  EXPECT_THROW(fx.factory("heuristic", file), UsageError);
}

TEST(InterecAgent, FailedEpisodeReleasesTheTurnWithoutUpdate) {
  Fixture fx;
  auto f = fx.factory("heuristic");
  f->plan({&task(0), &task(1)});
  for (int i = 0; i < 3; ++i) fx.llm.server.push(ScriptedReply::error(500, "down"));
  EXPECT_THROW(fx.run(*f, task(0)), Error);
  EXPECT_FALSE(f->applied("test/0"));
  EXPECT_EQ(f->stats().n_episode_errors, 1);
  // Task 1 is not blocked by the failed task 0.
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  fx.llm.server.push(ScriptedReply::text(R"({"like": ["B0SHIRT001"]})"));
  fx.run(*f, task(1));
  EXPECT_TRUE(f->applied("test/1"));
  EXPECT_EQ(f->profile(0).like.back(), "B0SHIRT001");
}

}  // namespace
}  // namespace pwab::agents

namespace pwab::agents {
namespace {

TEST(InterecAgent, DefaultPlanStopsWaitingForTasksNotInTheRun) {
  // No plan(): every test task is planned, but only task 2 runs (as with --tasks 2:3). Tasks 0 and 1 of the same
  // user never reach make(), so after the grace period task 2 stops waiting for them.
  Fixture fx;
  auto f = fx.factory("heuristic");
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  fx.llm.server.push(ScriptedReply::text(R"({"like": ["B0SHIRT001"]})"));
  auto start = std::chrono::steady_clock::now();
  fx.run(*f, task(2));
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, kInterecGraceSeconds);
  EXPECT_LT(waited, kInterecGraceSeconds + 5);
  EXPECT_TRUE(f->applied("test/2"));
  // A later task of another user that is first in its queue does not wait at all.
  fx.llm.server.push(ScriptedReply::tool_call("search_product_by_query", kSearchArgs));
  fx.llm.server.push(ScriptedReply::text(R"({"like": []})"));
  start = std::chrono::steady_clock::now();
  fx.run(*f, task(3));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

}  // namespace
}  // namespace pwab::agents
