#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "metrics/metrics.h"

namespace pwab::metrics {
namespace {

using data::TaskType;

TaskOutcome task(std::string key, TaskType type, std::vector<Attempt> attempts, int steps) {
  return {std::move(key), type, std::move(attempts), steps};
}

std::size_t idx(TaskType t) { return type_index(t); }

// --- score_task: the docs/decisions.md §3.2 per-task rule ---------------------------------------------

TEST(ScoreTask, SingleTurnOneAttempt) {
  TaskScore s = score_task(task("t/1", TaskType::kSearch, {{1, 0.9}}, 1));
  EXPECT_EQ(s.f, 1);
  EXPECT_EQ(s.r, 0.9);
}

TEST(ScoreTask, BestRightFunctionAttemptWins) {
  // A later right-function attempt with a higher R is taken.
  TaskScore s = score_task(task("t/1", TaskType::kSearch, {{1, 0.3}, {1, 0.8}, {1, 0.5}}, 5));
  EXPECT_EQ(s.f, 1);
  EXPECT_EQ(s.r, 0.8);
}

TEST(ScoreTask, WrongFunctionAttemptsAreIgnoredEvenWithHighR) {
  TaskScore s = score_task(task("t/1", TaskType::kRecommend, {{0, 1.0}, {1, 0.2}, {0, 0.9}}, 4));
  EXPECT_EQ(s.f, 1);
  EXPECT_EQ(s.r, 0.2);
  TaskScore only_wrong = score_task(task("t/2", TaskType::kRecommend, {{0, 1.0}, {0, 0.7}}, 3));
  EXPECT_EQ(only_wrong.f, 0);
  EXPECT_EQ(only_wrong.r, 0);
}

TEST(ScoreTask, NoAttemptsScoresZero) {
  TaskScore s = score_task(task("t/1", TaskType::kReview, {}, 2));
  EXPECT_EQ(s.f, 0);
  EXPECT_EQ(s.r, 0);
}

TEST(ScoreTask, NegativeReviewSimilarityIsKept) {
  TaskScore s = score_task(task("t/1", TaskType::kReview, {{1, -0.25}}, 1));
  EXPECT_EQ(s.f, 1);
  EXPECT_EQ(s.r, -0.25);
}

// --- summarize: per type and overall ------------------------------------------------------------------

// Hand-computed:
//   search    s1 [1,1.0] 2 steps; s2 [1,0.3],[1,0.7] 4 steps; s3 no attempt 1 step
//             F = 2/3, R = (1.0 + 0.7 + 0) / 3, steps = 7/3
//   recommend r1 [0,0.9] 3 steps: wrong function -> F = 0, R = 0, steps = 3
//   review    v1 [1,0.5], v2 [1,0.25], both 0 steps -> zero rule: all three 0
//   overall   6 tasks: F = 4/6, R = (1.7 + 0.75) / 6, steps = 10/6
std::vector<TaskOutcome> hand_run() {
  return {task("test/1", TaskType::kSearch, {{1, 1.0}}, 2),
          task("test/2", TaskType::kSearch, {{1, 0.3}, {1, 0.7}}, 4),
          task("test/3", TaskType::kSearch, {}, 1),
          task("test/4", TaskType::kRecommend, {{0, 0.9}}, 3),
          task("test/5", TaskType::kReview, {{1, 0.5}}, 0),
          task("test/6", TaskType::kReview, {{1, 0.25}}, 0)};
}

TEST(Summarize, HandComputedRecords) {
  Summary s = summarize(hand_run());
  const GroupSummary& search = s.by_type[idx(TaskType::kSearch)];
  EXPECT_EQ(search.n_tasks, 3u);
  EXPECT_EQ(search.total_steps, 7);
  EXPECT_DOUBLE_EQ(search.f_acc.value, 2.0 / 3);
  EXPECT_DOUBLE_EQ(search.r_acc.value, 1.7 / 3);
  EXPECT_DOUBLE_EQ(search.avg_steps.value, 7.0 / 3);

  const GroupSummary& rec = s.by_type[idx(TaskType::kRecommend)];
  EXPECT_EQ(rec.n_tasks, 1u);
  EXPECT_EQ(rec.f_acc.value, 0);
  EXPECT_EQ(rec.r_acc.value, 0);
  EXPECT_EQ(rec.avg_steps.value, 3);

  const GroupSummary& review = s.by_type[idx(TaskType::kReview)];
  EXPECT_EQ(review.n_tasks, 2u);
  EXPECT_EQ(review.total_steps, 0);
  EXPECT_EQ(review.f_acc.value, 0);  // right function, but zero interactions: the zero rule applies
  EXPECT_EQ(review.r_acc.value, 0);
  EXPECT_EQ(review.avg_steps.value, 0);

  EXPECT_EQ(s.overall.n_tasks, 6u);
  EXPECT_DOUBLE_EQ(s.overall.f_acc.value, 4.0 / 6);
  EXPECT_DOUBLE_EQ(s.overall.r_acc.value, 2.45 / 6);
  EXPECT_DOUBLE_EQ(s.overall.avg_steps.value, 10.0 / 6);
}

TEST(Summarize, OverallIsTaskWeightedNotMeanOfTypes) {
  // 3 search tasks at F = 1, one recommend task at F = 0: overall 0.75, the mean of the types would be 0.5.
  std::vector<TaskOutcome> run = {task("a", TaskType::kSearch, {{1, 1}}, 1), task("b", TaskType::kSearch, {{1, 1}}, 1),
                                  task("c", TaskType::kSearch, {{1, 1}}, 1), task("d", TaskType::kRecommend, {}, 1)};
  Summary s = summarize(run);
  EXPECT_DOUBLE_EQ(s.overall.f_acc.value, 0.75);
  EXPECT_DOUBLE_EQ(s.overall.r_acc.value, 0.75);
}

TEST(Summarize, EmptyGroupsAreZero) {
  Summary s = summarize({task("a", TaskType::kSearch, {{1, 0.5}}, 2)});
  for (TaskType t : {TaskType::kRecommend, TaskType::kReview}) {
    const GroupSummary& g = s.by_type[idx(t)];
    EXPECT_EQ(g.n_tasks, 0u);
    EXPECT_EQ(g.f_acc.value, 0);
    EXPECT_EQ(g.f_acc.ci_low, 0);
    EXPECT_EQ(g.f_acc.ci_high, 0);
    EXPECT_EQ(g.avg_steps.value, 0);
  }
  Summary none = summarize({});
  EXPECT_EQ(none.overall.n_tasks, 0u);
  EXPECT_EQ(none.overall.r_acc.value, 0);
}

// --- bootstrap intervals -------------------------------------------------------------------------------

std::vector<TaskOutcome> random_run(std::size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<TaskOutcome> run;
  for (std::size_t i = 0; i < n; ++i) {
    auto type = static_cast<TaskType>(i % 3);
    std::vector<Attempt> attempts;
    if (rng.chance(0.8)) attempts.push_back({rng.chance(0.7) ? 1.0 : 0.0, rng.uniform()});
    run.push_back(task("test/" + std::to_string(i), type, attempts, 1 + static_cast<int>(rng.below(6))));
  }
  return run;
}

void expect_contains(const Cell& c) {
  EXPECT_LE(c.ci_low, c.value);
  EXPECT_GE(c.ci_high, c.value);
  EXPECT_LT(c.ci_low, c.ci_high);
}

TEST(Bootstrap, IntervalContainsEstimate) {
  Summary s = summarize(random_run(300, 5));
  for (const GroupSummary* g : {&s.by_type[0], &s.by_type[1], &s.by_type[2], &s.overall}) {
    expect_contains(g->f_acc);
    expect_contains(g->r_acc);
    expect_contains(g->avg_steps);
  }
}

TEST(Bootstrap, DegenerateWhenAllTasksEqual) {
  std::vector<TaskOutcome> run;
  for (int i = 0; i < 20; ++i) run.push_back(task(std::to_string(i), TaskType::kSearch, {{1, 0.5}}, 3));
  Summary s = summarize(run);
  const GroupSummary& g = s.by_type[idx(TaskType::kSearch)];
  EXPECT_EQ(g.r_acc.ci_low, 0.5);
  EXPECT_EQ(g.r_acc.ci_high, 0.5);
  EXPECT_EQ(g.f_acc.ci_low, 1);
  EXPECT_EQ(g.f_acc.ci_high, 1);
  EXPECT_EQ(g.avg_steps.ci_low, 3);
  EXPECT_EQ(g.avg_steps.ci_high, 3);
}

TEST(Bootstrap, ZeroResamplesGivesPointIntervals) {
  Summary s = summarize(random_run(30, 2), {.resamples = 0});
  EXPECT_EQ(s.overall.r_acc.ci_low, s.overall.r_acc.value);
  EXPECT_EQ(s.overall.r_acc.ci_high, s.overall.r_acc.value);
}

TEST(Bootstrap, DeterministicPerSeed) {
  auto run = random_run(100, 9);
  Summary a = summarize(run, {.seed = 7}), b = summarize(run, {.seed = 7}), c = summarize(run, {.seed = 8});
  EXPECT_EQ(a.overall.r_acc.ci_low, b.overall.r_acc.ci_low);
  EXPECT_EQ(a.overall.r_acc.ci_high, b.overall.r_acc.ci_high);
  EXPECT_EQ(a.by_type[1].avg_steps.ci_high, b.by_type[1].avg_steps.ci_high);
  EXPECT_EQ(a.overall.r_acc.value, c.overall.r_acc.value);
  EXPECT_TRUE(a.overall.r_acc.ci_low != c.overall.r_acc.ci_low || a.overall.r_acc.ci_high != c.overall.r_acc.ci_high);
  EXPECT_EQ(c.bootstrap.seed, 8u);
}

TEST(Bootstrap, NarrowsWithMoreTasks) {
  Summary small = summarize(random_run(30, 3)), large = summarize(random_run(3000, 3));
  auto width = [](const Cell& c) { return c.ci_high - c.ci_low; };
  EXPECT_LT(width(large.overall.f_acc), width(small.overall.f_acc) / 3);
  EXPECT_LT(width(large.overall.r_acc), width(small.overall.r_acc) / 3);
  EXPECT_LT(width(large.overall.avg_steps), width(small.overall.avg_steps) / 3);
}

TEST(Bootstrap, HigherConfidenceIsWider) {
  auto run = random_run(200, 4);
  Summary s90 = summarize(run, {.confidence = 0.90}), s99 = summarize(run, {.confidence = 0.99});
  EXPECT_LT(s99.overall.r_acc.ci_low, s90.overall.r_acc.ci_low);
  EXPECT_GT(s99.overall.r_acc.ci_high, s90.overall.r_acc.ci_high);
}

TEST(Bootstrap, RejectsBadOptions) {
  EXPECT_THROW(summarize({}, {.resamples = -1}), UsageError);
  EXPECT_THROW(summarize({}, {.confidence = 1.0}), UsageError);
  EXPECT_THROW(summarize({}, {.confidence = 0.0}), UsageError);
}

// --- compare ---------------------------------------------------------------------------------------------

TEST(Compare, IdenticalRunsDifferByZero) {
  auto run = random_run(120, 11);
  Comparison c = compare(run, run);
  EXPECT_EQ(c.overall.n_paired, 120u);
  EXPECT_EQ(c.n_only_a, 0u);
  EXPECT_EQ(c.n_only_b, 0u);
  for (const PairedDiff* g : {&c.by_type[0], &c.by_type[1], &c.by_type[2], &c.overall}) {
    for (const DiffCell* d : {&g->f_acc, &g->r_acc, &g->avg_steps}) {
      EXPECT_EQ(d->a, d->b);
      EXPECT_EQ(d->diff.value, 0);
      EXPECT_EQ(d->diff.ci_low, 0);
      EXPECT_EQ(d->diff.ci_high, 0);
    }
  }
}

TEST(Compare, HandComputedDifferenceAndUnpairedTasks) {
  // Paired: x (search) 0.5 -> 1.0, y (search) 0 -> 0.5, z (review) wrong fn -> 0.25. Unpaired: a-only, b-only.
  std::vector<TaskOutcome> a = {task("x", TaskType::kSearch, {{1, 0.5}}, 2), task("y", TaskType::kSearch, {}, 2),
                                task("z", TaskType::kReview, {{0, 0.9}}, 1), task("only-a", TaskType::kSearch, {{1, 1}}, 1)};
  std::vector<TaskOutcome> b = {task("only-b", TaskType::kReview, {}, 1), task("z", TaskType::kReview, {{1, 0.25}}, 3),
                                task("y", TaskType::kSearch, {{0, 1}, {1, 0.5}}, 4), task("x", TaskType::kSearch, {{1, 1}}, 2)};
  Comparison c = compare(a, b);
  EXPECT_EQ(c.n_only_a, 1u);
  EXPECT_EQ(c.n_only_b, 1u);
  EXPECT_EQ(c.only_a_keys, std::vector<std::string>{"only-a"});
  EXPECT_EQ(c.only_b_keys, std::vector<std::string>{"only-b"});
  EXPECT_EQ(c.n_type_mismatch, 0u);

  const PairedDiff& search = c.by_type[idx(TaskType::kSearch)];
  EXPECT_EQ(search.n_paired, 2u);
  EXPECT_DOUBLE_EQ(search.f_acc.a, 0.5);
  EXPECT_DOUBLE_EQ(search.f_acc.b, 1.0);
  EXPECT_DOUBLE_EQ(search.f_acc.diff.value, 0.5);
  EXPECT_DOUBLE_EQ(search.r_acc.diff.value, 0.5);  // (1.0 + 0.5)/2 - (0.5 + 0)/2
  EXPECT_DOUBLE_EQ(search.avg_steps.diff.value, 1.0);  // 3 - 2

  EXPECT_EQ(c.overall.n_paired, 3u);
  EXPECT_DOUBLE_EQ(c.overall.f_acc.diff.value, 1.0 - 1.0 / 3);
  EXPECT_DOUBLE_EQ(c.overall.r_acc.diff.value, 1.75 / 3 - 0.5 / 3);
  EXPECT_LE(c.overall.r_acc.diff.ci_low, c.overall.r_acc.diff.value);
  EXPECT_GE(c.overall.r_acc.diff.ci_high, c.overall.r_acc.diff.value);
  EXPECT_EQ(c.by_type[idx(TaskType::kRecommend)].n_paired, 0u);
  EXPECT_EQ(c.by_type[idx(TaskType::kRecommend)].f_acc.diff.value, 0);
}

TEST(Compare, CountsTypeMismatchAndRejectsDuplicateKeys) {
  std::vector<TaskOutcome> a = {task("x", TaskType::kSearch, {}, 1)};
  std::vector<TaskOutcome> b = {task("x", TaskType::kReview, {}, 1)};
  EXPECT_EQ(compare(a, b).n_type_mismatch, 1u);
  std::vector<TaskOutcome> dup = {task("x", TaskType::kSearch, {}, 1), task("x", TaskType::kSearch, {}, 1)};
  EXPECT_THROW(compare(dup, a), DataError);
  EXPECT_THROW(compare(a, dup), DataError);
}

}  // namespace
}  // namespace pwab::metrics
