// Repeated trials: tau-bench's pass^k estimator, flip rates, the pass rule and its thresholds, the pooled
// table rows over (task, trial) outcomes, and paired comparison by per-task means.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "metrics/metrics.h"

namespace pwab::metrics {
namespace {

using data::TaskType;

TaskOutcome trial(std::string key, TaskType type, double r, int trial_no, int steps = 1, double f = 1) {
  return {std::move(key), type, {{f, r}}, steps, trial_no};
}

std::size_t idx(TaskType t) { return type_index(t); }

TEST(PassHat, HandComputedValues) {
  EXPECT_EQ(pass_hat_k(0, 4, 1), 0.0);  // c = 0: never
  EXPECT_EQ(pass_hat_k(0, 4, 4), 0.0);
  EXPECT_EQ(pass_hat_k(4, 4, 1), 1.0);  // c = n: always
  EXPECT_EQ(pass_hat_k(4, 4, 4), 1.0);
  EXPECT_EQ(pass_hat_k(1, 1, 1), 1.0);  // n = 1
  EXPECT_EQ(pass_hat_k(0, 1, 1), 0.0);
  EXPECT_DOUBLE_EQ(pass_hat_k(2, 4, 1), 0.5);        // C(2,1)/C(4,1) = 2/4
  EXPECT_DOUBLE_EQ(pass_hat_k(2, 4, 2), 1.0 / 6);    // C(2,2)/C(4,2) = 1/6
  EXPECT_EQ(pass_hat_k(2, 4, 3), 0.0);               // C(2,3) = 0
  EXPECT_DOUBLE_EQ(pass_hat_k(3, 5, 2), 3.0 / 10);   // C(3,2)/C(5,2) = 3/10
  EXPECT_DOUBLE_EQ(pass_hat_k(4, 5, 3), 4.0 / 10);   // C(4,3)/C(5,3) = 4/10
  EXPECT_THROW(pass_hat_k(1, 2, 3), UsageError);     // k > n
  EXPECT_THROW(pass_hat_k(3, 2, 1), UsageError);     // c > n
  EXPECT_THROW(pass_hat_k(0, 2, 0), UsageError);
}

TEST(FlipProbability, HandComputedValues) {
  EXPECT_EQ(flip_probability(0, 3), 0.0);
  EXPECT_EQ(flip_probability(3, 3), 0.0);
  EXPECT_EQ(flip_probability(1, 2), 1.0);               // the two trials always disagree
  EXPECT_DOUBLE_EQ(flip_probability(2, 4), 4.0 / 6);    // 2·2 of the 6 pairs
  EXPECT_DOUBLE_EQ(flip_probability(1, 3), 2.0 / 3);    // 1·2 of the 3 pairs
  EXPECT_THROW(flip_probability(1, 1), UsageError);
}

TEST(PassRule, DefaultsAndThresholds) {
  PassRule rule;
  // Search and recommendation: the target anywhere in the list (R > 0) passes, a miss (R = 0) fails.
  EXPECT_TRUE(passes(trial("a", TaskType::kSearch, 0.1, 0), rule));
  EXPECT_FALSE(passes(trial("a", TaskType::kSearch, 0.0, 0), rule));
  EXPECT_TRUE(passes(trial("a", TaskType::kRecommend, 1.0, 0), rule));
  // The wrong function never passes, whatever R.
  EXPECT_FALSE(passes(trial("a", TaskType::kSearch, 1.0, 0, 1, 0), rule));
  // No attempt at all fails.
  EXPECT_FALSE(passes({"a", TaskType::kSearch, {}, 1, 0}, rule));
  // Review: similarity at least 0.5.
  EXPECT_TRUE(passes(trial("a", TaskType::kReview, 0.5, 0), rule));
  EXPECT_FALSE(passes(trial("a", TaskType::kReview, 0.49, 0), rule));

  PassRule strict = PassRule::parse("search=1,review=0.3");
  EXPECT_FALSE(passes(trial("a", TaskType::kSearch, 0.9, 0), strict));  // not ranked first
  EXPECT_TRUE(passes(trial("a", TaskType::kSearch, 1.0, 0), strict));
  EXPECT_TRUE(passes(trial("a", TaskType::kReview, 0.4, 0), strict));
  EXPECT_EQ(strict.threshold[idx(TaskType::kRecommend)], 0.0);  // not named: the default
  EXPECT_EQ(strict.to_string(), "search=1,recommend=0,review=0.3");

  PassRule all = PassRule::parse("0.75");
  for (double t : all.threshold) EXPECT_EQ(t, 0.75);
  for (const char* bad : {"", "x", "search=", "shop=1", "search=1,", "review=0.5x", "search:1", "nan"})
    EXPECT_THROW(PassRule::parse(bad), UsageError) << bad;
}

// Three search tasks run three times and one review task run twice:
//   s1: R 1, 0.5, 0  -> passes 2 of 3
//   s2: R 0, 0, 0    -> passes 0 of 3
//   s3: R .2, .2, .2 -> passes 3 of 3
//   v1: R .6, .4     -> passes 1 of 2 (threshold 0.5)
std::vector<TaskOutcome> trial_run() {
  return {trial("test/1", TaskType::kSearch, 1.0, 0),   trial("test/2", TaskType::kSearch, 0, 0),
          trial("test/3", TaskType::kSearch, 0.2, 0),   trial("test/4", TaskType::kReview, 0.6, 0),
          trial("test/1", TaskType::kSearch, 0.5, 1),   trial("test/2", TaskType::kSearch, 0, 1),
          trial("test/3", TaskType::kSearch, 0.2, 1),   trial("test/4", TaskType::kReview, 0.4, 1),
          trial("test/1", TaskType::kSearch, 0.0, 2, 3), trial("test/2", TaskType::kSearch, 0, 2),
          trial("test/3", TaskType::kSearch, 0.2, 2)};
}

TEST(Trials, PassHatAndFlipRatesByHand) {
  Summary s = summarize(trial_run(), {.resamples = 0});
  ASSERT_EQ(s.trials.max_trials, 3);
  const TrialGroup& search = s.trials.by_type[idx(TaskType::kSearch)];
  ASSERT_EQ(search.pass_hat.size(), 3u);
  EXPECT_DOUBLE_EQ(search.pass_hat[0].value, (2.0 / 3 + 0 + 1) / 3);
  EXPECT_DOUBLE_EQ(search.pass_hat[1].value, (1.0 / 3 + 0 + 1) / 3);  // C(2,2)/C(3,2) = 1/3
  EXPECT_DOUBLE_EQ(search.pass_hat[2].value, (0 + 0 + 1.0) / 3);
  EXPECT_EQ(search.pass_hat_tasks, (std::vector<std::size_t>{3, 3, 3}));
  EXPECT_DOUBLE_EQ(search.flip_rate.value, (2.0 / 3 + 0 + 0) / 3);
  EXPECT_DOUBLE_EQ(search.mixed.value, 1.0 / 3);

  // Overall: the review task has 2 trials, so it counts for pass^1, pass^2 and the flip figures, not pass^3.
  const TrialGroup& all = s.trials.overall;
  EXPECT_EQ(all.n_tasks, 4u);
  EXPECT_EQ(all.pass_hat_tasks, (std::vector<std::size_t>{4, 4, 3}));
  EXPECT_DOUBLE_EQ(all.pass_hat[0].value, (2.0 / 3 + 0 + 1 + 0.5) / 4);
  EXPECT_DOUBLE_EQ(all.pass_hat[1].value, (1.0 / 3 + 0 + 1 + 0) / 4);
  EXPECT_DOUBLE_EQ(all.pass_hat[2].value, 1.0 / 3);
  EXPECT_EQ(all.n_multi, 4u);
  EXPECT_DOUBLE_EQ(all.flip_rate.value, (2.0 / 3 + 0 + 0 + 1) / 4);
  EXPECT_DOUBLE_EQ(all.mixed.value, 2.0 / 4);

  // A laxer review threshold: v1 passes both trials.
  Summary lax = summarize(trial_run(), {.resamples = 0}, PassRule::parse("review=0.3"));
  EXPECT_EQ(lax.trials.by_type[idx(TaskType::kReview)].pass_hat[1].value, 1.0);
  EXPECT_EQ(lax.trials.by_type[idx(TaskType::kReview)].flip_rate.value, 0.0);
}

TEST(Trials, TableRowsPoolEveryTrial) {
  Summary s = summarize(trial_run(), {.resamples = 0});
  const GroupSummary& search = s.by_type[idx(TaskType::kSearch)];
  EXPECT_EQ(search.n_tasks, 3u);
  EXPECT_EQ(search.n_outcomes, 9u);
  EXPECT_DOUBLE_EQ(search.r_acc.value, (1.0 + 0.5 + 0 + 0.6) / 9);
  EXPECT_DOUBLE_EQ(search.f_acc.value, 1.0);
  EXPECT_DOUBLE_EQ(search.avg_steps.value, 11.0 / 9);
  // Every task run the same number of times: the pooled value is the mean of the per-task means.
  EXPECT_DOUBLE_EQ(search.r_acc.value, ((1.5 / 3) + 0 + 0.2) / 3);
  EXPECT_EQ(s.overall.n_tasks, 4u);
  EXPECT_EQ(s.overall.n_outcomes, 11u);
}

TEST(Trials, BootstrapResamplesTasksWithAllTheirTrials) {
  // Every task identical across tasks but not across trials: resampling whole tasks cannot move the mean.
  std::vector<TaskOutcome> run;
  for (int t = 0; t < 10; ++t)
    for (int k = 0; k < 2; ++k) run.push_back(trial("test/" + std::to_string(t), TaskType::kSearch, k == 0 ? 1 : 0, k));
  Summary s = summarize(run, {.resamples = 200});
  const GroupSummary& g = s.by_type[idx(TaskType::kSearch)];
  EXPECT_EQ(g.r_acc.value, 0.5);
  EXPECT_EQ(g.r_acc.ci_low, 0.5);
  EXPECT_EQ(g.r_acc.ci_high, 0.5);
  EXPECT_EQ(s.trials.overall.flip_rate.ci_low, 1.0);
  EXPECT_EQ(s.trials.overall.pass_hat[1].ci_high, 0.0);
}

TEST(Trials, SingleTrialRunsHaveNoTrialSection) {
  std::vector<TaskOutcome> run = {trial("test/1", TaskType::kSearch, 1, 0), trial("test/2", TaskType::kReview, 0.7, 0)};
  Summary s = summarize(run);
  EXPECT_EQ(s.trials.max_trials, 1);
  EXPECT_EQ(s.overall.n_outcomes, s.overall.n_tasks);
  std::string json = format_json(s);
  EXPECT_EQ(json.find("trials"), std::string::npos) << json;
  EXPECT_EQ(json.find("n_outcomes"), std::string::npos) << json;
  EXPECT_EQ(format_csv(s).find("pass^"), std::string::npos);
  EXPECT_EQ(format_table(s, "x").find("pass^"), std::string::npos);
}

TEST(Trials, DuplicateTaskTrialIsAnError) {
  std::vector<TaskOutcome> run = {trial("test/1", TaskType::kSearch, 1, 0), trial("test/1", TaskType::kSearch, 1, 0)};
  EXPECT_THROW(summarize(run), DataError);
  EXPECT_THROW(compare(run, run), DataError);
  run[1].trial = 1;  // the same task's second trial is fine
  EXPECT_NO_THROW(summarize(run));
}

TEST(Trials, RenderingsCarryPassHat) {
  Summary s = summarize(trial_run(), {.resamples = 50});
  auto j = nlohmann::json::parse(format_json(s));
  EXPECT_EQ(j["trials"]["max_trials"], 3);
  EXPECT_EQ(j["trials"]["pass_rule"]["review"], 0.5);
  ASSERT_EQ(j["trials"]["groups"]["overall"]["pass_hat"].size(), 3u);
  EXPECT_EQ(j["trials"]["groups"]["overall"]["pass_hat"][2]["k"], 3);
  EXPECT_EQ(j["trials"]["groups"]["overall"]["pass_hat"][2]["n_tasks"], 3);
  EXPECT_DOUBLE_EQ(j["trials"]["groups"]["overall"]["pass_hat"][2]["value"].get<double>(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(j["trials"]["groups"]["search"]["mixed"]["value"].get<double>(), 1.0 / 3);
  EXPECT_EQ(j["groups"]["overall"]["n_outcomes"], 11);

  std::string csv = format_csv(s);
  EXPECT_NE(csv.find("\noverall,pass^3,0.333"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nsearch,flip_rate,"), std::string::npos) << csv;
  std::string table = format_table(s, "heuristic");
  EXPECT_NE(table.find("pass^3"), std::string::npos) << table;
  EXPECT_NE(table.find("Flip rate"), std::string::npos) << table;
  EXPECT_NE(table.find("n = 4 (11 runs)"), std::string::npos) << table;
  EXPECT_NE(table.find("review=0.5"), std::string::npos) << table;
  std::string md = format_markdown(s, "heuristic");
  EXPECT_NE(md.find("| pass^2 |"), std::string::npos) << md;
}

TEST(Trials, CompareUsesPerTaskMeans) {
  // A: one trial per task. B: three trials of test/1 (R 1, 0.5, 0: mean 0.5) and one of test/2.
  std::vector<TaskOutcome> a = {trial("test/1", TaskType::kSearch, 0.2, 0), trial("test/2", TaskType::kSearch, 0.4, 0)};
  std::vector<TaskOutcome> b = {trial("test/1", TaskType::kSearch, 1.0, 0), trial("test/1", TaskType::kSearch, 0.5, 1),
                                trial("test/1", TaskType::kSearch, 0.0, 2), trial("test/2", TaskType::kSearch, 0.4, 0)};
  Comparison c = compare(a, b, {.resamples = 0});
  EXPECT_EQ(c.overall.n_paired, 2u);
  EXPECT_EQ(c.max_trials_a, 1);
  EXPECT_EQ(c.max_trials_b, 3);
  EXPECT_DOUBLE_EQ(c.overall.r_acc.a, 0.3);
  EXPECT_DOUBLE_EQ(c.overall.r_acc.b, (0.5 + 0.4) / 2);
  EXPECT_DOUBLE_EQ(c.overall.r_acc.diff.value, 0.45 - 0.3);
  EXPECT_NE(format_comparison(c, "a", "b").find("up to 1 per task in A, 3 in B"), std::string::npos);
}

}  // namespace
}  // namespace pwab::metrics
