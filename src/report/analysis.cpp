// The paper's analysis figures from a run's records (analysis.h).
#include "report/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "env/tools.h"

namespace pwab::report {
namespace {

using Json = nlohmann::json;

constexpr std::array<const char*, 4> kGroupIds = {"search", "recommend", "review", "overall"};
constexpr std::array<const char*, 4> kGroupNames = {"Search", "Recommendation", "Review", "Overall"};

// Nearest-rank percentile of sorted values (p in (0, 1]).
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

TimeStats time_stats(const std::vector<const runner::TaskRecord*>& records) {
  TimeStats t;
  t.n = records.size();
  if (records.empty()) return t;
  std::vector<double> totals;
  for (const runner::TaskRecord* r : records) {
    totals.push_back(r->seconds_agent + r->seconds_env);
    t.mean_agent += r->seconds_agent;
    t.mean_env += r->seconds_env;
  }
  const double n = static_cast<double>(records.size());
  t.mean_agent /= n;
  t.mean_env /= n;
  t.mean = t.mean_agent + t.mean_env;
  std::sort(totals.begin(), totals.end());
  t.median = percentile(totals, 0.5);
  t.p90 = percentile(totals, 0.9);
  return t;
}

void add_episode(TurnFlow& flow, const runner::TaskRecord& r) {
  ++flow.episodes;
  std::string previous = "start";
  for (std::size_t t = 0; t < r.actions.size(); ++t) {
    const std::string label = action_label(r.actions[t].action.name);
    if (flow.actions.size() <= t) {
      flow.actions.resize(t + 1);
      flow.links.resize(t + 1);
    }
    ++flow.actions[t][label];
    ++flow.links[t][{previous, label}];
    ++flow.totals[{previous, label}];
    previous = label;
  }
  ++flow.totals[{previous, "end"}];
}

// The labels in their figure order, then any others.
std::vector<std::string> ordered(const std::set<std::string>& labels) {
  static const std::vector<std::string> kOrder = {"start",   "search", "recommend", "review",
                                                  "details", "respond", "stop",     "other", "end"};
  std::vector<std::string> out;
  for (const auto& l : kOrder)
    if (labels.count(l)) out.push_back(l);
  return out;
}

Json transitions_json(const std::map<Transition, std::size_t>& links) {
  Json out = Json::array();
  for (const auto& [edge, count] : links) out.push_back({{"from", edge.first}, {"to", edge.second}, {"count", count}});
  return out;
}

std::string seconds(double s) { return fmt::format("{:.4f}", s); }

}  // namespace

std::string action_label(const std::string& name) {
  if (name == env::kSearch) return "search";
  if (name == env::kRecommend) return "recommend";
  if (name == env::kAddReview) return "review";
  if (name == env::kProductDetails) return "details";
  if (name == env::kRespond) return "respond";
  if (name == env::kStop) return "stop";
  return "other";
}

const StepRow* find_step(const std::vector<StepRow>& rows, int step) {
  auto it = std::find_if(rows.begin(), rows.end(), [step](const StepRow& r) { return r.step == step; });
  return it == rows.end() ? nullptr : &*it;
}

Analysis analyze(const runner::Run& run, const metrics::PassRule& rule) {
  Analysis a;
  a.multi_turn = run.track == data::Track::kMultiTurn;
  a.rule = rule;
  std::array<std::vector<const runner::TaskRecord*>, 4> finished;
  std::array<std::map<int, StepRow>, 4> by_step;
  for (const runner::TaskRecord& r : run.records) {
    if (!r.error.empty()) continue;
    const std::size_t type = metrics::type_index(r.type);
    for (std::size_t g : {type, std::size_t{3}}) finished[g].push_back(&r);
    if (!a.multi_turn) continue;
    add_episode(a.flows[type], r);
    const metrics::TaskOutcome outcome = r.outcome();
    const double res = metrics::score_task(outcome).r;
    const bool solved = metrics::passes(outcome, rule);
    for (std::size_t g : {type, std::size_t{3}}) {
      StepRow& row = by_step[g][r.steps];
      row.step = r.steps;
      ++row.ended;
      row.solved += solved;
      row.r_acc += res;  // a sum until divided below
    }
  }
  for (std::size_t g = 0; g < 4; ++g) {
    a.time[g] = time_stats(finished[g]);
    for (auto& [step, row] : by_step[g]) {
      row.r_acc /= static_cast<double>(row.ended);
      a.steps[g].push_back(row);
    }
  }
  return a;
}

std::string analysis_json(const Analysis& a) {
  Json out;
  for (std::size_t g = 0; g < 4; ++g) {
    const TimeStats& t = a.time[g];
    out["time"][kGroupIds[g]] = {{"n", t.n},           {"mean", t.mean},           {"median", t.median},
                                 {"p90", t.p90},       {"mean_agent", t.mean_agent}, {"mean_env", t.mean_env}};
  }
  if (!a.multi_turn) return out.dump(2);
  for (std::size_t g = 0; g < 3; ++g) {
    const TurnFlow& f = a.flows[g];
    Json turns = Json::array();
    for (std::size_t t = 0; t < f.actions.size(); ++t)
      turns.push_back({{"turn", t + 1}, {"actions", f.actions[t]}, {"links", transitions_json(f.links[t])}});
    out["transitions"][kGroupIds[g]] = {
        {"episodes", f.episodes}, {"turns", std::move(turns)}, {"totals", transitions_json(f.totals)}};
  }
  out["by_step"]["pass_rule"] = {{"search", a.rule.threshold[0]}, {"recommend", a.rule.threshold[1]},
                                 {"review", a.rule.threshold[2]}};
  for (std::size_t g = 0; g < 4; ++g) {
    Json rows = Json::array();
    for (const StepRow& r : a.steps[g])
      rows.push_back({{"step", r.step}, {"ended", r.ended}, {"solved", r.solved}, {"r_acc", r.r_acc}});
    out["by_step"][kGroupIds[g]] = std::move(rows);
  }
  return out.dump(2);
}

std::string analysis_markdown(const Analysis& a) {
  std::string md = "\n### Time per task (seconds; the paper's Figure 7)\n\n"
                   "| Group | Tasks | Mean | Median | p90 | Agent (mean) | Environment (mean) |\n"
                   "|---|---|---|---|---|---|---|\n";
  for (std::size_t g = 0; g < 4; ++g) {
    const TimeStats& t = a.time[g];
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", kGroupNames[g], t.n, seconds(t.mean),
                      seconds(t.median), seconds(t.p90), seconds(t.mean_agent), seconds(t.mean_env));
  }
  if (!a.multi_turn) return md;

  md += "\n### Action transitions (the paper's Figure 8)\n\nRows: an action (or the episode's start); columns: the "
        "action that followed it (or the episode's end); cells: how often, over all turns.\n";
  for (std::size_t g = 0; g < 3; ++g) {
    const TurnFlow& f = a.flows[g];
    md += fmt::format("\n#### {} ({} episodes)\n\n", kGroupNames[g], f.episodes);
    if (f.episodes == 0) continue;
    std::set<std::string> from, to;
    for (const auto& [edge, count] : f.totals) from.insert(edge.first), to.insert(edge.second);
    const auto rows = ordered(from), cols = ordered(to);
    md += "| from \\ to |";
    for (const auto& c : cols) md += " " + c + " |";
    md += "\n|---|";
    for (std::size_t i = 0; i < cols.size(); ++i) md += "---|";
    md += "\n";
    for (const auto& r : rows) {
      md += "| " + r + " |";
      for (const auto& c : cols) {
        auto it = f.totals.find({r, c});
        md += it == f.totals.end() ? " |" : fmt::format(" {} |", it->second);
      }
      md += "\n";
    }
    md += "\nActions per turn:\n\n| action |";
    for (std::size_t t = 0; t < f.actions.size(); ++t) md += fmt::format(" {} |", t + 1);
    md += "\n|---|";
    for (std::size_t t = 0; t < f.actions.size(); ++t) md += "---|";
    md += "\n";
    std::set<std::string> labels;
    for (const auto& turn : f.actions)
      for (const auto& [label, n] : turn) labels.insert(label);
    for (const auto& label : ordered(labels)) {
      md += "| " + label + " |";
      for (const auto& turn : f.actions) {
        auto it = turn.find(label);
        md += it == turn.end() ? " |" : fmt::format(" {} |", it->second);
      }
      md += "\n";
    }
  }

  md += fmt::format("\n### Tasks and Res Acc by attempt step (the paper's Figure 9)\n\nPer number of agent steps an "
                    "episode took: the episodes that ended there, how many were solved (pass rule {}), and their "
                    "mean Res Acc.\n\n| Step |",
                    a.rule.to_string());
  for (std::size_t g = 0; g < 4; ++g) md += fmt::format(" {0} ended | {0} solved | {0} Res Acc |", kGroupNames[g]);
  md += "\n|---|";
  for (std::size_t i = 0; i < 12; ++i) md += "---|";
  md += "\n";
  for (const StepRow& overall : a.steps[3]) {
    md += fmt::format("| {} |", overall.step);
    for (std::size_t g = 0; g < 4; ++g) {
      const StepRow* r = find_step(a.steps[g], overall.step);
      md += r ? fmt::format(" {} | {} | {:.3f} |", r->ended, r->solved, r->r_acc) : " 0 | 0 | |";
    }
    md += "\n";
  }
  return md;
}

}  // namespace pwab::report
