// src/metrics/metrics.h: the benchmark's scores (F. Acc, R. Acc, Avg. Steps) per task type and overall,
// aggregated exactly as the original calculate_statistics (docs/decisions.md §3.2), with percentile-bootstrap
// confidence intervals, a paired comparison of two runs, and the table / Markdown / CSV / JSON renderings.
// Runs with several trials per task (`pwab run --trials N`) also get tau-bench's pass^k and flip rates.
//
// The area works on its own small input type (TaskOutcome), not on episode state, so `pwab score` can
// recompute every number from the stored records alone.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/types.h"
#include "data/track.h"

namespace pwab::metrics {

//! One terminal scored attempt: a call of one of the three task functions, scored by docs/decisions.md §3.1.
struct Attempt {
  double function_acc = 0;  //!< 1 when the function matches the task type, else 0
  double result_acc = 0;    //!< rank score or review similarity; may be set even for a wrong function
};

//! One finished trial of a task of a run.
struct TaskOutcome {
  std::string task_key;           //!< identifies the task across runs, e.g. "test/123"
  data::TaskType type = data::TaskType::kSearch;
  std::vector<Attempt> attempts;  //!< every terminal scored attempt, in order; empty when there was none
  int steps = 0;                  //!< agent LLM calls (the original's len(usage.completion_tokens))
  int trial = 0;                  //!< which run of the task (0-based; `pwab run --trials N`)
};

//! What one task adds to its group's F and R sums.
struct TaskScore {
  double f = 0;
  double r = 0;
};

//! The docs/decisions.md §3.2 per-task rule:
//!  - no attempts is treated as the single attempt [0, 0] (the original replaces empty lists by [0]);
//!  - valid attempts are those with function_acc == 1 (the right function); wrong-function attempts are
//!    ignored whatever their result_acc;
//!  - with at least one valid attempt, best = the first valid attempt with the maximum result_acc, and the
//!    task scores F = 1 (that attempt's function_acc) and R = its result_acc;
//!  - without one, the task scores F = 0 and R = 0.
TaskScore score_task(const TaskOutcome& outcome);

//! A number with its bootstrap confidence interval.
struct Cell {
  double value = 0;
  double ci_low = 0;
  double ci_high = 0;
};

//! The three metrics of one group of tasks (one type, or all tasks).
struct GroupSummary {
  std::size_t n_tasks = 0;  //!< distinct task keys
  int64_t total_steps = 0;  //!< sum of TaskOutcome::steps; 0 triggers the zero rule
  Cell f_acc, r_acc, avg_steps;
  std::size_t n_outcomes = 0;  //!< (task, trial) outcomes: n_tasks times the trials per task
};

//! Percentile bootstrap over tasks (all trials of a drawn task come along). resamples = 0 gives degenerate
//! intervals [value, value].
struct BootstrapOptions {
  int resamples = 1000;
  double confidence = 0.95;
  uint64_t seed = 1;
};

//! Index into Summary::by_type / Comparison::by_type (search, recommend, review).
inline std::size_t type_index(data::TaskType t) { return static_cast<std::size_t>(t); }

//! When a trial passes, for pass^k and flip rates. PersonalWAB's R is continuous, so a pass is: the trial's
//! docs/decisions.md §3.2 task score has F = 1, R > 0 and R ≥ the threshold of the task's type. The defaults
//! (docs/metrics.md "Pass"): search and recommendation 0, i.e. the target is somewhere in the returned list
//! (hit@top_k); review 0.5, a similarity reached by about half of the paper's strong agents' reviews (MiniLM scale).
struct PassRule {
  std::array<double, 3> threshold = {0.0, 0.0, 0.5};  //!< indexed by type_index()

  //! "T" (one threshold for every type) or "TYPE=T,..." with TYPE search | recommend | review (types not named
  //! keep their defaults). UsageError naming the bad part otherwise.
  static PassRule parse(std::string_view text);
  //! "search=0,recommend=0,review=0.5".
  std::string to_string() const;
};

//! Whether one trial passes under `rule`.
bool passes(const TaskOutcome& outcome, const PassRule& rule);

//! tau-bench's pass^k of one task that passed c of its n trials: C(c, k) / C(n, k), the chance that k of its
//! trials drawn without replacement all pass (an unbiased estimate of p^k). 0 when c < k; k must be ≤ n.
double pass_hat_k(int c, int n, int k);
//! The chance that two of the task's n ≥ 2 trials, drawn without replacement, disagree: c(n − c) / C(n, 2).
double flip_probability(int c, int n);

//! pass^k and flip rates of one group (one type, or all tasks), over its tasks.
struct TrialGroup {
  std::size_t n_tasks = 0;
  //! [k − 1] = pass^k for k = 1..max_trials: the mean over the tasks with at least k trials of pass_hat_k.
  std::vector<Cell> pass_hat;
  std::vector<std::size_t> pass_hat_tasks;  //!< [k − 1] = the tasks pass^k averages over
  std::size_t n_multi = 0;                  //!< tasks with at least 2 trials (the flip figures' tasks)
  Cell flip_rate;  //!< mean over those tasks of flip_probability: P(two trials of a random task disagree)
  Cell mixed;      //!< share of those tasks with both a passed and a failed trial
};

//! The repeated-trials section of a summary.
struct TrialSummary {
  int max_trials = 1;  //!< the most trials any task has; the section is rendered only when > 1
  PassRule rule;
  std::array<TrialGroup, 3> by_type;  //!< indexed by type_index()
  TrialGroup overall;
};

struct Summary {
  std::array<GroupSummary, 3> by_type;  //!< indexed by type_index()
  GroupSummary overall;                 //!< all tasks pooled (task-weighted), not a mean of the types
  BootstrapOptions bootstrap;           //!< the settings the intervals were computed with
  TrialSummary trials;                  //!< pass^k and flip rates (meaningful when trials.max_trials > 1)
};

//! Aggregates a run. Per group: F. Acc = ΣF / n, R. Acc = ΣR / n, Avg. Steps = Σsteps / n over the group's n
//! (task, trial) outcomes, with the docs/decisions.md §3.2 zero rule: all three are 0 when the group has no outcomes or
//! its total steps are 0. With every task run N times this is the mean over tasks of the per-task mean over trials.
//! Each bootstrap resample draws the group's tasks with replacement (a drawn task brings all its trials) and applies
//! the same rule; the overall group resamples all tasks. Deterministic for a given seed. `trials` holds pass^k
//! and flip rates under `rule`, their intervals from the same kind of resampling (a separate random stream).
//! DataError when a (task_key, trial) occurs twice.
Summary summarize(const std::vector<TaskOutcome>& outcomes, const BootstrapOptions& options = {},
                  const PassRule& rule = {});

//! One metric of a paired comparison: the two runs' values on the paired tasks and the difference b − a.
struct DiffCell {
  double a = 0;
  double b = 0;
  Cell diff;  //!< b − a with its bootstrap interval
};

//! One group of a paired comparison.
struct PairedDiff {
  std::size_t n_paired = 0;
  DiffCell f_acc, r_acc, avg_steps;
};

struct Comparison {
  std::array<PairedDiff, 3> by_type;  //!< by the type recorded in run A
  PairedDiff overall;
  int max_trials_a = 1;  //!< the most trials of a task in run A (> 1: tasks are compared by their means)
  int max_trials_b = 1;
  std::size_t n_only_a = 0;  //!< tasks of run A with no task of the same key in run B
  std::size_t n_only_b = 0;
  std::size_t n_type_mismatch = 0;  //!< paired tasks whose types differ between the runs (grouped by A's)
  std::vector<std::string> only_a_keys, only_b_keys;  //!< the unpaired keys, in input order
  BootstrapOptions bootstrap;
};

//! Pairs the tasks of two runs by task_key and, per group, computes each run's docs/decisions.md §3.2 value on the
//! paired tasks and the difference b − a. A task run several times enters with its per-trial mean F, R and steps
//! (trials are exchangeable, so pairing trial i with trial i would be arbitrary); runs with different numbers
//! of trials compare this way too. The interval resamples paired tasks (the same draw for both runs) and
//! recomputes the difference. Throws pwab::DataError when a (task_key, trial) occurs twice within one run.
Comparison compare(const std::vector<TaskOutcome>& a, const std::vector<TaskOutcome>& b,
                   const BootstrapOptions& options = {});

//! Which columns the table and Markdown renderings show: Avg. Steps only for the multi-turn track,
//! as in the paper's Tables 3 and 4. CSV and JSON always carry every metric.

//! The percentile interval of bootstrap `draws` (sorted here) around `value`, interpolating linearly between order
//! statistics as every interval of this area does; no draws gives [value, value]. For other areas' bootstraps
//! (report/diagnosis.h), so all intervals are read the same way.
Cell percentile_interval(double value, std::vector<double> draws, double confidence);

//! One cell as every table rendering shows it: "0.647 [0.61, 0.68]" (value to 3 decimals, interval to 2).
std::string format_cell(const Cell& cell);
//! A difference as format_comparison shows it: "+0.012 [-0.01, 0.03]".
std::string format_diff(const Cell& cell);

//! The paper's Table 3/4 layout as aligned plain text: one row named `title`, columns Search /
//! Recommendation / Review / Overall, each with Function Acc and Res Acc (and Avg. Steps for multi-turn);
//! cells read "0.647 [0.61, 0.68]" (value to 3 decimals, interval to 2). With trials.max_trials > 1, every
//! rendering adds the repeated-trials figures: the table and Markdown a second table with rows pass^1..pass^N,
//! flip rate and mixed tasks; CSV rows with metrics pass^k, flip_rate, mixed; JSON a "trials" object.
std::string format_table(const Summary& summary, std::string_view title, data::Track track = data::Track::kMultiTurn);
//! The same as a Markdown table (the leaderboard layout of docs/decisions.md §6.3) plus a line of task counts.
std::string format_markdown(const Summary& summary, std::string_view title, data::Track track = data::Track::kMultiTurn);
//! Header `group,metric,value,ci_low,ci_high,n_tasks`, then one row per group × metric; groups search,
//! recommend, review, overall; metrics f_acc, r_acc, avg_steps; numbers in shortest round-trip form.
std::string format_csv(const Summary& summary);
//! {"bootstrap": {...}, "groups": {"search": {"n_tasks", "total_steps", "f_acc": {"value", "ci_low",
//! "ci_high"}, "r_acc", "avg_steps"}, "recommend", "review", "overall"}}, indented by 2, newline-terminated.
//! With trials: each group also has "n_outcomes", and "trials": {"max_trials", "pass_rule": {"search": T, ...},
//! "groups": {"search": {"n_tasks", "pass_hat": [{"k", "value", "ci_low", "ci_high", "n_tasks"}...],
//! "n_multi", "flip_rate": cell, "mixed": cell}, ...}}.
std::string format_json(const Summary& summary);
//! A plain-text report of a comparison: per group and metric the values of A and B and b − a with its interval.
std::string format_comparison(const Comparison& comparison, std::string_view name_a, std::string_view name_b);

}  // namespace pwab::metrics
