// PUMA's multi-turn SFT examples (puma/dialogue_data.h, issue 40): a teacher's multi-turn episode against the scripted
// user becomes one example per step after the first, whose prompt is exactly the puma agent's prompt at that step (the
// conversation so far, the user's replies included) and whose target is the teacher's action as PUMA writes it; an
// episode with an action PUMA cannot write is left out; the real heuristic teacher converses and stops.
#include "puma/dialogue_data.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agents/fc_test_util.h"
#include "core/error.h"
#include "env/tools.h"
#include "runner/episode.h"
#include "sim/scripted_user.h"
#include "support/test_support.h"

namespace pwab::puma {
namespace {

using json = nlohmann::json;

env::Action act(std::string_view name, json args) { return {std::string(name), args.dump()}; }

TEST(PumaDialogueData, ActionsAsPumaWritesThem) {
  using data::TaskType;
  EXPECT_EQ(puma_text_of_action(act(env::kSearch, {{"query", " red kettle "}}), TaskType::kSearch, 3), "red kettle");
  EXPECT_EQ(puma_text_of_action(act(env::kRespond, {{"content", "Which brand?"}}), TaskType::kSearch, 3),
            "Say: Which brand?");
  EXPECT_EQ(puma_text_of_action(act(env::kStop, json::object()), TaskType::kReview, 3), "stop");
  EXPECT_EQ(puma_text_of_action(act(env::kAddReview, {{"review", "Great."}}), TaskType::kReview, 3), "Great.");
  // the newest ASINs, last in the sequence, are the ones kept
  EXPECT_EQ(puma_text_of_action(act(env::kRecommend, {{"product_sequence", {"A1", "A2", "A3", "A4"}}}),
                                TaskType::kRecommend, 3),
            "A2, A3, A4");
  EXPECT_EQ(puma_text_of_action(act(env::kRecommend, {{"product_sequence", {"A1"}}}), TaskType::kRecommend, 3), "A1");
  // with a numbered memory's references (newest first), an ASIN among them is written as its number
  EXPECT_EQ(puma_text_of_action(act(env::kRecommend, {{"product_sequence", {"A1", "A2", "A9", "A4"}}}),
                                TaskType::kRecommend, 3, {"A4", "A3", "A2", "A1"}),
            "3, A9, 1");
  // what PUMA cannot write: another tool, the wrong task function, a multi-line message, malformed arguments
  EXPECT_FALSE(puma_text_of_action(act(env::kProductDetails, {{"asin", "A1"}}), TaskType::kSearch, 3));
  EXPECT_FALSE(puma_text_of_action(act(env::kSearch, {{"query", "kettle"}}), TaskType::kReview, 3));
  EXPECT_FALSE(puma_text_of_action(act(env::kRespond, {{"content", "one\ntwo"}}), TaskType::kSearch, 3));
  EXPECT_FALSE(puma_text_of_action(act(env::kSearch, {{"query", 7}}), TaskType::kSearch, 3));
  EXPECT_FALSE(puma_text_of_action({std::string(env::kSearch), "{not json"}, TaskType::kSearch, 3));
  EXPECT_FALSE(puma_text_of_action(act(env::kRecommend, {{"product_sequence", json::array()}}), TaskType::kRecommend, 3));
}

// A teacher that plays fixed actions whatever it is told.
class FixedTeacher final : public agents::AgentFactory {
 public:
  explicit FixedTeacher(std::vector<env::Action> actions) : actions_(std::move(actions)) {}
  std::string name() const override { return "fixed"; }
  std::string config_json() const override { return "{}"; }
  std::unique_ptr<env::Agent> make(const data::Task&) const override {
    class Agent final : public env::Agent {
     public:
      explicit Agent(std::vector<env::Action> a) : actions_(std::move(a)) {}
      void begin(const data::Task&, const std::string&, data::Track) override {}
      env::AgentStep next(const std::string&) override {
        env::AgentStep s;
        s.action = actions_.at(std::min(i_++, actions_.size() - 1));
        return s;
      }

     private:
      std::vector<env::Action> actions_;
      std::size_t i_ = 0;
    };
    return std::make_unique<Agent>(actions_);
  }

 private:
  std::vector<env::Action> actions_;
};

struct World {
  const data::Dataset& ds = agents::fctest::tiny_dataset();
  agents::fctest::KeywordEmbedder embedder;
  agents::fctest::FixedSearch search{{"B0KETTLE02", "B0KETTLE01"}};
  agents::fctest::FixedRecommend recommend{{"B0SOCKS001", "B0MUG00001"}};
  env::Environment env{ds, &search, &recommend, embedder};
  std::unique_ptr<agents::TokenCounter> counter = agents::approximate_token_counter();
  const data::Task* search_task() const {
    for (const data::Task& t : ds.tasks(data::Split::kTest))
      if (t.type == data::TaskType::kSearch) return &t;
    return nullptr;
  }
};

TEST(PumaDialogueData, EveryStepAfterTheFirstIsThePromptThePumaAgentSees) {
  World w;
  const data::Task* task = w.search_task();
  ASSERT_NE(task, nullptr);
  FixedTeacher teacher({act(env::kSearch, {{"query", "kettle"}}), act(env::kRespond, {{"content", "Which brand?"}}),
                        act(env::kSearch, {{"query", "steel kettle"}}), act(env::kStop, json::object())});
  PrepareOptions prepare;
  prepare.memory.k = 3;
  DialogueOptions options;
  options.seed = 7;
  DialogueReport report;
  auto ex = dialogue_examples(w.env, teacher, {task}, w.embedder, *w.counter, prepare, options, &report);
  EXPECT_EQ(report.episodes, 1);
  EXPECT_EQ(report.teacher_steps, 4);
  EXPECT_EQ(report.skipped, 0);
  ASSERT_EQ(ex.size(), 3u);
  EXPECT_EQ(report.examples, 3);
  EXPECT_EQ(report.responds, 1);
  EXPECT_EQ(report.calls, 1);
  EXPECT_EQ(report.stops, 1);
  EXPECT_EQ(ex[0].target, "Say: Which brand?");
  EXPECT_EQ(ex[1].target, "steel kettle");
  EXPECT_EQ(ex[2].target, "stop");

  // The puma agent's own dialogue, replayed over the same episode (the scripted user of the same seed), gives the
  // same prompts.
  const std::string memory = agents::puma_memory(w.ds, *task, task->type, w.embedder, prepare.memory, *w.counter);
  const std::string fn(env::kSearch);
  sim::ScriptedUser user(w.ds, *task, options.seed);
  runner::EpisodeOptions eo;
  eo.track = data::Track::kMultiTurn;
  auto agent = teacher.make(*task);
  const runner::EpisodeResult episode = runner::run_episode(w.env, *task, *agent, &user, eo);
  ASSERT_EQ(episode.actions.size(), 4u);
  const std::string reply = episode.actions[1].observation;
  EXPECT_FALSE(reply.empty());
  agents::PumaDialogue dialogue(fn);
  auto prompt = [&] {
    return agents::puma_param_prompt(
        agents::puma_instruction_text(w.ds, *task, task->type) + agents::puma_dialogue_text(dialogue.turns()), memory, fn);
  };
  dialogue.act("kettle");
  EXPECT_EQ(ex[0].prompt, prompt());
  EXPECT_NE(ex[0].prompt.find("Conversation so far:\nAgent: called search_product_by_query with: kettle\n"),
            std::string::npos)
      << ex[0].prompt;
  dialogue.stops_after("");
  dialogue.act("Say: Which brand?");
  dialogue.stops_after(reply);
  EXPECT_EQ(ex[1].prompt, prompt());
  EXPECT_NE(ex[1].prompt.find("Agent: Say: Which brand?\nUser: " + reply + "\n"), std::string::npos) << ex[1].prompt;
  dialogue.act("steel kettle");
  dialogue.stops_after("");
  EXPECT_EQ(ex[2].prompt, prompt());
  for (const Example& e : ex) {
    EXPECT_EQ(e.task, data::task_key(*task));
    EXPECT_EQ(e.type, data::TaskType::kSearch);
    EXPECT_EQ(e.memory, memory);
  }
}

TEST(PumaDialogueData, EpisodesPumaCannotWriteAreLeftOut) {
  World w;
  const data::Task* task = w.search_task();
  ASSERT_NE(task, nullptr);
  PrepareOptions prepare;
  DialogueReport report;
  FixedTeacher details({act(env::kSearch, {{"query", "kettle"}}), act(env::kProductDetails, {{"asin", "B0KETTLE01"}}),
                        act(env::kStop, json::object())});
  EXPECT_TRUE(dialogue_examples(w.env, details, {task}, w.embedder, *w.counter, prepare, {}, &report).empty());
  EXPECT_EQ(report.skipped, 1);
  // one call and nothing else (the single-turn example already teaches it): no example, not counted as left out
  FixedTeacher one({act(env::kSearch, {{"query", "kettle"}})});
  DialogueOptions capped;
  capped.max_steps = 2;
  DialogueReport r2;
  auto ex = dialogue_examples(w.env, one, {task}, w.embedder, *w.counter, prepare, capped, &r2);
  EXPECT_EQ(ex.size(), 1u);  // two calls under the cap of 2: the second is an example
  EXPECT_EQ(r2.skipped, 0);
  capped.max_steps = 1;
  EXPECT_THROW(dialogue_examples(w.env, one, {task}, w.embedder, *w.counter, prepare, capped), UsageError);
}

TEST(PumaDialogueData, TheHeuristicTeacherAsksAndStops) {
  World w;
  pwab::test::TempDir cache;
  auto teacher = agents::make_agent_factory("heuristic", {}, agents::fctest::context_of(&w.ds, &w.embedder, cache.path(), 1));
  std::vector<const data::Task*> tasks;
  for (const data::Task& t : w.ds.tasks(data::Split::kTest)) tasks.push_back(&t);
  PrepareOptions prepare;
  DialogueReport report;
  auto ex = dialogue_examples(w.env, *teacher, tasks, w.embedder, *w.counter, prepare, {}, &report);
  EXPECT_EQ(report.episodes, static_cast<int>(tasks.size()));
  EXPECT_GT(report.responds, 0);
  EXPECT_GT(report.stops, 0);
  EXPECT_EQ(report.examples, report.calls + report.responds + report.stops);
  for (const Example& e : ex) {
    EXPECT_NE(e.prompt.find("Conversation so far:\nAgent: "), std::string::npos) << e.prompt;
    EXPECT_FALSE(e.target.empty());
  }
}

}  // namespace
}  // namespace pwab::puma
