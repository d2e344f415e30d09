// src/metrics/aggregate.cpp: the §3.2 aggregation, the percentile bootstrap and the paired comparison.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "core/rng.h"
#include "metrics/metrics.h"

namespace pwab::metrics {
namespace {

// What one task contributes to its group: its §3.2 score and its step count.
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

// Accumulates sums and applies the §3.2 division and zero rule: all three are 0 when the group has no tasks
// or its steps add up to 0 (the original tests `total_count == 0 or interactions == 0`).
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

// Group ids used to derive an independent random stream per group: the three types, then overall.
constexpr uint64_t kOverallGroup = 3;
// Stream ids, so a summary and a comparison with the same seed do not share draws.
constexpr uint64_t kSummaryStream = 0;
constexpr uint64_t kCompareStream = 1;

GroupSummary summarize_group(const std::vector<Row>& rows, const BootstrapOptions& o, uint64_t group) {
  Sums total;
  for (const Row& row : rows) total.add(row);
  Means m = total.means();
  GroupSummary g;
  g.n_tasks = rows.size();
  g.total_steps = static_cast<int64_t>(total.steps);

  std::vector<double> fs, rs, ss;
  if (!rows.empty() && o.resamples > 0) {
    fs.reserve(o.resamples);
    rs.reserve(o.resamples);
    ss.reserve(o.resamples);
    Rng rng(derive_seed(o.seed, kSummaryStream, group));
    for (int b = 0; b < o.resamples; ++b) {
      Sums s;
      for (std::size_t i = 0; i < rows.size(); ++i) s.add(rows[rng.below(rows.size())]);
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

std::unordered_map<std::string_view, std::size_t> index_by_key(const std::vector<TaskOutcome>& run,
                                                               std::string_view run_name) {
  std::unordered_map<std::string_view, std::size_t> index;
  index.reserve(run.size());
  for (std::size_t i = 0; i < run.size(); ++i) {
    if (!index.emplace(run[i].task_key, i).second)
      throw DataError("run " + std::string(run_name) + ": task key '" + run[i].task_key + "' occurs more than once");
  }
  return index;
}

}  // namespace

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

Summary summarize(const std::vector<TaskOutcome>& outcomes, const BootstrapOptions& options) {
  check_options(options);
  std::array<std::vector<Row>, 3> by_type;
  std::vector<Row> all;
  all.reserve(outcomes.size());
  for (const TaskOutcome& t : outcomes) {
    Row row = to_row(t);
    by_type[type_index(t.type)].push_back(row);
    all.push_back(row);
  }
  Summary s;
  s.bootstrap = options;
  for (std::size_t k = 0; k < 3; ++k) s.by_type[k] = summarize_group(by_type[k], options, k);
  s.overall = summarize_group(all, options, kOverallGroup);
  return s;
}

Comparison compare(const std::vector<TaskOutcome>& a, const std::vector<TaskOutcome>& b,
                   const BootstrapOptions& options) {
  check_options(options);
  auto index_a = index_by_key(a, "A");
  auto index_b = index_by_key(b, "B");
  Comparison c;
  c.bootstrap = options;
  std::array<std::vector<Row>, 3> rows_a, rows_b;
  std::vector<Row> all_a, all_b;
  for (const TaskOutcome& ta : a) {
    auto it = index_b.find(ta.task_key);
    if (it == index_b.end()) {
      c.only_a_keys.push_back(ta.task_key);
      continue;
    }
    const TaskOutcome& tb = b[it->second];
    if (tb.type != ta.type) ++c.n_type_mismatch;
    Row ra = to_row(ta), rb = to_row(tb);
    rows_a[type_index(ta.type)].push_back(ra);
    rows_b[type_index(ta.type)].push_back(rb);
    all_a.push_back(ra);
    all_b.push_back(rb);
  }
  for (const TaskOutcome& tb : b)
    if (!index_a.contains(tb.task_key)) c.only_b_keys.push_back(tb.task_key);
  c.n_only_a = c.only_a_keys.size();
  c.n_only_b = c.only_b_keys.size();
  for (std::size_t k = 0; k < 3; ++k) c.by_type[k] = compare_group(rows_a[k], rows_b[k], options, k);
  c.overall = compare_group(all_a, all_b, options, kOverallGroup);
  return c;
}

}  // namespace pwab::metrics
