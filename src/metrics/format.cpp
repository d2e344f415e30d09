// src/metrics/format.cpp: plain-text table, Markdown, CSV and JSON renderings of a Summary (with the
// repeated-trials figures when a run has them), and the plain-text report of a Comparison.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "metrics/metrics.h"

namespace pwab::metrics {
namespace {

struct GroupRef {
  std::string_view display;  // table heading
  std::string_view id;       // CSV / JSON name
  const GroupSummary* group;
};

std::array<GroupRef, 4> groups_of(const Summary& s) {
  using data::TaskType;
  return {{{"Search", data::to_string(TaskType::kSearch), &s.by_type[type_index(TaskType::kSearch)]},
           {"Recommendation", data::to_string(TaskType::kRecommend), &s.by_type[type_index(TaskType::kRecommend)]},
           {"Review", data::to_string(TaskType::kReview), &s.by_type[type_index(TaskType::kReview)]},
           {"Overall", "overall", &s.overall}}};
}

struct MetricRef {
  std::string_view display;
  std::string_view id;
  Cell GroupSummary::*cell;
};

constexpr MetricRef kMetrics[] = {{"Function Acc", "f_acc", &GroupSummary::f_acc},
                                  {"Res Acc", "r_acc", &GroupSummary::r_acc},
                                  {"Avg. Steps", "avg_steps", &GroupSummary::avg_steps}};

std::size_t n_metrics(data::Track track) { return track == data::Track::kMultiTurn ? 3 : 2; }

bool has_trials(const Summary& s) { return s.trials.max_trials > 1; }

// "n = 10", or with several trials per task "n = 10 (30 runs)".
std::string count_text(const GroupSummary& g, bool trials) {
  if (!trials) return fmt::format("n = {}", g.n_tasks);
  return fmt::format("n = {} ({} runs)", g.n_tasks, g.n_outcomes);
}

// The repeated-trials groups in the column order of groups_of().
std::array<const TrialGroup*, 4> trial_groups(const Summary& s) {
  using data::TaskType;
  return {&s.trials.by_type[type_index(TaskType::kSearch)], &s.trials.by_type[type_index(TaskType::kRecommend)],
          &s.trials.by_type[type_index(TaskType::kReview)], &s.trials.overall};
}

// One repeated-trials figure: its display name, CSV/JSON id, and per group its cell and the tasks it averages.
struct TrialMetric {
  std::string display;
  std::string id;
  std::array<Cell, 4> cells;
  std::array<std::size_t, 4> n_tasks;
};

// pass^1..pass^N, the flip rate and the share of mixed tasks, for every group.
std::vector<TrialMetric> trial_metrics(const Summary& s) {
  auto groups = trial_groups(s);
  std::vector<TrialMetric> out;
  for (std::size_t k = 0; k < static_cast<std::size_t>(s.trials.max_trials); ++k) {
    TrialMetric m{fmt::format("pass^{}", k + 1), fmt::format("pass^{}", k + 1), {}, {}};
    for (std::size_t g = 0; g < groups.size(); ++g) {
      m.cells[g] = groups[g]->pass_hat[k];
      m.n_tasks[g] = groups[g]->pass_hat_tasks[k];
    }
    out.push_back(std::move(m));
  }
  TrialMetric flip{"Flip rate", "flip_rate", {}, {}}, mixed{"Mixed tasks", "mixed", {}, {}};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    flip.cells[g] = groups[g]->flip_rate;
    mixed.cells[g] = groups[g]->mixed;
    flip.n_tasks[g] = mixed.n_tasks[g] = groups[g]->n_multi;
  }
  out.push_back(std::move(flip));
  out.push_back(std::move(mixed));
  return out;
}

// The sentence under the trials tables: what a pass is and what the figures mean.
std::string trials_note(const Summary& s) {
  return fmt::format(
      "Trials: up to {} per task. A trial passes when F = 1, R > 0 and R >= the type's threshold ({}). pass^k: "
      "chance that k trials of a task all pass (C(c,k)/C(n,k), mean over tasks). Flip rate: chance that two "
      "trials of a task disagree. Mixed tasks: share with both outcomes.\n",
      s.trials.max_trials, s.trials.rule.to_string());
}

std::string method_note(const BootstrapOptions& o, std::string_view over) {
  return fmt::format("percentile bootstrap over {} ({} resamples, seed {})", over, o.resamples, o.seed);
}

void rstrip_append(std::string& out, std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
}

std::string pad(std::string_view s, std::size_t width) {
  std::string r(s);
  if (r.size() < width) r.append(width - r.size(), ' ');
  return r;
}

std::string markdown_escape(std::string_view s) {
  std::string r;
  for (char ch : s) {
    if (ch == '|') r += '\\';
    r += ch;
  }
  return r;
}

// Writes rows of cells as columns separated by two spaces, each as wide as its widest cell.
void append_aligned(std::string& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      line += pad(row[i], widths[i]);
    }
    rstrip_append(out, std::move(line));
  }
}

}  // namespace

std::string format_cell(const Cell& c) { return fmt::format("{:.3f} [{:.2f}, {:.2f}]", c.value, c.ci_low, c.ci_high); }
std::string format_diff(const Cell& c) { return fmt::format("{:+.3f} [{:.2f}, {:.2f}]", c.value, c.ci_low, c.ci_high); }

std::string format_table(const Summary& summary, std::string_view title, data::Track track) {
  auto groups = groups_of(summary);
  std::size_t k = n_metrics(track);
  // Cell texts first, so each column can be sized to its widest entry.
  std::vector<std::vector<std::string>> cells(groups.size());
  std::vector<std::vector<std::size_t>> widths(groups.size());
  std::vector<std::size_t> spans(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::size_t span = 0;
    for (std::size_t m = 0; m < k; ++m) {
      cells[g].push_back(format_cell(groups[g].group->*kMetrics[m].cell));
      widths[g].push_back(std::max(cells[g].back().size(), kMetrics[m].display.size()));
      span += widths[g].back() + (m > 0 ? 2 : 0);
    }
    // The group heading and the task count must fit in the span; widen the last column if not.
    std::string count = count_text(*groups[g].group, has_trials(summary));
    std::size_t need = std::max(groups[g].display.size(), count.size());
    if (need > span) {
      widths[g].back() += need - span;
      span = need;
    }
    spans[g] = span;
  }
  std::size_t label_width = std::max<std::size_t>({title.size(), std::string_view("Method").size()});

  std::string heading = pad("Method", label_width), metrics = pad("", label_width), row = pad(title, label_width),
              counts = pad("Tasks", label_width);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    heading += " | " + pad(groups[g].display, spans[g]);
    counts += " | " + pad(count_text(*groups[g].group, has_trials(summary)), spans[g]);
    metrics += " | ";
    row += " | ";
    for (std::size_t m = 0; m < k; ++m) {
      if (m > 0) {
        metrics += "  ";
        row += "  ";
      }
      metrics += pad(kMetrics[m].display, widths[g][m]);
      row += pad(cells[g][m], widths[g][m]);
    }
  }
  std::string out;
  rstrip_append(out, std::move(heading));
  rstrip_append(out, std::move(metrics));
  rstrip_append(out, std::move(row));
  rstrip_append(out, std::move(counts));
  out += fmt::format("Cells: value [{:g}% CI], {}.\n", summary.bootstrap.confidence * 100,
                     method_note(summary.bootstrap, "tasks"));
  if (has_trials(summary)) {
    std::vector<std::vector<std::string>> rows = {{"", "Search", "Recommendation", "Review", "Overall"}};
    for (const TrialMetric& m : trial_metrics(summary)) {
      rows.push_back({m.display});
      for (const Cell& c : m.cells) rows.back().push_back(format_cell(c));
    }
    out += "\n";
    append_aligned(out, rows);
    out += trials_note(summary);
  }
  return out;
}

std::string format_markdown(const Summary& summary, std::string_view title, data::Track track) {
  auto groups = groups_of(summary);
  std::size_t k = n_metrics(track);
  std::string header = "| Method |", rule = "|---|", row = "| " + markdown_escape(title) + " |";
  for (const GroupRef& g : groups) {
    for (std::size_t m = 0; m < k; ++m) {
      header += fmt::format(" {} {} |", g.display, kMetrics[m].display);
      rule += "---|";
      row += " " + format_cell(g.group->*kMetrics[m].cell) + " |";
    }
  }
  std::string out = header + "\n" + rule + "\n" + row + "\n\n";
  out += fmt::format("Tasks: search {}, recommendation {}, review {}, overall {}. ", groups[0].group->n_tasks,
                     groups[1].group->n_tasks, groups[2].group->n_tasks, groups[3].group->n_tasks);
  if (has_trials(summary))
    out += fmt::format("Runs (task x trial): search {}, recommendation {}, review {}, overall {}. ",
                       groups[0].group->n_outcomes, groups[1].group->n_outcomes, groups[2].group->n_outcomes,
                       groups[3].group->n_outcomes);
  out += fmt::format("Cells: value [{:g}% CI], {}.\n", summary.bootstrap.confidence * 100,
                     method_note(summary.bootstrap, "tasks"));
  if (has_trials(summary)) {
    out += "\n| Trials | Search | Recommendation | Review | Overall |\n|---|---|---|---|---|\n";
    for (const TrialMetric& m : trial_metrics(summary)) {
      out += "| " + m.display + " |";
      for (const Cell& c : m.cells) out += " " + format_cell(c) + " |";
      out += "\n";
    }
    out += "\n" + trials_note(summary);
  }
  return out;
}

std::string format_csv(const Summary& summary) {
  std::string out = "group,metric,value,ci_low,ci_high,n_tasks\n";
  for (const GroupRef& g : groups_of(summary)) {
    for (const MetricRef& m : kMetrics) {
      const Cell& c = g.group->*m.cell;
      out += fmt::format("{},{},{},{},{},{}\n", g.id, m.id, c.value, c.ci_low, c.ci_high, g.group->n_tasks);
    }
  }
  if (has_trials(summary)) {
    auto groups = groups_of(summary);
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (const TrialMetric& m : trial_metrics(summary)) {
        const Cell& c = m.cells[g];
        out += fmt::format("{},{},{},{},{},{}\n", groups[g].id, m.id, c.value, c.ci_low, c.ci_high, m.n_tasks[g]);
      }
  }
  return out;
}

std::string format_json(const Summary& summary) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["bootstrap"] = {{"method", "percentile"},
                    {"resamples", summary.bootstrap.resamples},
                    {"confidence", summary.bootstrap.confidence},
                    {"seed", summary.bootstrap.seed}};
  auto cell_json = [](const Cell& c) { return Json{{"value", c.value}, {"ci_low", c.ci_low}, {"ci_high", c.ci_high}}; };
  Json groups = Json::object();
  for (const GroupRef& g : groups_of(summary)) {
    Json group = {{"n_tasks", g.group->n_tasks}};
    if (has_trials(summary)) group["n_outcomes"] = g.group->n_outcomes;
    group["total_steps"] = g.group->total_steps;
    for (const MetricRef& m : kMetrics) {
      const Cell& c = g.group->*m.cell;
      group[std::string(m.id)] = cell_json(c);
    }
    groups[std::string(g.id)] = std::move(group);
  }
  j["groups"] = std::move(groups);
  if (has_trials(summary)) {
    Json rule = Json::object();
    for (data::TaskType t : {data::TaskType::kSearch, data::TaskType::kRecommend, data::TaskType::kReview})
      rule[std::string(data::to_string(t))] = summary.trials.rule.threshold[type_index(t)];
    Json trial_groups_json = Json::object();
    auto names = groups_of(summary);
    auto groups_t = trial_groups(summary);
    for (std::size_t g = 0; g < groups_t.size(); ++g) {
      const TrialGroup& tg = *groups_t[g];
      Json pass_hat = Json::array();
      for (std::size_t k = 0; k < tg.pass_hat.size(); ++k) {
        Json cell = {{"k", k + 1}};
        cell.update(cell_json(tg.pass_hat[k]));
        cell["n_tasks"] = tg.pass_hat_tasks[k];
        pass_hat.push_back(std::move(cell));
      }
      trial_groups_json[std::string(names[g].id)] = {{"n_tasks", tg.n_tasks},     {"pass_hat", std::move(pass_hat)},
                                                     {"n_multi", tg.n_multi},     {"flip_rate", cell_json(tg.flip_rate)},
                                                     {"mixed", cell_json(tg.mixed)}};
    }
    j["trials"] = {{"max_trials", summary.trials.max_trials},
                   {"pass_rule", std::move(rule)},
                   {"groups", std::move(trial_groups_json)}};
  }
  return j.dump(2) + "\n";
}

std::string format_comparison(const Comparison& c, std::string_view name_a, std::string_view name_b) {
  std::string out = fmt::format("Paired comparison: B = {} minus A = {}\n", name_b, name_a);
  out += fmt::format("Paired tasks: {} (only in A: {}, only in B: {}, type differs: {})\n", c.overall.n_paired,
                     c.n_only_a, c.n_only_b, c.n_type_mismatch);
  auto list_keys = [&](std::string_view label, const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    constexpr std::size_t kShown = 10;
    std::string line = fmt::format("Only in {}:", label);
    for (std::size_t i = 0; i < keys.size() && i < kShown; ++i) line += (i ? ", " : " ") + keys[i];
    if (keys.size() > kShown) line += fmt::format(", ... ({} more)", keys.size() - kShown);
    out += line + "\n";
  };
  list_keys("A", c.only_a_keys);
  list_keys("B", c.only_b_keys);
  if (c.max_trials_a > 1 || c.max_trials_b > 1)
    out += fmt::format("Trials: up to {} per task in A, {} in B; each task enters with its mean over its trials.\n",
                       c.max_trials_a, c.max_trials_b);
  out += fmt::format("Cells: B - A [{:g}% CI], {}.\n\n", c.bootstrap.confidence * 100,
                     method_note(c.bootstrap, "paired tasks"));

  std::vector<std::vector<std::string>> rows;
  rows.push_back({"Group", "n", "Metric", std::string(name_a), std::string(name_b), "B - A"});
  const std::pair<std::string_view, const PairedDiff*> groups[] = {
      {"Search", &c.by_type[type_index(data::TaskType::kSearch)]},
      {"Recommendation", &c.by_type[type_index(data::TaskType::kRecommend)]},
      {"Review", &c.by_type[type_index(data::TaskType::kReview)]},
      {"Overall", &c.overall}};
  const std::pair<std::string_view, DiffCell PairedDiff::*> metrics[] = {{"Function Acc", &PairedDiff::f_acc},
                                                                          {"Res Acc", &PairedDiff::r_acc},
                                                                          {"Avg. Steps", &PairedDiff::avg_steps}};
  for (const auto& [name, group] : groups) {
    for (const auto& [metric, member] : metrics) {
      const DiffCell& d = group->*member;
      rows.push_back({std::string(name), std::to_string(group->n_paired), std::string(metric),
                      fmt::format("{:.3f}", d.a), fmt::format("{:.3f}", d.b), format_diff(d.diff)});
    }
  }
  append_aligned(out, rows);
  return out;
}

}  // namespace pwab::metrics
