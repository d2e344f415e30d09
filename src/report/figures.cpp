// src/report/figures.cpp: the report's repeated-trials tables and the paper's analysis figures (Figures 7, 8 and
// 9) as inline SVG with their tables. The numbers come from metrics::summarize and report::analyze, the same
// calls `pwab score --format json|md` makes, and are formatted as it formats them.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "report/analysis.h"
#include "report/html_parts.h"

namespace pwab::report::html {
namespace {

constexpr std::array<std::string_view, 4> kGroupIds = {"search", "recommend", "review", "overall"};
constexpr std::array<std::string_view, 4> kGroupNames = {"Search", "Recommendation", "Review", "Overall"};
const std::vector<std::string> kLabelOrder = {"start", "search", "recommend", "review", "details",
                                              "respond", "stop", "other", "end"};

const metrics::TrialGroup& trial_group(const metrics::TrialSummary& t, std::size_t g) {
  return g < 3 ? t.by_type[g] : t.overall;
}

std::string seconds(double s) { return fmt::format("{:.4f}", s); }

//! A <td> whose text a test reads back by its data-metric name.
std::string metric_td(const std::string& name, const std::string& text, const char* cls = "num") {
  return fmt::format("<td class=\"{}\" data-metric=\"{}\">{}</td>", cls, escape(name), text);
}

std::vector<std::string> in_figure_order(const std::set<std::string>& labels) {
  std::vector<std::string> out;
  for (const auto& l : kLabelOrder)
    if (labels.count(l)) out.push_back(l);
  return out;
}

// --- Figure 7: time per task ---------------------------------------------------------------------------

void append_time(std::string& out, const std::vector<runner::Run>& runs, const std::vector<Analysis>& an) {
  out += "<h3>Time per task (the paper's Figure 7)</h3>";
  const double width = 900, left = 260, right = 110, row = 24, top = 6;
  const double height = top * 2 + row * static_cast<double>(runs.size());
  double longest = 0;
  for (const Analysis& a : an) longest = std::max(longest, a.time[3].mean);
  const double scale = longest > 0 ? (width - left - right) / longest : 0;
  out += fmt::format("<figure class=\"chart wide\"><figcaption>Mean seconds per task, all types (dark: the agent, "
                     "light: tools and the user simulator)</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" "
                     "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"Mean time per task by run\">",
                     width, height);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const TimeStats& t = an[i].time[3];
    const double y = top + row * static_cast<double>(i);
    const double agent_w = t.mean_agent * scale, env_w = t.mean_env * scale;
    out += fmt::format(
        "<g data-figure=\"time.{0}\"><title>{0} {1}: {2} s per task ({3} s agent, {4} s environment; median {5}, "
        "p90 {6})</title><text class=\"rowlabel\" x=\"{7}\" y=\"{8:.1f}\">{0} {1}</text><rect class=\"c{9}\" "
        "x=\"{10}\" y=\"{11:.1f}\" width=\"{12:.1f}\" height=\"{13}\"/><rect class=\"c{9} light\" x=\"{14:.1f}\" "
        "y=\"{11:.1f}\" width=\"{15:.1f}\" height=\"{13}\"/><text class=\"value\" x=\"{16:.1f}\" y=\"{8:.1f}\">{2} "
        "s</text></g>",
        run_id(i), escape(runs[i].title), seconds(t.mean), seconds(t.mean_agent), seconds(t.mean_env),
        seconds(t.median), seconds(t.p90), left - 8, y + row * 0.68, i % 8, left, y + 4, agent_w, row - 8,
        left + agent_w, env_w, left + agent_w + env_w + 6);
  }
  out += "</svg></figure>";
  out += "<div class=\"scroll\"><table class=\"scores analysis\"><thead><tr><th>Run</th>";
  for (std::size_t g = 0; g < 3; ++g) out += fmt::format("<th class=\"group\">{} mean</th>", kGroupNames[g]);
  out += "<th class=\"group\">Overall mean</th><th>Median</th><th>p90</th><th>Agent</th><th>Environment</th>"
         "<th>Tasks</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string id = run_id(i);
    out += fmt::format("<tr><th class=\"method\"><span class=\"swatch c{}\"></span>{} {}</th>", i % 8, id,
                       escape(runs[i].title));
    for (std::size_t g = 0; g < 4; ++g)
      out += metric_td(fmt::format("{}.time.{}.mean", id, kGroupIds[g]), seconds(an[i].time[g].mean), "num group");
    const TimeStats& t = an[i].time[3];
    out += metric_td(id + ".time.overall.median", seconds(t.median)) +
           metric_td(id + ".time.overall.p90", seconds(t.p90)) +
           metric_td(id + ".time.overall.mean_agent", seconds(t.mean_agent)) +
           metric_td(id + ".time.overall.mean_env", seconds(t.mean_env)) +
           metric_td(id + ".time.overall.n", std::to_string(t.n)) + "</tr>\n";
  }
  out += "</tbody></table></div><p class=\"note\">Seconds of wall time per finished (task, trial): the agent "
         "deciding (its LLM calls included) and the environment (tools and the user simulator). Errored tasks are "
         "left out. The paper measured single-turn runs on 100 tasks.</p>";
}

// --- Figure 8: action transitions ----------------------------------------------------------------------

//! One flow diagram: a column per turn (the start first), a node per action with its count, a band per
//! transition between consecutive turns, its width the number of episodes.
void append_flow(std::string& out, const std::string& id, std::size_t g, const TurnFlow& f) {
  out += fmt::format("<figure class=\"chart flow\"><figcaption>{} ({} episodes)</figcaption>", kGroupNames[g],
                     f.episodes);
  if (f.episodes == 0) {
    out += "<p class=\"note\">No episodes.</p></figure>";
    return;
  }
  const std::size_t turns = f.actions.size();
  // One size for every diagram, so that runs and types compare at a glance; the columns share the width.
  const double width = 760, height = 220, left = 8, right = 36, top = 8, bottom = 22, node_w = 9, gap = 5;
  // The columns: 0 is the start (every episode), t the actions of turn t.
  std::vector<std::vector<std::pair<std::string, std::size_t>>> columns(turns + 1);
  columns[0].push_back({"start", f.episodes});
  std::size_t most_nodes = 1;
  for (std::size_t t = 0; t < turns; ++t) {
    std::set<std::string> labels;
    for (const auto& [label, n] : f.actions[t]) labels.insert(label);
    for (const auto& label : in_figure_order(labels)) columns[t + 1].push_back({label, f.actions[t].at(label)});
    most_nodes = std::max(most_nodes, columns[t + 1].size());
  }
  const double scale = (height - top - bottom - gap * static_cast<double>(most_nodes - 1)) /
                       static_cast<double>(f.episodes);
  auto x_of = [&](std::size_t c) {
    const double spacing = (width - left - right - node_w) / static_cast<double>(std::max<std::size_t>(turns, 1));
    return left + spacing * static_cast<double>(c);
  };
  std::vector<std::map<std::string, double>> y(turns + 1);  // each node's top
  for (std::size_t c = 0; c <= turns; ++c) {
    double at = top;
    for (const auto& [label, n] : columns[c]) {
      y[c][label] = at;
      at += static_cast<double>(n) * scale + gap;
    }
  }
  out += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{} "
                     "action transitions turn by turn\">",
                     width, height, kGroupNames[g]);
  // Bands first (under the nodes). Within a node, bands leave and arrive in the order of the nodes at their other end.
  for (std::size_t t = 1; t <= turns; ++t) {
    std::map<std::string, double> out_offset, in_offset;
    auto rank = [&](std::size_t c, const std::string& label) { return y[c].at(label); };
    std::vector<std::pair<Transition, std::size_t>> links(f.links[t - 1].begin(), f.links[t - 1].end());
    std::sort(links.begin(), links.end(), [&](const auto& a, const auto& b) {
      return std::pair(rank(t - 1, a.first.first), rank(t, a.first.second)) <
             std::pair(rank(t - 1, b.first.first), rank(t, b.first.second));
    });
    const double x1 = x_of(t - 1) + node_w, x2 = x_of(t), xm = (x1 + x2) / 2;
    for (const auto& [edge, n] : links) {
      const auto& [from, to] = edge;
      const double h = static_cast<double>(n) * scale;
      const double ys = y[t - 1].at(from) + out_offset[from], yt = y[t].at(to) + in_offset[to];
      out_offset[from] += h;
      in_offset[to] += h;
      out += fmt::format("<path class=\"link lab-{0}\" data-link=\"{1}.{2}.{3}.{0}.{4}\" d=\"M{5:.1f} {6:.1f}C{7:.1f} "
                         "{6:.1f} {7:.1f} {8:.1f} {9:.1f} {8:.1f}V{10:.1f}C{7:.1f} {10:.1f} {7:.1f} {11:.1f} {5:.1f} "
                         "{11:.1f}Z\"><title>turn {3}: {0} → {4}: {12}</title></path>",
                         from, id, kGroupIds[g], t, to, x1, ys, xm, yt, x2, yt + h, ys + h, n);
    }
  }
  for (std::size_t c = 0; c <= turns; ++c) {
    for (const auto& [label, n] : columns[c]) {
      const double h = std::max(1.0, static_cast<double>(n) * scale);
      out += fmt::format("<rect class=\"node lab-{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\"><title>"
                         "{}{}: {}</title></rect>",
                         label, x_of(c), y[c].at(label), node_w, h, c == 0 ? "" : fmt::format("turn {}: ", c),
                         label, n);
      if (h >= 11)  // the count; the colour names the function (the legend above)
        out += fmt::format("<text class=\"nodelabel\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", x_of(c) + node_w + 3,
                           y[c].at(label) + std::min(h / 2, 9.0) + 3, n);
    }
    out += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", x_of(c) + node_w / 2, height - 6,
                       c == 0 ? std::string("start") : std::to_string(c));
  }
  out += "</svg></figure>";
}

//! The transitions over all turns as a from × to matrix (with the start and the end), one per task type.
void append_transition_table(std::string& out, const std::string& id, std::size_t g, const TurnFlow& f) {
  std::set<std::string> from, to;
  for (const auto& [edge, n] : f.totals) from.insert(edge.first), to.insert(edge.second);
  const auto rows = in_figure_order(from), cols = in_figure_order(to);
  out += fmt::format("<table class=\"scores analysis matrix\"><caption>{}: from (rows) → to (columns), all "
                     "turns</caption><thead><tr><th></th>",
                     kGroupNames[g]);
  for (const auto& c : cols) out += "<th>" + c + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    out += "<tr><th>" + r + "</th>";
    for (const auto& c : cols) {
      auto it = f.totals.find({r, c});
      out += it == f.totals.end() ? "<td></td>"
                                  : metric_td(fmt::format("{}.transitions.{}.{}.{}", id, kGroupIds[g], r, c),
                                              std::to_string(it->second));
    }
    out += "</tr>";
  }
  out += "</tbody></table>";
}

// --- Figure 9: tasks and Res Acc by attempt step --------------------------------------------------------

void append_step_chart(std::string& out, std::size_t g, const std::vector<StepRow>& rows, int max_step) {
  const double width = 320, height = 210, left = 34, right = 34, top = 12, bottom = 30;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  std::size_t most = 1;
  for (const StepRow& r : rows) most = std::max(most, r.ended);
  most = (most + 3) / 4 * 4;  // four whole-number ticks
  const double slot = plot_w / static_cast<double>(std::max(max_step, 1));
  auto x_of = [&](int step) { return left + slot * (static_cast<double>(step) - 0.5); };
  auto y_count = [&](double n) { return top + plot_h * (1 - n / static_cast<double>(most)); };
  auto y_acc = [&](double v) { return top + plot_h * (1 - std::clamp(v, 0.0, 1.0)); };
  out += fmt::format("<figure class=\"chart step\"><figcaption>{}</figcaption>"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" role=\"img\" "
                     "aria-label=\"{} tasks and Res Acc by step\">",
                     kGroupNames[g], width, height, kGroupNames[g]);
  for (int tick = 0; tick <= 4; ++tick) {
    const double v = tick / 4.0;
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick\" "
                       "x=\"{}\" y=\"{:.1f}\">{:.0f}</text><text class=\"tick right\" x=\"{}\" y=\"{:.1f}\">{:.2f}"
                       "</text>",
                       left, width - right, y_acc(v), y_acc(v), left - 4, y_acc(v) + 4,
                       v * static_cast<double>(most), width - right + 4, y_acc(v) + 4, v);
  }
  std::string line;
  for (const StepRow& r : rows) {
    const double x = x_of(r.step), y = y_count(static_cast<double>(r.ended));
    const double ys = y_count(static_cast<double>(r.solved));
    out += fmt::format("<g><title>step {}: {} ended, {} solved, Res Acc {:.3f}</title><rect class=\"bar ended\" "
                       "x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/><rect class=\"bar solved\" "
                       "x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/></g>",
                       r.step, r.ended, r.solved, r.r_acc, x - slot * 0.35, y, slot * 0.7, top + plot_h - y,
                       x - slot * 0.35, ys, slot * 0.7, top + plot_h - ys);
    line += fmt::format("{}{:.1f} {:.1f}", line.empty() ? "M" : "L", x, y_acc(r.r_acc));
  }
  if (!line.empty()) out += "<path class=\"acc\" d=\"" + line + "\"/>";
  for (const StepRow& r : rows)
    out += fmt::format("<circle class=\"acc\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"><title>step {}: Res Acc {:.3f}"
                       "</title></circle>",
                       x_of(r.step), y_acc(r.r_acc), r.step, r.r_acc);
  for (int s = 1; s <= max_step; ++s)
    out += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", x_of(s), height - 14, s);
  out += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\">step</text></svg></figure>", left + plot_w / 2,
                     height - 1);
}

void append_step_table(std::string& out, const std::string& id, const Analysis& a) {
  out += "<div class=\"scroll\"><table class=\"scores analysis\"><thead><tr><th rowspan=\"2\">Step</th>";
  for (std::size_t g = 0; g < 4; ++g) out += fmt::format("<th colspan=\"3\" class=\"group\">{}</th>", kGroupNames[g]);
  out += "</tr><tr>";
  for (std::size_t g = 0; g < 4; ++g) out += "<th class=\"group\">ended</th><th>solved</th><th>Res Acc</th>";
  out += "</tr></thead><tbody>";
  for (const StepRow& overall : a.steps[3]) {
    out += fmt::format("<tr><th>{}</th>", overall.step);
    for (std::size_t g = 0; g < 4; ++g) {
      const StepRow* r = find_step(a.steps[g], overall.step);
      if (!r) {
        out += "<td class=\"num group\">0</td><td class=\"num\">0</td><td></td>";
        continue;
      }
      const std::string key = fmt::format("{}.by_step.{}.{}", id, kGroupIds[g], r->step);
      out += metric_td(key + ".ended", std::to_string(r->ended), "num group") +
             metric_td(key + ".solved", std::to_string(r->solved)) +
             metric_td(key + ".r_acc", fmt::format("{:.3f}", r->r_acc));
    }
    out += "</tr>";
  }
  out += "</tbody></table></div>";
}

// --- Why tasks fail (the diagnosis) ---------------------------------------------------------------------

const DiagnosisGroup& diag_group(const Diagnosis& d, std::size_t g) { return d.groups[g]; }

//! "12 (40%)" as `pwab score --data --format md` writes it ("0" when the group has no records).
std::string count_share(std::size_t part, std::size_t whole) {
  if (whole == 0) return "0";
  return fmt::format("{} ({:.0f}%)", part, 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

//! The categories a run's tables and bar show: those with a record, and always "solved".
std::vector<std::size_t> present_categories(const Diagnosis& d) {
  std::vector<std::size_t> out;
  for (std::size_t c = 0; c < kFailureCount; ++c)
    if (c == static_cast<std::size_t>(Failure::kSolved) || d.groups[3].primary[c] > 0) out.push_back(c);
  return out;
}

std::string category_name(std::size_t c) { return std::string(to_string(static_cast<Failure>(c))); }

//! One stacked horizontal bar per task type and overall: the records' primary categories, as shares.
void append_category_bars(std::string& out, const std::string& id, const Diagnosis& d) {
  const double width = 900, left = 170, right = 16, row = 26, top = 6;
  const double height = top * 2 + row * 4, plot_w = width - left - right;
  out += fmt::format("<figure class=\"chart wide\"><figcaption>Primary category of each (task, trial), share of the "
                     "type's records</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" "
                     "role=\"img\" aria-label=\"{} failure categories by task type\">",
                     width, height, id);
  for (std::size_t g = 0; g < 4; ++g) {
    const DiagnosisGroup& x = diag_group(d, g);
    const double y = top + row * static_cast<double>(g);
    out += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{:.1f}\">{} (n = {})</text>", left - 8, y + row * 0.68,
                       kGroupNames[g], x.records);
    if (x.records == 0) {
      out += fmt::format("<rect class=\"empty\" x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\"/>", left, y + 4,
                         plot_w, row - 8);
      continue;
    }
    double at = left;
    for (std::size_t c = 0; c < kFailureCount; ++c) {
      const std::size_t n = x.primary[c];
      if (n == 0) continue;
      const double w = plot_w * static_cast<double>(n) / static_cast<double>(x.records);
      const std::string name = category_name(c);
      out += fmt::format("<g data-segment=\"{0}.{1}.{2}\" data-count=\"{3}\"><title>{4}, {2}: {5}</title><rect "
                         "class=\"seg cat-{2}\" x=\"{6:.1f}\" y=\"{7:.1f}\" width=\"{8:.1f}\" height=\"{9}\"/>",
                         id, kGroupIds[g], name, n, kGroupNames[g], count_share(n, x.records), at, y + 4, w, row - 8);
      if (w >= 34)
        out += fmt::format("<text class=\"seglabel\" x=\"{:.1f}\" y=\"{:.1f}\">{:.0f}%</text>", at + w / 2,
                           y + row * 0.68, 100.0 * static_cast<double>(n) / static_cast<double>(x.records));
      out += "</g>";
      at += w;
    }
  }
  out += "</svg></figure>";
}

//! A table of counts per group: one row per name, cells "count (share%)", a definition column.
void append_count_table(std::string& out, const std::string& id, const Diagnosis& d, std::string_view what,
                        const std::vector<std::pair<std::string, std::string>>& rows, const std::string& key,
                        const std::function<std::size_t(const DiagnosisGroup&, std::size_t)>& count_of, bool swatch) {
  out += fmt::format("<div class=\"scroll\"><table class=\"scores diagnosis\"><thead><tr><th>{}</th>", what);
  for (std::size_t g = 0; g < 4; ++g) out += fmt::format("<th class=\"group\">{}</th>", kGroupNames[g]);
  out += "<th>Definition</th></tr></thead><tbody>\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& [name, definition] = rows[r];
    out += fmt::format("<tr><th class=\"method\">{}<code>{}</code></th>",
                       swatch ? fmt::format("<span class=\"swatch cat-{}\"></span>", name) : std::string(), name);
    for (std::size_t g = 0; g < 4; ++g) {
      const DiagnosisGroup& x = diag_group(d, g);
      out += metric_td(fmt::format("{}.diagnosis.{}.{}.{}", id, kGroupIds[g], key, name),
                       count_share(count_of(x, r), x.records), "num group");
    }
    out += "<td class=\"def\">" + escape(definition) + "</td></tr>\n";
  }
  out += "<tr class=\"counts\"><th>records</th>";
  for (std::size_t g = 0; g < 4; ++g)
    out += metric_td(fmt::format("{}.diagnosis.{}.records", id, kGroupIds[g]), std::to_string(d.groups[g].records),
                     "num group");
  out += "<td></td></tr></tbody></table></div>";
}

void append_leaks(std::string& out, const std::string& id, const Diagnosis& d) {
  out += fmt::format("<h5>User simulator leaks ({} user)</h5><div class=\"scroll\"><table class=\"scores "
                     "diagnosis\"><thead><tr><th></th>",
                     escape(d.user_sim));
  for (std::size_t g = 0; g < 4; ++g) out += fmt::format("<th class=\"group\">{}</th>", kGroupNames[g]);
  out += "</tr></thead><tbody>\n";
  auto row = [&](std::string_view display, std::string_view key, const std::function<std::string(const DiagnosisGroup&)>& text) {
    out += fmt::format("<tr><th class=\"method\">{}</th>", display);
    for (std::size_t g = 0; g < 4; ++g)
      out += metric_td(fmt::format("{}.diagnosis.{}.leaks.{}", id, kGroupIds[g], key), text(d.groups[g]), "num group");
    out += "</tr>\n";
  };
  row("Leaked replies", "replies",
      [](const DiagnosisGroup& g) { return count_share(g.leaked_replies, g.replies) + fmt::format(" of {}", g.replies); });
  row("Leaked episodes", "episodes", [](const DiagnosisGroup& g) {
    return count_share(g.leaked_episodes, g.episodes_with_replies) + fmt::format(" of {}", g.episodes_with_replies);
  });
  row("Leaks by kind: ASIN / title / review", "kinds", [](const DiagnosisGroup& g) {
    return fmt::format("{} / {} / {}", g.leak_kinds[0], g.leak_kinds[1], g.leak_kinds[2]);
  });
  row("F. Acc, all", "f_all", [](const DiagnosisGroup& g) { return cell(metrics::format_cell(g.f_all)); });
  row("F. Acc, no leak", "f_clean", [](const DiagnosisGroup& g) { return cell(metrics::format_cell(g.f_clean)); });
  row("F. Acc, all &minus; no leak", "f_diff", [](const DiagnosisGroup& g) { return cell(metrics::format_diff(g.f_diff)); });
  row("R. Acc, all", "r_all", [](const DiagnosisGroup& g) { return cell(metrics::format_cell(g.r_all)); });
  row("R. Acc, no leak", "r_clean", [](const DiagnosisGroup& g) { return cell(metrics::format_cell(g.r_clean)); });
  row("R. Acc, all &minus; no leak", "r_diff", [](const DiagnosisGroup& g) { return cell(metrics::format_diff(g.r_diff)); });
  row("Scored episodes without a leak", "clean_outcomes",
      [](const DiagnosisGroup& g) { return std::to_string(g.clean_outcomes); });
  out += "</tbody></table></div>";
  out += fmt::format("<p class=\"note\">A reply leaks when it holds the target's ASIN, {} consecutive words of its "
                     "title, or (review tasks) {} consecutive words of the true review. \"No leak\": the scored "
                     "episodes without a leaked reply; the difference is paired (the same resampled tasks for "
                     "both).</p>",
                     d.options.leak.title_words, d.options.leak.review_words);
}

void append_attribution(std::string& out, const std::string& id, const Diagnosis& d) {
  out += "<h5>Personalization attribution</h5><div class=\"scroll\"><table class=\"scores diagnosis\"><thead><tr>"
         "<th></th>";
  for (std::size_t g = 0; g < 4; ++g) out += fmt::format("<th class=\"group\">{}</th>", kGroupNames[g]);
  out += "</tr></thead><tbody>\n";
  auto share_row = [&](std::string_view display, std::string_view key, ShareCell DiagnosisGroup::*member) {
    out += fmt::format("<tr><th class=\"method\">{}</th>", display);
    for (std::size_t g = 0; g < 4; ++g) {
      const ShareCell& s = d.groups[g].*member;
      out += fmt::format("<td class=\"num group\" data-metric=\"{}.diagnosis.{}.attribution.{}\">{}<span "
                         "class=\"ci\">n = {}</span></td>",
                         id, kGroupIds[g], key, cell(metrics::format_cell(s.cell)), s.n);
    }
    out += "</tr>\n";
  };
  share_row("Personal share", "share", &DiagnosisGroup::personal_share);
  share_row("Records with any", "any", &DiagnosisGroup::personal_any);
  out += "<tr><th class=\"method\">Calls attributed</th>";
  for (std::size_t g = 0; g < 4; ++g)
    out += metric_td(fmt::format("{}.diagnosis.{}.attribution.actions", id, kGroupIds[g]),
                     std::to_string(d.groups[g].actions), "num group");
  out += "</tr>\n</tbody></table></div><p class=\"note\">Per task-function call, the share of its distinct content "
         "words (recommend: ASINs) that only the user's own data explains (the visible history or profile; review: "
         "the user's past reviews), not the instruction, the user's replies or (review) the product. Personal share: "
         "the mean per record, then over records; records with any: the share of records with at least one personal "
         "word or ASIN; n: the records with an attributed call.</p>";
}

}  // namespace

std::string diagnosis_section(const std::vector<runner::Run>& runs, const std::vector<Diagnosis>& diagnoses,
                              const metrics::BootstrapOptions& bootstrap) {
  std::string out = "<section id=\"diagnosis\"><h2>Why tasks fail</h2><p class=\"note\">Computed from the records "
                    "and the dataset (<code>pwab report --data</code>), as <code>pwab score --data</code> prints it: "
                    "one primary category per (task, trial), the first that applies in the order of the tables; "
                    "flags for what else went wrong (a record may have several); for multi-turn runs, the user "
                    "simulator's leaks; and how much of the agent's parameters came from the user's own data. "
                    "Cells: records (share of the type's records). " +
                    escape(fmt::format("Intervals: percentile bootstrap over tasks ({} resamples, {:g}% CI, seed {}).",
                                       bootstrap.resamples, bootstrap.confidence * 100, bootstrap.seed)) +
                    "</p>";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Diagnosis& d = diagnoses[i];
    const std::string id = run_id(i);
    out += fmt::format("<h3><span class=\"swatch c{}\"></span>{} {}</h3>", i % 8, id, escape(runs[i].title));
    const auto present = present_categories(d);
    out += "<ul class=\"legend\">";
    for (std::size_t c : present)
      out += fmt::format("<li title=\"{}\"><span class=\"swatch cat-{}\"></span>{}</li>",
                         escape(describe(static_cast<Failure>(c))), category_name(c), category_name(c));
    out += "</ul>";
    append_category_bars(out, id, d);
    std::vector<std::pair<std::string, std::string>> rows;
    for (std::size_t c : present) rows.push_back({category_name(c), std::string(describe(static_cast<Failure>(c)))});
    out += "<h5>Primary categories</h5>";
    append_count_table(out, id, d, "Category", rows, "primary",
                       [&](const DiagnosisGroup& g, std::size_t r) { return g.primary[present[r]]; }, true);
    // The flags some record has (the others would be rows of zeros).
    std::vector<std::size_t> flags;
    rows.clear();
    for (std::size_t b = 0; b < kFlagCount; ++b)
      if (d.groups[3].flags[b] > 0) {
        flags.push_back(b);
        rows.push_back({std::string(flag_name(b)), std::string(describe_flag(b))});
      }
    out += "<h5>Flags (records with each; a record may have several)</h5>";
    if (flags.empty())
      out += "<p class=\"note\">No record has a flag.</p>";
    else
      append_count_table(out, id, d, "Flag", rows, "flags",
                         [&](const DiagnosisGroup& g, std::size_t r) { return g.flags[flags[r]]; }, false);
    if (d.multi_turn) append_leaks(out, id, d);
    append_attribution(out, id, d);
  }
  out += "</section>\n";
  return out;
}

std::string trials_tables(const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums) {
  std::string out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const metrics::TrialSummary& t = sums[i].trials;
    if (t.max_trials <= 1) continue;
    const std::string id = run_id(i);
    out += fmt::format("<h3>{} {}: repeated trials (up to {} per task)</h3><table class=\"scores trials\"><thead><tr>"
                       "<th>Figure</th>",
                       id, escape(runs[i].title), t.max_trials);
    for (std::size_t g = 0; g < 4; ++g) out += fmt::format("<th class=\"group\">{}</th>", kGroupNames[g]);
    out += "</tr></thead><tbody>\n";
    auto row = [&](const std::string& display, const std::string& key, auto cell_of, auto n_of) {
      out += "<tr><th class=\"method\">" + display + "</th>";
      for (std::size_t g = 0; g < 4; ++g) {
        const metrics::TrialGroup& tg = trial_group(t, g);
        out += fmt::format("<td class=\"num group\" data-metric=\"{}.trials.{}.{}\">{}<span class=\"ci\">n = {}</span>"
                           "</td>",
                           id, kGroupIds[g], key, cell(metrics::format_cell(cell_of(tg))), n_of(tg));
      }
      out += "</tr>\n";
    };
    for (int k = 1; k <= t.max_trials; ++k)
      row(fmt::format("pass^{}", k), fmt::format("pass_hat.{}", k),
          [k](const metrics::TrialGroup& tg) { return tg.pass_hat[static_cast<std::size_t>(k - 1)]; },
          [k](const metrics::TrialGroup& tg) { return tg.pass_hat_tasks[static_cast<std::size_t>(k - 1)]; });
    row("Flip rate", "flip_rate", [](const metrics::TrialGroup& tg) { return tg.flip_rate; },
        [](const metrics::TrialGroup& tg) { return tg.n_multi; });
    row("Mixed tasks", "mixed", [](const metrics::TrialGroup& tg) { return tg.mixed; },
        [](const metrics::TrialGroup& tg) { return tg.n_multi; });
    out += "</tbody></table>\n";
    out += fmt::format("<p class=\"note\">A trial passes when F = 1, R &gt; 0 and R ≥ the type's threshold ({}). "
                       "pass^k: the chance that k trials of a task all pass (C(c,k)/C(n,k), mean over tasks). Flip "
                       "rate: the chance that two trials of a task disagree. Mixed tasks: the share with both "
                       "outcomes. n: the tasks each figure averages over.</p>",
                       escape(t.rule.to_string()));
  }
  return out;
}

std::string analysis_section(const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums) {
  std::vector<Analysis> an;
  for (std::size_t i = 0; i < runs.size(); ++i) an.push_back(analyze(runs[i], sums[i].trials.rule));
  std::string out = "<section id=\"analysis\"><h2>Analysis</h2>";
  append_time(out, runs, an);

  const bool any_multi = std::any_of(an.begin(), an.end(), [](const Analysis& a) { return a.multi_turn; });
  if (!any_multi) {
    out += "<p class=\"note\">The action transitions (Figure 8) and the results by attempt step (Figure 9) are drawn "
           "for multi-turn runs; these runs are single-turn.</p></section>\n";
    return out;
  }
  out += "<h3>Action transitions, turn by turn (the paper's Figure 8)</h3><p class=\"note\">Columns: the turns; "
         "nodes: the function the agent called at that turn, with how many episodes did; bands: which function "
         "followed which, as wide as the episodes that took that path. Episodes that ended leave the flow.</p>"
         "<ul class=\"legend\">";
  for (const char* label : {"start", "search", "recommend", "review", "details", "respond", "stop", "other"})
    out += fmt::format("<li><svg class=\"key\" viewBox=\"0 0 10 10\"><rect class=\"lab-{0}\" width=\"10\" "
                       "height=\"10\"/></svg>{0}</li>",
                       label);
  out += "</ul>";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!an[i].multi_turn) continue;
    const std::string id = run_id(i);
    out += fmt::format("<h4><span class=\"swatch c{}\"></span>{} {}</h4><div class=\"charts\">", i % 8, id,
                       escape(runs[i].title));
    for (std::size_t g = 0; g < 3; ++g) append_flow(out, id, g, an[i].flows[g]);
    out += "</div><details><summary>Transition counts</summary><div class=\"charts\">";
    for (std::size_t g = 0; g < 3; ++g) append_transition_table(out, id, g, an[i].flows[g]);
    out += "</div></details>";
  }
  out += "<h3>Tasks and Res Acc by attempt step (the paper's Figure 9)</h3><p class=\"note\">Per number of agent "
         "steps an episode took: bars, the episodes that ended there (dark: solved, by the pass rule of the trials "
         "tables); line, their mean Res Acc (right axis).</p>";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!an[i].multi_turn) continue;
    const std::string id = run_id(i);
    const int max_step = an[i].steps[3].empty() ? 1 : an[i].steps[3].back().step;  // rows are in step order
    out += fmt::format("<h4><span class=\"swatch c{}\"></span>{} {}</h4><div class=\"charts\">", i % 8, id,
                       escape(runs[i].title));
    for (std::size_t g = 0; g < 4; ++g) append_step_chart(out, g, an[i].steps[g], max_step);
    out += "</div>";
    append_step_table(out, id, an[i]);
  }
  out += "</section>\n";
  return out;
}

}  // namespace pwab::report::html
