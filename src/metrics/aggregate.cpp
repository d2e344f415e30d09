// src/metrics/aggregate.cpp: the docs/decisions.md §3.2 aggregation, the percentile bootstrap, the paired comparison,
// and pass^k and flip rates over repeated trials.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/rng.h"
#include "metrics/metrics.h"

namespace pwab::metrics {
namespace {

// What one task contributes to its group: its docs/decisions.md §3.2 score and its step count.
struct Row {
  double f = 0;
  double r = 0;
  double steps = 0;
};

// The three group values.
struct Means {
  double f = 0;
  double r = 0;
  double steps = 0;
};

// Accumulates sums and applies the docs/decisions.md §3.2 division and zero rule: all three are 0 when the group has no
// tasks or its steps add up to 0 (the original tests `total_count == 0 or interactions == 0`).
struct Sums {
  double f = 0;
  double r = 0;
  double steps = 0;
  std::size_t n = 0;
  void add(const Row& row) {
    f += row.f;
    r += row.r;
    steps += row.steps;
    ++n;
  }
  Means means() const {
    if (n == 0 || steps == 0) return {};
    auto d = static_cast<double>(n);
    return {f / d, r / d, steps / d};
  }
};

Row to_row(const TaskOutcome& t) {
  TaskScore s = score_task(t);
  return {s.f, s.r, static_cast<double>(t.steps)};
}

// One task of a run: the rows of its trials (in input order) and how many of them passed.
struct TaskRows {
  std::string_view key;  // into the outcomes
  data::TaskType type = data::TaskType::kSearch;
  std::vector<Row> rows;
  int passed = 0;
  int n() const { return static_cast<int>(rows.size()); }
  // The per-trial mean, the task's single row when comparing runs.
  Row mean() const {
    Row m;
    for (const Row& r : rows) m.f += r.f, m.r += r.r, m.steps += r.steps;
    auto d = static_cast<double>(rows.size());
    return {m.f / d, m.r / d, m.steps / d};
  }
};

// The run's tasks in order of first appearance, each with its trials. Grouped by type_index (the type of the
// task's first outcome) and overall. DataError when a (task, trial) occurs twice.
struct GroupedRun {
  std::vector<TaskRows> tasks;
  std::unordered_map<std::string_view, std::size_t> index;  // task key -> position in tasks
  int max_trials = 0;
};

GroupedRun group_by_task(const std::vector<TaskOutcome>& outcomes, const PassRule& rule, std::string_view run_name) {
  GroupedRun g;
  std::set<std::pair<std::string_view, int>> seen;
  for (const TaskOutcome& t : outcomes) {
    if (!seen.emplace(t.task_key, t.trial).second)
      throw DataError(fmt::format("{}task key '{}' trial {} occurs more than once", run_name, t.task_key, t.trial));
    auto [it, inserted] = g.index.emplace(t.task_key, g.tasks.size());
    if (inserted) g.tasks.push_back({t.task_key, t.type, {}, 0});
    TaskRows& task = g.tasks[it->second];
    task.rows.push_back(to_row(t));
    task.passed += passes(t, rule) ? 1 : 0;
    g.max_trials = std::max(g.max_trials, task.n());
  }
  return g;
}

void check_options(const BootstrapOptions& o) {
  if (o.resamples < 0) throw UsageError("bootstrap resamples must be >= 0, got " + std::to_string(o.resamples));
  if (!(o.confidence > 0 && o.confidence < 1))
    throw UsageError("bootstrap confidence must lie strictly between 0 and 1, got " + std::to_string(o.confidence));
}

// Percentile p in [0, 1] of sorted values, interpolating linearly between order statistics.
double percentile(const std::vector<double>& sorted, double p) {
  double pos = p * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Cell interval(double value, std::vector<double>& draws, double confidence) {
  if (draws.empty()) return {value, value, value};
  std::sort(draws.begin(), draws.end());
  double alpha = 1 - confidence;
  return {value, percentile(draws, alpha / 2), percentile(draws, 1 - alpha / 2)};
}

}  // namespace

Cell percentile_interval(double value, std::vector<double> draws, double confidence) {
  return interval(value, draws, confidence);
}

namespace {

// Group ids used to derive an independent random stream per group: the three types, then overall.
constexpr uint64_t kOverallGroup = 3;
// Stream ids, so a summary, a comparison and the trial figures with the same seed do not share draws.
constexpr uint64_t kSummaryStream = 0;
constexpr uint64_t kCompareStream = 1;
constexpr uint64_t kTrialStream = 2;

void add_task(Sums& s, const TaskRows& task) {
  for (const Row& row : task.rows) s.add(row);
}

// A drawn task brings all its trials; with one trial per task this draws exactly what a per-row bootstrap did.
GroupSummary summarize_group(const std::vector<const TaskRows*>& tasks, const BootstrapOptions& o, uint64_t group) {
  Sums total;
  for (const TaskRows* t : tasks) add_task(total, *t);
  Means m = total.means();
  GroupSummary g;
  g.n_tasks = tasks.size();
  g.n_outcomes = total.n;
  g.total_steps = static_cast<int64_t>(total.steps);

  std::vector<double> fs, rs, ss;
  if (!tasks.empty() && o.resamples > 0) {
    fs.reserve(o.resamples);
    rs.reserve(o.resamples);
    ss.reserve(o.resamples);
    Rng rng(derive_seed(o.seed, kSummaryStream, group));
    for (int b = 0; b < o.resamples; ++b) {
      Sums s;
      for (std::size_t i = 0; i < tasks.size(); ++i) add_task(s, *tasks[rng.below(tasks.size())]);
      Means d = s.means();
      fs.push_back(d.f);
      rs.push_back(d.r);
      ss.push_back(d.steps);
    }
  }
  g.f_acc = interval(m.f, fs, o.confidence);
  g.r_acc = interval(m.r, rs, o.confidence);
  g.avg_steps = interval(m.steps, ss, o.confidence);
  return g;
}

PairedDiff compare_group(const std::vector<Row>& a, const std::vector<Row>& b, const BootstrapOptions& o,
                         uint64_t group) {
  Sums sa, sb;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sa.add(a[i]);
    sb.add(b[i]);
  }
  Means ma = sa.means(), mb = sb.means();
  PairedDiff p;
  p.n_paired = a.size();
  std::vector<double> fs, rs, ss;
  if (!a.empty() && o.resamples > 0) {
    Rng rng(derive_seed(o.seed, kCompareStream, group));
    for (int k = 0; k < o.resamples; ++k) {
      Sums da, db;
      for (std::size_t i = 0; i < a.size(); ++i) {
        std::size_t j = rng.below(a.size());  // one draw picks the task in both runs
        da.add(a[j]);
        db.add(b[j]);
      }
      Means xa = da.means(), xb = db.means();
      fs.push_back(xb.f - xa.f);
      rs.push_back(xb.r - xa.r);
      ss.push_back(xb.steps - xa.steps);
    }
  }
  p.f_acc = {ma.f, mb.f, interval(mb.f - ma.f, fs, o.confidence)};
  p.r_acc = {ma.r, mb.r, interval(mb.r - ma.r, rs, o.confidence)};
  p.avg_steps = {ma.steps, mb.steps, interval(mb.steps - ma.steps, ss, o.confidence)};
  return p;
}

// --- repeated trials ---------------------------------------------------------------------------------------

// What one task contributes to the trial figures; NaN where the task has too few trials to count.
struct TrialRow {
  std::vector<double> pass_hat;  // [k − 1], k = 1..max_trials
  double flip = NAN;
  double mixed = NAN;
};

TrialRow trial_row(const TaskRows& t, int max_trials) {
  TrialRow row;
  for (int k = 1; k <= max_trials; ++k) row.pass_hat.push_back(k <= t.n() ? pass_hat_k(t.passed, t.n(), k) : NAN);
  if (t.n() >= 2) {
    row.flip = flip_probability(t.passed, t.n());
    row.mixed = t.passed > 0 && t.passed < t.n() ? 1 : 0;
  }
  return row;
}

// Means of the non-NaN values of each figure over a list of task rows.
struct TrialSums {
  std::vector<double> pass_sum;
  std::vector<std::size_t> pass_n;
  double flip_sum = 0, mixed_sum = 0;
  std::size_t multi_n = 0;
  explicit TrialSums(int max_trials) : pass_sum(static_cast<std::size_t>(max_trials), 0), pass_n(pass_sum.size(), 0) {}
  void add(const TrialRow& r) {
    for (std::size_t k = 0; k < r.pass_hat.size(); ++k)
      if (!std::isnan(r.pass_hat[k])) pass_sum[k] += r.pass_hat[k], ++pass_n[k];
    if (!std::isnan(r.flip)) flip_sum += r.flip, mixed_sum += r.mixed, ++multi_n;
  }
  static double mean(double sum, std::size_t n) { return n == 0 ? 0 : sum / static_cast<double>(n); }
  // pass^1..pass^K, flip rate, mixed share, in that order.
  std::vector<double> values() const {
    std::vector<double> v;
    for (std::size_t k = 0; k < pass_sum.size(); ++k) v.push_back(mean(pass_sum[k], pass_n[k]));
    v.push_back(mean(flip_sum, multi_n));
    v.push_back(mean(mixed_sum, multi_n));
    return v;
  }
};

TrialGroup summarize_trials(const std::vector<const TaskRows*>& tasks, int max_trials, const BootstrapOptions& o,
                            uint64_t group) {
  std::vector<TrialRow> rows;
  TrialSums total(max_trials);
  for (const TaskRows* t : tasks) {
    rows.push_back(trial_row(*t, max_trials));
    total.add(rows.back());
  }
  std::vector<double> value = total.values();
  std::vector<std::vector<double>> draws(value.size());
  if (!rows.empty() && o.resamples > 0) {
    Rng rng(derive_seed(o.seed, kTrialStream, group));
    for (int b = 0; b < o.resamples; ++b) {
      TrialSums s(max_trials);
      for (std::size_t i = 0; i < rows.size(); ++i) s.add(rows[rng.below(rows.size())]);
      std::vector<double> v = s.values();
      for (std::size_t m = 0; m < v.size(); ++m) draws[m].push_back(v[m]);
    }
  }
  TrialGroup g;
  g.n_tasks = tasks.size();
  g.n_multi = total.multi_n;
  g.pass_hat_tasks = total.pass_n;
  auto k = static_cast<std::size_t>(max_trials);
  for (std::size_t m = 0; m < k; ++m) g.pass_hat.push_back(interval(value[m], draws[m], o.confidence));
  g.flip_rate = interval(value[k], draws[k], o.confidence);
  g.mixed = interval(value[k + 1], draws[k + 1], o.confidence);
  return g;
}

double parse_threshold(std::string_view text, std::string_view whole) {
  std::string t(text);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(v))
    throw UsageError("--pass-threshold: '" + t + "' is not a number (in '" + std::string(whole) +
                     "'; want T or TYPE=T,... with TYPE search, recommend or review)");
  return v;
}

}  // namespace

PassRule PassRule::parse(std::string_view text) {
  PassRule rule;
  if (text.find('=') == std::string_view::npos) {
    rule.threshold.fill(parse_threshold(text, text));
    return rule;
  }
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view part = text.substr(pos, comma - pos);
    std::size_t eq = part.find('=');
    auto type = eq == std::string_view::npos ? std::nullopt : data::parse_task_type(part.substr(0, eq));
    if (!type)
      throw UsageError("--pass-threshold: '" + std::string(part) + "' is not TYPE=T with TYPE search, recommend or "
                       "review (in '" + std::string(text) + "')");
    rule.threshold[type_index(*type)] = parse_threshold(part.substr(eq + 1), text);
    pos = comma + 1;
  }
  return rule;
}

std::string PassRule::to_string() const {
  using data::TaskType;
  std::string out;
  for (TaskType t : {TaskType::kSearch, TaskType::kRecommend, TaskType::kReview})
    out += fmt::format("{}{}={:g}", out.empty() ? "" : ",", data::to_string(t), threshold[type_index(t)]);
  return out;
}

bool passes(const TaskOutcome& outcome, const PassRule& rule) {
  TaskScore s = score_task(outcome);
  return s.f == 1 && s.r > 0 && s.r >= rule.threshold[type_index(outcome.type)];
}

double pass_hat_k(int c, int n, int k) {
  if (k < 1 || k > n || c < 0 || c > n)
    throw UsageError(fmt::format("pass^k needs 1 <= k <= n and 0 <= c <= n, got c={} n={} k={}", c, n, k));
  // C(c, k) / C(n, k) = Π_{i<k} (c − i) / (n − i); a factor is 0 once i reaches c.
  double p = 1;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(c - i) / static_cast<double>(n - i);
  return std::max(p, 0.0);
}

double flip_probability(int c, int n) {
  if (n < 2 || c < 0 || c > n) throw UsageError(fmt::format("flip rate needs n >= 2 and 0 <= c <= n, got c={} n={}", c, n));
  return static_cast<double>(c) * static_cast<double>(n - c) / (static_cast<double>(n) * (n - 1) / 2.0);
}

TaskScore score_task(const TaskOutcome& outcome) {
  // No attempts: the original substitutes [0] for the empty lists, i.e. one wrong-function attempt,
  // which scores 0 / 0 below.
  const Attempt* best = nullptr;
  for (const Attempt& a : outcome.attempts) {
    if (a.function_acc != 1) continue;  // only right-function attempts count
    // Strictly greater: the first maximum wins, like Python's max over the valid indices.
    if (best == nullptr || a.result_acc > best->result_acc) best = &a;
  }
  if (best == nullptr) return {0, 0};
  return {best->function_acc, best->result_acc};
}

Summary summarize(const std::vector<TaskOutcome>& outcomes, const BootstrapOptions& options, const PassRule& rule) {
  check_options(options);
  GroupedRun run = group_by_task(outcomes, rule, "");
  std::array<std::vector<const TaskRows*>, 3> by_type;
  std::vector<const TaskRows*> all;
  all.reserve(run.tasks.size());
  for (const TaskRows& t : run.tasks) {
    by_type[type_index(t.type)].push_back(&t);
    all.push_back(&t);
  }
  Summary s;
  s.bootstrap = options;
  for (std::size_t k = 0; k < 3; ++k) s.by_type[k] = summarize_group(by_type[k], options, k);
  s.overall = summarize_group(all, options, kOverallGroup);
  s.trials.max_trials = std::max(run.max_trials, 1);
  s.trials.rule = rule;
  for (std::size_t k = 0; k < 3; ++k) s.trials.by_type[k] = summarize_trials(by_type[k], s.trials.max_trials, options, k);
  s.trials.overall = summarize_trials(all, s.trials.max_trials, options, kOverallGroup);
  return s;
}

Comparison compare(const std::vector<TaskOutcome>& a, const std::vector<TaskOutcome>& b,
                   const BootstrapOptions& options) {
  check_options(options);
  GroupedRun run_a = group_by_task(a, {}, "run A: ");
  GroupedRun run_b = group_by_task(b, {}, "run B: ");
  Comparison c;
  c.bootstrap = options;
  c.max_trials_a = std::max(run_a.max_trials, 1);
  c.max_trials_b = std::max(run_b.max_trials, 1);
  std::array<std::vector<Row>, 3> rows_a, rows_b;
  std::vector<Row> all_a, all_b;
  for (const TaskRows& ta : run_a.tasks) {
    auto it = run_b.index.find(ta.key);
    if (it == run_b.index.end()) {
      c.only_a_keys.emplace_back(ta.key);
      continue;
    }
    const TaskRows& tb = run_b.tasks[it->second];
    if (tb.type != ta.type) ++c.n_type_mismatch;
    Row ra = ta.mean(), rb = tb.mean();
    rows_a[type_index(ta.type)].push_back(ra);
    rows_b[type_index(ta.type)].push_back(rb);
    all_a.push_back(ra);
    all_b.push_back(rb);
  }
  for (const TaskRows& tb : run_b.tasks)
    if (!run_a.index.contains(tb.key)) c.only_b_keys.emplace_back(tb.key);
  c.n_only_a = c.only_a_keys.size();
  c.n_only_b = c.only_b_keys.size();
  for (std::size_t k = 0; k < 3; ++k) c.by_type[k] = compare_group(rows_a[k], rows_b[k], options, k);
  c.overall = compare_group(all_a, all_b, options, kOverallGroup);
  return c;
}

}  // namespace pwab::metrics
