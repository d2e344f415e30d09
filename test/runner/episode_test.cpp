// The episode loop (docs/decisions.md §3.3) on the hand-written fixture, driven by a scripted agent: every ending in
// both tracks, what is recorded, step counting, and the hand-over to metrics. Search and recommendation have
// no backend here, so those calls return Error observations; reviews and the details tool need none.
#include "runner/episode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/loader.h"
#include "embed/embedder.h"
#include "env/tools.h"
#include "metrics/metrics.h"
#include "sim/scripted_user.h"
#include "support/test_support.h"

namespace pwab::runner {
namespace {

constexpr const char* kGoodReview = R"({"review": "Looks great in my kitchen."})";  // test[2]'s true review
constexpr const char* kOtherReview = R"({"review": "Terrible battery, returned it."})";

AgentStep call(std::string_view name, std::string args = "{}", int prompt = 0, int completion = 0) {
  return {{std::string(name), std::move(args)}, prompt, completion};
}
AgentStep say(const std::string& text) { return call(env::kRespond, R"({"content": ")" + text + R"("})"); }

//! Returns its steps in order, then repeats the last one; records what it was shown.
class ScriptedAgent final : public Agent {
 public:
  explicit ScriptedAgent(std::vector<AgentStep> steps) : steps_(std::move(steps)) {}
  void begin(const data::Task&, const std::string& first_observation, data::Track track) override {
    ++begins;
    first = first_observation;
    track_seen = track;
  }
  AgentStep next(const std::string& observation) override {
    seen.push_back(observation);
    std::size_t i = std::min(seen.size() - 1, steps_.size() - 1);
    return steps_[i];
  }
  int begins = 0;
  std::string first;
  data::Track track_seen = data::Track::kMultiTurn;
  std::vector<std::string> seen;  //!< observations passed to next(), in order

 private:
  std::vector<AgentStep> steps_;
};

class RunnerFixture : public ::testing::Test {
 protected:
  RunnerFixture() : ds_(data::load_dataset(test::fixture("data/original"))), env_(ds_, nullptr, nullptr, embedder_) {}
  const data::Task& search_task() { return ds_.tasks(data::Split::kTest)[1]; }
  const data::Task& review_task() { return ds_.tasks(data::Split::kTest)[2]; }
  EpisodeResult single(const data::Task& t, std::vector<AgentStep> steps, int max_steps = 10) {
    ScriptedAgent agent(std::move(steps));
    return run_episode(env_, t, agent, nullptr, {data::Track::kSingleTurn, max_steps});
  }
  EpisodeResult multi(const data::Task& t, std::vector<AgentStep> steps, env::UserChannel* user, int max_steps = 10) {
    ScriptedAgent agent(std::move(steps));
    return run_episode(env_, t, agent, user, {data::Track::kMultiTurn, max_steps});
  }
  data::Dataset ds_;
  embed::HashingEmbedder embedder_;
  env::Environment env_;
};

// --- single-turn ------------------------------------------------------------------------------------------

TEST_F(RunnerFixture, SingleTurnTaskFunctionIsScoredAndEnds) {
  ScriptedAgent agent({call(env::kAddReview, kGoodReview, 100, 7), call(env::kStop)});
  EpisodeResult r = run_episode(env_, review_task(), agent, nullptr, {data::Track::kSingleTurn, 10});
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_NEAR(r.attempts[0].result_acc, 1.0, 1e-6);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_TRUE(r.actions[0].scored);
  EXPECT_EQ(r.prompt_tokens, 100);
  EXPECT_EQ(r.completion_tokens, 7);
  // The agent got begin() once with the reset observation, and an empty observation on its first call.
  EXPECT_EQ(agent.begins, 1);
  EXPECT_EQ(agent.first, env::initial_observation(ds_, review_task()));
  EXPECT_EQ(r.first_observation, agent.first);
  EXPECT_EQ(agent.track_seen, data::Track::kSingleTurn);
  ASSERT_EQ(agent.seen.size(), 1u);
  EXPECT_EQ(agent.seen[0], "");
  EXPECT_GE(r.seconds_env, 0.0);
  EXPECT_GE(r.seconds_agent, 0.0);
}

TEST_F(RunnerFixture, SingleTurnRespondIsAZeroAttemptAndEnds) {
  EpisodeResult r = single(review_task(), {say("What do you think of it?"), call(env::kAddReview, kGoodReview)});
  EXPECT_EQ(r.ending, "respond");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.attempts[0].result_acc, 0.0);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].observation, "Error: ###STOP###");
}

TEST_F(RunnerFixture, SingleTurnStopRecordsNothing) {
  EpisodeResult r = single(review_task(), {call(env::kStop), call(env::kAddReview, kGoodReview)});
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 1);
  EXPECT_TRUE(r.attempts.empty());
  metrics::TaskScore s = metrics::score_task(r.outcome("test/2"));
  EXPECT_EQ(s.f, 0.0);
  EXPECT_EQ(s.r, 0.0);
}

TEST_F(RunnerFixture, SingleTurnStopWithBadArgumentsStillStops) {
  // The loop breaks on the action name, whatever the env made of the arguments.
  EpisodeResult r = single(review_task(), {call(env::kStop, R"({"now": true})"), call(env::kAddReview, kGoodReview)});
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 1);
  EXPECT_TRUE(r.attempts.empty());
}

TEST_F(RunnerFixture, SingleTurnDetailsAndUnknownToolsContinue) {
  ScriptedAgent agent({call(env::kProductDetails, R"({"product_asin": "B0FIXTURE4"})"), call("buy_now"),
                       call(env::kAddReview, kGoodReview)});
  EpisodeResult r = run_episode(env_, review_task(), agent, nullptr, {data::Track::kSingleTurn, 10});
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  ASSERT_EQ(r.actions.size(), 3u);
  // Each next() sees the previous action's observation.
  ASSERT_EQ(agent.seen.size(), 3u);
  EXPECT_NE(agent.seen[1].find("Product Details:"), std::string::npos);
  EXPECT_EQ(agent.seen[2], "Unknown action buy_now");
}

TEST_F(RunnerFixture, SingleTurnDetailsThenTaskFunctionIsTwoSteps) {
  EpisodeResult r = single(review_task(), {call(env::kProductDetails, R"({"product_asin": "B0FIXTURE4"})"),
                                           call(env::kAddReview, kGoodReview)});
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.outcome("test/2").steps, 2);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
}

TEST_F(RunnerFixture, SingleTurnBadArgumentsAreAZeroAttempt) {
  // The right function with an unexpected keyword: an Error observation, done, recorded as [0, 0].
  EpisodeResult r = single(review_task(), {call(env::kAddReview, R"({"review": "ok", "stars": 5})"),
                                           call(env::kAddReview, kGoodReview)});
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.attempts[0].result_acc, 0.0);
  EXPECT_FALSE(r.actions[0].scored);
  EXPECT_EQ(r.actions[0].observation.rfind("Error:", 0), 0u);
}

TEST_F(RunnerFixture, SingleTurnSearchWithoutBackendIsAnErrorEnding) {
  // No search backend: the call still ends the episode, as an Error observation scored [0, 0].
  EpisodeResult r = single(search_task(), {call(env::kSearch, R"({"query": "black earbuds"})")});
  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.actions[0].observation.rfind("Error:", 0), 0u);
  EXPECT_EQ(metrics::score_task(r.outcome("test/1")).f, 0.0);
}

TEST_F(RunnerFixture, SingleTurnStepCap) {
  EpisodeResult r = single(review_task(), {call(env::kProductDetails, R"({"product_asin": "B0FIXTURE4"})")});
  EXPECT_EQ(r.ending, "step_cap");
  EXPECT_EQ(r.steps, 10);
  EXPECT_TRUE(r.attempts.empty());
  EXPECT_EQ(r.actions.size(), 10u);
  // A ReAct-style agent runs under a cap of 3 in single-turn.
  EpisodeResult react = single(review_task(), {call("think")}, loop_bound(-1, true));
  EXPECT_EQ(react.ending, "step_cap");
  EXPECT_EQ(react.steps, 3);
}

TEST(LoopBound, FollowsTheOriginal) {
  EXPECT_EQ(loop_bound(-1, false), 10);
  EXPECT_EQ(loop_bound(-1, true), 3);
  EXPECT_EQ(loop_bound(10, true), 10);
  EXPECT_EQ(loop_bound(5, false), 5);
}

TEST_F(RunnerFixture, SingleTurnRejectsAUserAndMultiTurnRejectsNoSteps) {
  sim::ScriptedUser user(ds_, review_task(), 1);
  ScriptedAgent agent({call(env::kStop)});
  EXPECT_THROW(run_episode(env_, review_task(), agent, &user, {data::Track::kSingleTurn, 10}), UsageError);
  EXPECT_THROW(run_episode(env_, review_task(), agent, nullptr, {data::Track::kMultiTurn, 0}), UsageError);
}

// --- multi-turn -------------------------------------------------------------------------------------------

TEST_F(RunnerFixture, MultiTurnRecordsEveryAttemptAndScoresTheBest) {
  sim::ScriptedUser user(ds_, review_task(), 3);
  EpisodeResult r = multi(review_task(),
                          {call(env::kAddReview, kOtherReview), call(env::kAddReview, R"({"review": "x", "y": "z"})"),
                           call(env::kAddReview, kGoodReview), call(env::kStop)},
                          &user);
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 4);
  ASSERT_EQ(r.attempts.size(), 3u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_LT(r.attempts[0].result_acc, 0.5);
  EXPECT_EQ(r.attempts[1].function_acc, 0.0);  // argument error: [0, 0]
  EXPECT_EQ(r.attempts[1].result_acc, 0.0);
  EXPECT_NEAR(r.attempts[2].result_acc, 1.0, 1e-6);
  metrics::TaskOutcome o = r.outcome("test/2");
  EXPECT_EQ(o.task_key, "test/2");
  EXPECT_EQ(o.type, data::TaskType::kReview);
  EXPECT_EQ(o.steps, 4);
  metrics::TaskScore s = metrics::score_task(o);
  EXPECT_EQ(s.f, 1.0);
  EXPECT_NEAR(s.r, 1.0, 1e-6);  // best of the valid attempts
}

TEST_F(RunnerFixture, MultiTurnRespondReachesTheScriptedUserAfterNoteAttempt) {
  // A review on a search task is a scored wrong-function attempt; the user's next reply reacts to it.
  const std::string question = "Is this what you wanted?";
  sim::ScriptedUser user(ds_, search_task(), 5);
  ScriptedAgent agent({call(env::kAddReview, R"({"review": "Fine for the price."})"), say(question), call(env::kStop)});
  EpisodeResult r = run_episode(env_, search_task(), agent, &user, {data::Track::kMultiTurn, 10});
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.attempts.size(), 1u);  // the respond is not done, so not recorded
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);

  sim::ScriptedUser told(ds_, search_task(), 5);
  told.note_attempt(env::kAddReview, env::Reward{});
  sim::ScriptedUser untold(ds_, search_task(), 5);
  const std::string expected = told.reply(question);
  ASSERT_EQ(agent.seen.size(), 3u);
  EXPECT_EQ(agent.seen[2], expected);
  EXPECT_NE(agent.seen[2], untold.reply(question));
}

TEST_F(RunnerFixture, MultiTurnRespondWithoutUserIsAZeroAttemptAndContinues) {
  EpisodeResult r = multi(review_task(), {say("Hello?"), call(env::kAddReview, kGoodReview), call(env::kStop)}, nullptr);
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].function_acc, 0.0);
  EXPECT_EQ(r.attempts[0].result_acc, 0.0);
  EXPECT_EQ(r.actions[0].observation, "Error: ###STOP###");
  EXPECT_EQ(r.attempts[1].function_acc, 1.0);
  EXPECT_EQ(metrics::score_task(r.outcome("test/2")).f, 1.0);
}

TEST_F(RunnerFixture, MultiTurnStopEndsAtOnce) {
  sim::ScriptedUser user(ds_, review_task(), 7);
  EpisodeResult r = multi(review_task(), {say("Tell me more?"), call(env::kStop), call(env::kAddReview, kGoodReview)},
                          &user);
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 2);
  EXPECT_TRUE(r.attempts.empty());
  EXPECT_EQ(r.actions.size(), 2u);
}

TEST_F(RunnerFixture, MultiTurnStepCap) {
  // A task function does not end a multi-turn episode: the agent keeps attempting until the cap.
  sim::ScriptedUser user(ds_, review_task(), 9);
  ScriptedAgent agent({say("What matters to you?"), call(env::kAddReview, kOtherReview)});
  EpisodeResult r = run_episode(env_, review_task(), agent, &user, {data::Track::kMultiTurn, 4});
  EXPECT_EQ(r.ending, "step_cap");
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(agent.seen.size(), 4u);  // steps = agent calls
  EXPECT_EQ(r.attempts.size(), 3u);
  EXPECT_EQ(r.actions.size(), 4u);
  EXPECT_EQ(agent.track_seen, data::Track::kMultiTurn);
}

TEST_F(RunnerFixture, OutcomesAggregateThroughMetrics) {
  std::vector<metrics::TaskOutcome> outcomes;
  outcomes.push_back(single(review_task(), {call(env::kAddReview, kGoodReview)}).outcome("test/2"));
  outcomes.push_back(single(search_task(), {call(env::kStop)}).outcome("test/1"));
  metrics::Summary s = metrics::summarize(outcomes, {0, 0.95, 1});
  const auto& review = s.by_type[metrics::type_index(data::TaskType::kReview)];
  EXPECT_EQ(review.n_tasks, 1u);
  EXPECT_EQ(review.f_acc.value, 1.0);
  EXPECT_NEAR(review.r_acc.value, 1.0, 1e-6);
  EXPECT_EQ(review.avg_steps.value, 1.0);
  EXPECT_EQ(s.overall.n_tasks, 2u);
  EXPECT_EQ(s.overall.f_acc.value, 0.5);
  EXPECT_EQ(s.overall.total_steps, 2);
}

}  // namespace
}  // namespace pwab::runner
