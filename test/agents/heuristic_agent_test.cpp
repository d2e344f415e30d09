// The heuristic agent through the runner on the mini synthetic dataset with the real services: the registry and
// its options, one call per task in single-turn, no reading of the target, clue folding and stopping with the
// scripted user in multi-turn, determinism, and the key claim: task-specific memory beats no memory on R. Acc.
#include "agents/heuristic_agent.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <thread>

#include "core/error.h"
#include "env/tools.h"
#include "sim/scripted_user.h"
#include "world.h"

namespace pwab::agents {
namespace {

using test::mini_world;
using test::run_split;

//! One factory per memory setting, sharing the world's fastText embedder (retrieval and rewards, as `pwab run`
//! uses one embedder for both).
struct Factories {
  pwab::test::TempDir cache;
  std::unique_ptr<AgentFactory> taskspec, none;
  Factories() {
    auto& w = mini_world();
    AgentContext c{.ds = &w.ds, .embedder = w.fasttext.get(), .cache_dir = cache.path(), .seed = 1};
    taskspec = make_agent_factory("heuristic", {}, c);
    AgentOptions o;
    o.memory = "none";
    none = make_agent_factory("heuristic", o, c);
  }
};
Factories& factories() {
  static Factories f;
  return f;
}

nlohmann::json args(const env::ActionRecord& a) { return nlohmann::json::parse(a.action.arguments_json); }

TEST(HeuristicRegistry, NamesAndOptions) {
  auto agents = list_agents();
  ASSERT_FALSE(agents.empty());
  EXPECT_EQ(agents[0].name, "heuristic");
  auto& w = mini_world();
  pwab::test::TempDir cache;
  AgentContext c{.ds = &w.ds, .embedder = w.fasttext.get(), .cache_dir = cache.path(), .seed = 1};
  EXPECT_THROW(make_agent_factory("gpt-9", {}, c), UsageError);
  AgentOptions bad_memory;
  bad_memory.memory = "relevant";
  EXPECT_THROW(make_agent_factory("heuristic", bad_memory, c), UsageError);
  AgentOptions bad_key;
  bad_key.extra["temperature"] = "0";
  EXPECT_THROW(make_agent_factory("heuristic", bad_key, c), UsageError);
  AgentOptions bad_value;
  bad_value.extra["search_memory_brand"] = "maybe";
  EXPECT_THROW(make_agent_factory("heuristic", bad_value, c), UsageError);
  AgentOptions zero;
  zero.memory_length = 0;
  EXPECT_THROW(make_agent_factory("heuristic", zero, c), UsageError);
  AgentContext no_embedder{.ds = &w.ds, .embedder = nullptr, .cache_dir = cache.path(), .seed = 1};
  EXPECT_THROW(make_agent_factory("heuristic", {}, no_embedder), UsageError);
  AgentOptions none;
  none.memory = "none";
  EXPECT_NO_THROW(make_agent_factory("heuristic", none, no_embedder));  // no memory needs no embedder

  AgentOptions o;
  o.memory_length = 5;
  o.extra["search_memory_brand"] = "true";
  auto f = make_agent_factory("heuristic", o, c);
  EXPECT_EQ(f->name(), "heuristic");
  EXPECT_FALSE(f->react_style());
  auto config = nlohmann::json::parse(f->config_json());
  EXPECT_EQ(config["memory"], "taskspec");
  EXPECT_EQ(config["memory_length"], 5);
  EXPECT_EQ(config["search_memory_brand"], true);
  EXPECT_EQ(config["embedder"], w.fasttext->name());
  EXPECT_EQ(config["max_steps"], 10);
  c.max_steps = 4;
  EXPECT_EQ(nlohmann::json::parse(make_agent_factory("heuristic", o, c)->config_json())["max_steps"], 4);
  o.extra["max_steps"] = "3";  // an explicit option wins
  EXPECT_EQ(nlohmann::json::parse(make_agent_factory("heuristic", o, c)->config_json())["max_steps"], 3);
  EXPECT_TRUE(config["function_classifier"].get<std::string>().starts_with("fasttext "));
}

TEST(HeuristicAgent, OneCallPerTaskWithTheRightArguments) {
  auto& w = mini_world();
  auto run = run_split(w, *factories().taskspec, data::Split::kTest, data::Track::kSingleTurn, *w.fasttext);
  const auto& tasks = w.ds.tasks(data::Split::kTest);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto& ep = run.episodes[i];
    ASSERT_EQ(ep.actions.size(), 1u);
    EXPECT_EQ(ep.ending, "task_function");
    const auto& a = ep.actions[0];
    auto j = args(a);
    if (a.action.name == env::kSearch) {
      EXPECT_FALSE(j["query"].get<std::string>().empty());
    } else if (a.action.name == env::kRecommend) {
      auto seq = j["product_sequence"].get<std::vector<std::string>>();
      auto history = w.ds.visible_history(tasks[i]);
      EXPECT_EQ(seq.size(), std::min<std::size_t>(30, history.size()));
      if (!history.empty()) {
        EXPECT_EQ(seq.back(), w.ds.product(history.back()->product).parent_asin);
      }
    } else {
      ASSERT_EQ(a.action.name, env::kAddReview);
      EXPECT_NE(j["review"].get<std::string>(), tasks[i].target_review.text);
    }
  }
  // The no-memory variant has no history: an empty recommendation input.
  auto none = run_split(w, *factories().none, data::Split::kTest, data::Track::kSingleTurn, *w.fasttext);
  for (const auto& ep : none.episodes)
    if (ep.actions[0].action.name == env::kRecommend) {
      EXPECT_EQ(args(ep.actions[0])["product_sequence"].size(), 0u);
    }
}

TEST(HeuristicAgent, NeverReadsTheTarget) {
  auto& w = mini_world();
  for (const auto& real : w.ds.tasks(data::Split::kTest)) {
    data::Task blind = real;  // same instruction, user and time; another target
    blind.target_product = (real.target_product + 1) % static_cast<data::ProductId>(w.ds.products().size());
    blind.target_review.text = "nothing";
    auto a = factories().taskspec->make(real);
    auto b = factories().taskspec->make(blind);
    std::string obs = env::initial_observation(w.ds, real);  // the review product is what the user shows
    a->begin(real, obs, data::Track::kSingleTurn);
    b->begin(blind, obs, data::Track::kSingleTurn);
    auto sa = a->next(""), sb = b->next("");
    EXPECT_EQ(sa.action.name, sb.action.name);
    EXPECT_EQ(sa.action.arguments_json, sb.action.arguments_json);
  }
}

TEST(HeuristicAgent, Deterministic) {
  auto& w = mini_world();
  auto a = run_split(w, *factories().taskspec, data::Split::kTest, data::Track::kMultiTurn, *w.fasttext);
  auto b = run_split(w, *factories().taskspec, data::Split::kTest, data::Track::kMultiTurn, *w.fasttext);
  ASSERT_EQ(a.episodes.size(), b.episodes.size());
  for (std::size_t i = 0; i < a.episodes.size(); ++i) {
    ASSERT_EQ(a.episodes[i].actions.size(), b.episodes[i].actions.size());
    for (std::size_t k = 0; k < a.episodes[i].actions.size(); ++k)
      EXPECT_EQ(a.episodes[i].actions[k].action.arguments_json, b.episodes[i].actions[k].action.arguments_json);
  }
}

//! Episodes run from several threads at once (as `pwab run`'s workers do) act exactly as run one by one; the
//! first episodes of a user race to fill the shared embedding cache.
TEST(HeuristicAgent, ThreadSafe) {
  auto& w = mini_world();
  pwab::test::TempDir cache;
  AgentContext c{.ds = &w.ds, .embedder = &w.hashing, .cache_dir = cache.path(), .seed = 1};
  auto factory = make_agent_factory("heuristic", {}, c);
  const auto& tasks = w.ds.tasks(data::Split::kTest);
  std::vector<std::string> parallel(tasks.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < tasks.size(); i += 4) {
        auto agent = factory->make(tasks[i]);
        agent->begin(tasks[i], env::initial_observation(w.ds, tasks[i]), data::Track::kSingleTurn);
        parallel[i] = agent->next("").action.arguments_json;
      }
    });
  for (auto& th : threads) th.join();
  auto serial = run_split(w, *factory, data::Split::kTest, data::Track::kSingleTurn, w.hashing);
  for (std::size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(parallel[i], serial.episodes[i].actions[0].action.arguments_json);
}

TEST(HeuristicAgent, MultiTurnFoldsHintsAndStops) {
  auto& w = mini_world();
  env::Environment environment(w.ds, w.search.get(), w.recommend.get(), *w.fasttext);
  int folded = 0, satisfied_stops = 0, n_search = 0;
  std::vector<const data::Task*> tasks;
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : w.ds.tasks(split))
      if (t.type == data::TaskType::kSearch) tasks.push_back(&t);
  for (const data::Task* tp : tasks) {
    const data::Task& task = *tp;
    ++n_search;
    sim::ScriptedUser user(w.ds, task, 7);
    auto agent = factories().taskspec->make(task);
    auto r = runner::run_episode(environment, task, *agent, &user, {data::Track::kMultiTurn, 10});
    ASSERT_GE(r.actions.size(), 2u);
    EXPECT_EQ(r.actions[0].action.name, env::kSearch);
    EXPECT_EQ(r.actions[1].action.name, env::kRespond);  // it asks for feedback
    EXPECT_LE(r.steps, 10);
    for (std::size_t k = 1; k + 1 < r.actions.size(); ++k) {
      // A hint that names the brand reaches the next query.
      const auto& obs = r.actions[k].observation;
      auto from = obs.find("I'd like it to be from ");
      if (r.actions[k].action.name != env::kRespond || from == std::string::npos) continue;
      std::string brand = obs.substr(from + 23);
      brand = brand.substr(0, brand.find_first_of(".!"));
      ASSERT_EQ(r.actions[k + 1].action.name, env::kSearch) << obs;
      EXPECT_NE(args(r.actions[k + 1])["query"].get<std::string>().find(brand), std::string::npos);
      ++folded;
    }
    // Satisfied: the user says so and the agent stops right away.
    const auto& last = r.actions.back();
    if (last.action.name == env::kStop && r.actions.size() >= 2 &&
        r.actions[r.actions.size() - 2].observation.find("we can stop") != std::string::npos)
      ++satisfied_stops;
    EXPECT_EQ(r.ending, last.action.name == env::kStop ? "stop" : "step_cap");
  }
  std::cout << "[ multi-turn ] " << n_search << " search tasks (train and test): " << satisfied_stops << " stopped when satisfied, "
            << folded << " brand hints folded into the next query\n";
  EXPECT_GT(folded, 0);
  EXPECT_GT(satisfied_stops, n_search / 2);
  // A tight step budget: the agent never wastes its last step on a question.
  AgentContext c{.ds = &w.ds, .embedder = w.fasttext.get(), .cache_dir = factories().cache.path(), .seed = 1};
  c.max_steps = 2;  // the run's cap reaches the agent through its context
  auto tight = make_agent_factory("heuristic", {}, c);
  for (const auto& task : w.ds.tasks(data::Split::kTest)) {
    sim::ScriptedUser user(w.ds, task, 7);
    auto agent = tight->make(task);
    auto r = runner::run_episode(environment, task, *agent, &user, {data::Track::kMultiTurn, 2});
    ASSERT_EQ(r.actions.size(), 2u);
    EXPECT_EQ(r.actions[1].action.name, env::kStop);
  }
}

//! The acceptance test: on the mini dataset's test split the heuristic with task-specific memory beats
//! the same policy without memory on overall R. Acc, single- and multi-turn, whether the run's embedder (memory
//! retrieval and review rewards) is the offline fastText one or the hashing one.
TEST(HeuristicAgent, MemoryBeatsNoMemory) {
  auto& w = mini_world();
  std::cout << "[ world ] index " << w.seconds_index << " s, SASRec " << w.seconds_rec << " s, fastText "
            << w.seconds_fasttext << " s\n";
  pwab::test::TempDir cache;
  for (const embed::Embedder* e : {static_cast<const embed::Embedder*>(w.fasttext.get()),
                                   static_cast<const embed::Embedder*>(&w.hashing)}) {
    AgentContext c{.ds = &w.ds, .embedder = e, .cache_dir = cache.path(), .seed = 1};
    AgentOptions none;
    none.memory = "none";
    auto with_memory = make_agent_factory("heuristic", {}, c);
    auto without_memory = make_agent_factory("heuristic", none, c);
    for (data::Track track : {data::Track::kSingleTurn, data::Track::kMultiTurn}) {
      auto with = run_split(w, *with_memory, data::Split::kTest, track, *e);
      auto without = run_split(w, *without_memory, data::Split::kTest, track, *e);
      std::string name = e->name().substr(0, e->name().find('/')) + (track == data::Track::kSingleTurn ? " single" : " multi");
      std::cout << "[ " << name << " ] taskspec " << test::describe(with.summary) << " | "
                << with.seconds * 1000 / static_cast<double>(with.episodes.size()) << " ms/task (agent "
                << with.seconds_agent * 1000 / static_cast<double>(with.episodes.size()) << ")\n";
      std::cout << "[ " << name << " ] none     " << test::describe(without.summary) << "\n";
      EXPECT_GT(with.summary.overall.r_acc.value, without.summary.overall.r_acc.value + 0.005) << name;
      EXPECT_GE(with.summary.overall.f_acc.value, 0.95);
      if (track == data::Track::kSingleTurn) {
        EXPECT_LT(with.seconds_agent / static_cast<double>(with.episodes.size()), 0.005);
      }
    }
  }
}

}  // namespace
}  // namespace pwab::agents
