// src/report/html.cpp: the report page: static HTML for the run headers, score tables, charts and comparisons
// (every number formatted here), and the viewer's JSON blob that the page's script renders.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/version.h"
#include "env/tools.h"
#include "report/assets.h"
#include "report/html_parts.h"
#include "report/report.h"
#include "runner/run_settings.h"

namespace pwab::report::html {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// The interval goes on a second, smaller line so that twelve columns fit a laptop screen.
std::string cell(const std::string& text) {
  auto space = text.find(' ');
  if (space == std::string::npos) return escape(text);
  return "<span class=\"v\">" + escape(text.substr(0, space)) + "</span> <span class=\"ci\">" +
         escape(text.substr(space + 1)) + "</span>";
}

std::string run_id(std::size_t i) { return "R" + std::to_string(i + 1); }

}  // namespace pwab::report::html

namespace pwab::report {
namespace {

using Json = nlohmann::json;

//! The groups of the tables, in the paper's column order.
struct Group {
  std::string_view display;
  std::string_view id;
};
constexpr std::array<Group, 4> kGroups = {
    {{"Search", "search"}, {"Recommendation", "recommend"}, {"Review", "review"}, {"Overall", "overall"}}};

const metrics::GroupSummary& group_of(const metrics::Summary& s, std::size_t g) {
  return g < 3 ? s.by_type[g] : s.overall;
}
const metrics::PairedDiff& group_of(const metrics::Comparison& c, std::size_t g) {
  return g < 3 ? c.by_type[g] : c.overall;
}

struct Metric {
  std::string_view display;
  std::string_view id;
  metrics::Cell metrics::GroupSummary::*cell;
  metrics::DiffCell metrics::PairedDiff::*diff;
};
constexpr std::array<Metric, 3> kMetrics = {
    {{"Function Acc", "f_acc", &metrics::GroupSummary::f_acc, &metrics::PairedDiff::f_acc},
     {"Res Acc", "r_acc", &metrics::GroupSummary::r_acc, &metrics::PairedDiff::r_acc},
     {"Avg. Steps", "avg_steps", &metrics::GroupSummary::avg_steps, &metrics::PairedDiff::avg_steps}}};

//! As in the paper's tables (and metrics::format_table): Avg. Steps only for the multi-turn track.
std::size_t n_metrics(data::Track track) { return track == data::Track::kMultiTurn ? 3 : 2; }

std::string_view track_name(data::Track track) {
  return track == data::Track::kSingleTurn ? "single-turn" : "multi-turn";
}

using html::run_id;

std::string bootstrap_note(const metrics::BootstrapOptions& o, std::string_view cells, std::string_view over) {
  return fmt::format("Cells: {} [{:g}% CI], percentile bootstrap over {} ({} resamples, seed {}).", cells,
                     o.confidence * 100, over, o.resamples, o.seed);
}

// --- sections -------------------------------------------------------------------------------------------

void append_runs(std::string& out, const std::vector<runner::Run>& runs) {
  out += "<section id=\"runs\"><h2>Runs</h2><table class=\"runs\"><thead><tr><th>Run</th><th>Method</th>"
         "<th>Agent</th><th>Track</th><th>Split, tasks</th><th>Scored</th><th>Errored</th><th>Review embedder</th>"
         "<th>Seed</th><th>Dataset</th><th>pwab</th><th>Created</th><th>Directory</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const runner::Run& r = runs[i];
    const runner::RunSettings settings = runner::settings_of(r.manifest);
    std::string id = run_id(i);
    std::string shard = r.manifest.shard_count > 1
                            ? fmt::format(" (shard {}/{})", r.manifest.shard_index, r.manifest.shard_count)
                            : std::string();
    if (int trials = settings.trials_or_default(); trials > 1) shard += fmt::format(", {} trials", trials);
    out += fmt::format(
        "<tr data-run=\"{0}\"><td class=\"nowrap\"><span class=\"swatch c{1}\"></span>{0}</td><td>{2}</td><td>{3}</td><td>{4}</td>"
        "<td>{5} {6}{7}</td><td data-metric=\"{0}.n_scored\">{8}</td><td data-metric=\"{0}.n_errored\"{9}>{10}</td>"
        "<td>{11}</td><td>{12}</td><td><code>{13}</code></td><td>{14}</td><td>{15}</td><td><code>{16}</code></td>"
        "</tr>\n",
        id, i % 8, html::escape(r.title), html::escape(settings.agent.value_or("")), track_name(r.track),
        html::escape(settings.split.value_or("")), html::escape(settings.tasks.value_or("")), html::escape(shard),
        r.outcomes.size(), r.n_errored ? " class=\"bad\"" : "", r.n_errored, html::escape(r.embedder), r.manifest.seed,
        html::escape(r.manifest.dataset_fingerprint), html::escape(r.manifest.pwab_version),
        html::escape(r.manifest.created_utc), html::escape(r.dir.string()));
  }
  out += "</tbody></table>";
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].n_errored)
      out += fmt::format("<p class=\"warn\">{}: {} errored tasks are not scored; <code>pwab run ... --resume</code> "
                         "retries them.</p>",
                         run_id(i), runs[i].n_errored);
  out += "</section>\n";
}

//! One table in the paper's Table 3 (single-turn) or Table 4 (multi-turn) layout, one row per run of that track.
void append_score_table(std::string& out, const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums,
                        data::Track track) {
  std::size_t k = n_metrics(track);
  out += fmt::format("<h3>{} track ({})</h3><table class=\"scores\"><thead><tr><th rowspan=\"2\">Method</th>",
                     track == data::Track::kSingleTurn ? "Single-turn" : "Multi-turn",
                     track == data::Track::kSingleTurn ? "the paper's Table 3 layout" : "Table 4 layout");
  for (const Group& g : kGroups) out += fmt::format("<th colspan=\"{}\" class=\"group\">{}</th>", k, g.display);
  out += "</tr><tr>";
  for (std::size_t g = 0; g < kGroups.size(); ++g)
    for (std::size_t m = 0; m < k; ++m)
      out += fmt::format("<th{}>{}</th>", m == 0 ? " class=\"group\"" : "", kMetrics[m].display);
  out += "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].track != track) continue;
    std::string id = run_id(i);
    out += fmt::format("<tr><th class=\"method\"><span class=\"swatch c{}\"></span>{} {}</th>", i % 8, id,
                       html::escape(runs[i].title));
    for (std::size_t g = 0; g < kGroups.size(); ++g) {
      const auto& group = group_of(sums[i], g);
      for (std::size_t m = 0; m < k; ++m) {
        const metrics::Cell& c = group.*kMetrics[m].cell;
        out += fmt::format("<td class=\"num{}\" data-metric=\"{}.{}.{}\">{}</td>", m == 0 ? " group" : "", id,
                           kGroups[g].id, kMetrics[m].id, html::cell(metrics::format_cell(c)));
      }
    }
    out += "</tr>\n<tr class=\"counts\"><td></td>";
    for (std::size_t g = 0; g < kGroups.size(); ++g)
      out += fmt::format("<td colspan=\"{}\" class=\"group\" data-metric=\"{}.{}.n_tasks\">n = {}</td>", k, id,
                         kGroups[g].id, group_of(sums[i], g).n_tasks);
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
}

void append_scores(std::string& out, const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums,
                   const metrics::BootstrapOptions& bootstrap) {
  out += "<section id=\"scores\"><h2>Scores</h2><div class=\"scroll\">";
  for (auto track : {data::Track::kSingleTurn, data::Track::kMultiTurn})
    if (std::any_of(runs.begin(), runs.end(), [&](const runner::Run& r) { return r.track == track; }))
      append_score_table(out, runs, sums, track);
  out += html::trials_tables(runs, sums);
  out += "</div><p class=\"note\">" + html::escape(bootstrap_note(bootstrap, "value", "tasks")) +
         " Function Acc and Res Acc as the original aggregates them (docs/metrics.md); Res Acc of reviews is a cosine "
         "similarity of the run's review embedder, comparable only between runs with the same embedder.</p></section>\n";
}

//! A bar chart of one metric: one group of bars per task type and overall, one bar per run, whiskers for the
//! interval. Values of F. Acc and R. Acc lie in [0, 1], so the axis is fixed to that range.
void append_chart(std::string& out, const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums,
                  const Metric& metric) {
  const double width = 900, height = 300, left = 48, right = 12, top = 16, bottom = 36;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const double group_w = plot_w / kGroups.size();
  const double bar_w = std::min(48.0, group_w * 0.8 / static_cast<double>(runs.size()));
  auto y = [&](double v) { return top + plot_h * (1 - std::clamp(v, 0.0, 1.0)); };

  out += fmt::format("<figure class=\"chart\"><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" "
                     "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{} by task type and run\">",
                     metric.display, width, height, metric.display);
  for (int tick = 0; tick <= 5; ++tick) {
    double v = tick / 5.0;
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick\" "
                       "x=\"{}\" y=\"{:.1f}\">{:.1f}</text>",
                       left, width - right, y(v), y(v), left - 6, y(v) + 4, v);
  }
  for (std::size_t g = 0; g < kGroups.size(); ++g) {
    double x0 = left + group_w * static_cast<double>(g) + (group_w - bar_w * static_cast<double>(runs.size())) / 2;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const metrics::Cell& c = group_of(sums[i], g).*metric.cell;
      double x = x0 + bar_w * static_cast<double>(i), cx = x + bar_w / 2;
      out += fmt::format(
          "<g data-metric=\"chart.{}.{}.{}\"><title>{} {}, {}: {}</title><rect class=\"bar c{}\" x=\"{:.1f}\" "
          "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/><path class=\"whisker\" d=\"M{:.1f} {:.1f}V{:.1f}M{:.1f} "
          "{:.1f}h{:.1f}M{:.1f} {:.1f}h{:.1f}\"/></g>",
          run_id(i), kGroups[g].id, metric.id, run_id(i), html::escape(runs[i].title), kGroups[g].display,
          metrics::format_cell(c), i % 8, x + 1, y(c.value), std::max(bar_w - 2, 1.0), y(0) - y(c.value), cx,
          y(c.ci_low), y(c.ci_high), cx - bar_w / 4, y(c.ci_low), bar_w / 2, cx - bar_w / 4, y(c.ci_high), bar_w / 2);
      if (runs.size() <= 4)
        out += fmt::format("<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\">{:.3f}</text>", cx,
                           std::min(y(c.ci_high), y(c.value)) - 4, c.value);
    }
    out += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                       left + group_w * (static_cast<double>(g) + 0.5), height - 12, kGroups[g].display);
  }
  out += "</svg></figure>";
}

void append_charts(std::string& out, const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums) {
  out += "<section id=\"charts\"><h2>Charts</h2><ul class=\"legend\">";
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += fmt::format("<li><span class=\"swatch c{}\"></span>{} {} ({})</li>", i % 8, run_id(i),
                       html::escape(runs[i].title), track_name(runs[i].track));
  out += "</ul><div class=\"charts\">";
  append_chart(out, runs, sums, kMetrics[0]);
  append_chart(out, runs, sums, kMetrics[1]);
  out += "</div><p class=\"note\">Bars: the value; whiskers: its bootstrap interval.</p></section>\n";
}

//! Each later run against R1, paired by task key (metrics::compare, as `pwab compare R1 Rk`).
void append_comparisons(std::string& out, const std::vector<runner::Run>& runs, const metrics::BootstrapOptions& bootstrap) {
  if (runs.size() < 2) return;
  out += "<section id=\"comparison\"><h2>Paired comparison</h2><p class=\"note\">" +
         html::escape(bootstrap_note(bootstrap, "Rk − R1", "paired tasks")) +
         " Tasks are paired by task key and grouped by R1's type, as <code>pwab compare</code> does.</p>\n";
  const runner::Run& a = runs[0];
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const runner::Run& b = runs[i];
    std::string ida = run_id(0), idb = run_id(i);
    auto cmp = metrics::compare(a.outcomes, b.outcomes, bootstrap);
    bool steps = a.track == data::Track::kMultiTurn || b.track == data::Track::kMultiTurn;
    std::size_t k = steps ? 3 : 2;
    out += fmt::format("<h3>{} {} minus {} {}</h3>", idb, html::escape(b.title), ida, html::escape(a.title));
    std::vector<std::string> notes;
    notes.push_back(fmt::format("{} paired tasks; only in {}: {}; only in {}: {}; type differs: {}.",
                                cmp.overall.n_paired, ida, cmp.n_only_a, idb, cmp.n_only_b, cmp.n_type_mismatch));
    if (a.manifest.dataset_fingerprint != b.manifest.dataset_fingerprint)
      notes.push_back("The runs used different datasets: only tasks with the same key are paired.");
    if (a.embedder != b.embedder)
      notes.push_back("The runs used different review embedders, so review Res Acc is not comparable.");
    if (a.track != b.track) notes.push_back("The runs are of different tracks.");
    for (const auto& n : notes) out += "<p class=\"note\">" + html::escape(n) + "</p>";
    out += "<table class=\"scores compare\"><thead><tr><th rowspan=\"2\">Group</th><th rowspan=\"2\">n</th>";
    for (std::size_t m = 0; m < k; ++m) out += fmt::format("<th colspan=\"3\" class=\"group\">{}</th>", kMetrics[m].display);
    out += "</tr><tr>";
    for (std::size_t m = 0; m < k; ++m)
      out += fmt::format("<th class=\"group\">{}</th><th>{}</th><th>{} &minus; {}</th>", ida, idb, idb, ida);
    out += "</tr></thead><tbody>\n";
    for (std::size_t g = 0; g < kGroups.size(); ++g) {
      const auto& group = group_of(cmp, g);
      out += fmt::format("<tr><th class=\"method\">{}</th><td class=\"num\" data-metric=\"cmp.{}.{}.n_paired\">{}</td>",
                         kGroups[g].display, idb, kGroups[g].id, group.n_paired);
      for (std::size_t m = 0; m < k; ++m) {
        const metrics::DiffCell& d = group.*kMetrics[m].diff;
        std::string sign = d.diff.ci_low > 0 ? " up" : d.diff.ci_high < 0 ? " down" : "";
        out += fmt::format("<td class=\"num group\">{:.3f}</td><td class=\"num\">{:.3f}</td><td class=\"num{}\" "
                           "data-metric=\"cmp.{}.{}.{}\">{}</td>",
                           d.a, d.b, sign, idb, kGroups[g].id, kMetrics[m].id,
                           html::cell(metrics::format_diff(d.diff)));
      }
      out += "</tr>\n";
    }
    out += "</tbody></table>\n";
  }
  out += "</section>\n";
}

void append_viewer(std::string& out, const std::vector<runner::Run>& runs, bool diagnosed) {
  out += "<section id=\"trajectories\"><h2>Trajectories</h2><form class=\"filters\" id=\"filters\" "
         "onsubmit=\"return false\"><label>Run <select id=\"filter-run\"><option value=\"all\">all</option>";
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += fmt::format("<option value=\"{}\">{} {}</option>", i, run_id(i), html::escape(runs[i].title));
  out += "</select></label><label>Type <select id=\"filter-type\"><option value=\"all\">all</option>"
         "<option value=\"search\">search</option><option value=\"recommend\">recommend</option>"
         "<option value=\"review\">review</option></select></label>"
         "<label>Ending <select id=\"filter-ending\"><option value=\"all\">all</option></select></label>"
         "<label><input type=\"checkbox\" id=\"filter-failed\"> failed only</label>"
         "<label title=\"A task failed when it errored, scored F = 0, or scored R below this\">R below "
         "<input type=\"number\" id=\"filter-below\" min=\"0\" max=\"1\" step=\"0.05\"></label>";
  // With the diagnosis (`pwab report --data`): the viewer fills these with the categories and flags present.
  if (diagnosed)
    out += "<label title=\"The record's primary failure category (Why tasks fail)\">Category <select "
           "id=\"filter-category\"><option value=\"all\">any</option></select></label><label title=\"Records with "
           "this flag\">Flag <select id=\"filter-flag\"><option value=\"all\">any</option></select></label>";
  out += "<label class=\"grow\">Search <input type=\"search\" id=\"filter-text\" "
         "placeholder=\"instruction, messages, task key, user or ASIN\"></label></form>"
         "<p class=\"note\" id=\"task-count\"></p><div class=\"viewer\"><div class=\"list\"><table class=\"tasks\">"
         "<thead><tr><th>Run</th><th>Task</th><th class=\"trial-col\">Trial</th><th>Type</th><th>F</th><th>R</th>"
         "<th>Steps</th><th>Ending</th>";
  if (diagnosed) out += "<th>Category</th>";
  out += "<th>Instruction</th></tr></thead><tbody id=\"task-list\"></tbody></table>"
         "<button type=\"button\" id=\"show-more\" hidden>Show more</button></div>"
         "<div class=\"detail\" id=\"task-detail\"><p class=\"note\">Choose a task to see its trajectory "
         "(keys j / k move through the list).</p></div></div></section>\n";
}

// --- the viewer's data ------------------------------------------------------------------------------------

Json observation_json(const std::string& text, std::size_t max_chars) {
  std::string shown = cut_utf8(text, max_chars);
  Json j = {{"text", shown}};
  if (shown.size() < text.size()) j["full_size"] = text.size();
  return j;
}

//! The parent ASINs a search or recommendation observation lists, best first ("- Parent Asin: <asin>" per
//! product), read from the whole text: the viewer shows where the target ranks even when the text is cut.
Json result_asins(const std::string& observation) {
  constexpr std::string_view kMarker = "- Parent Asin: ";
  Json asins = Json::array();
  for (auto at = observation.find(kMarker); at != std::string::npos; at = observation.find(kMarker, at)) {
    at += kMarker.size();
    auto end = at;
    while (end < observation.size() && std::isalnum(static_cast<unsigned char>(observation[end]))) ++end;
    asins.push_back(observation.substr(at, end - at));
  }
  return asins;
}

//! `with_trial`: the run repeats tasks, so the viewer shows (task, trial) rows.
Json task_json(std::size_t run, const runner::TaskRecord& r, std::size_t max_chars, bool with_trial) {
  Json t = {{"run", run},
            {"key", r.task_key},
            {"type", data::to_string(r.type)},
            {"user", r.user_id},
            {"instruction", r.instruction},
            {"target", r.target_asin},
            {"first", observation_json(r.first_observation, max_chars)},
            {"steps", r.steps},
            {"ending", r.ending},
            {"tokens", {r.prompt_tokens, r.completion_tokens}},
            {"seconds", {r.seconds_agent, r.seconds_env}}};
  if (with_trial) t["trial"] = r.trial;
  if (r.error.empty()) {
    auto score = metrics::score_task(r.outcome());
    t["f"] = score.f;
    t["r"] = score.r;
  } else {
    t["error"] = r.error;
  }
  if (!r.usage_json.empty()) t["usage"] = Json::parse(r.usage_json, nullptr, false);
  Json actions = Json::array();
  for (const auto& a : r.actions) {
    Json step = {{"name", a.action.name}, {"args", a.action.arguments_json},
                 {"obs", observation_json(a.observation, max_chars)}};
    if (a.action.name == env::kSearch || a.action.name == env::kRecommend) step["results"] = result_asins(a.observation);
    if (a.scored) step["reward"] = {a.reward.function_acc, a.reward.result_acc};
    if (a.done) step["done"] = true;
    actions.push_back(std::move(step));
  }
  t["actions"] = std::move(actions);
  return t;
}

//! The record's category, flags and detail from its run's diagnosis (matched by task key and trial).
void add_diagnosis(Json& t, const RecordDiagnosis& d) {
  t["category"] = std::string(to_string(d.primary));
  t["flags"] = flag_names(d.flags);
  if (!d.detail.empty()) t["detail"] = d.detail;
  if (d.user_replies > 0) t["leaked_replies"] = {d.leaked_replies, d.user_replies};
  if (!d.leak_evidence.empty()) t["leak_evidence"] = d.leak_evidence;
}

std::string viewer_data(const std::vector<runner::Run>& runs, const ReportOptions& options) {
  Json j;
  const bool diagnosed = !options.diagnoses.empty();
  if (diagnosed) {
    // The names in the taxonomy's order, with their definitions: the viewer's filters and tooltips.
    Json categories = Json::array(), flags = Json::array();
    for (std::size_t c = 0; c < kFailureCount; ++c)
      categories.push_back({{"name", std::string(to_string(static_cast<Failure>(c)))},
                          {"definition", std::string(describe(static_cast<Failure>(c)))}});
    for (std::size_t b = 0; b < kFlagCount; ++b) flags.push_back({{"name", std::string(flag_name(b))}, {"definition", std::string(describe_flag(b))}});
    j["diagnosis"] = {{"categories", std::move(categories)}, {"flags", std::move(flags)}};
  }
  j["failed_below"] = options.failed_below;
  j["max_observation"] = options.max_observation_chars;
  Json rs = Json::array(), tasks = Json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    int trials = runner::manifest_trials(runs[i].manifest);
    rs.push_back({{"id", run_id(i)}, {"title", runs[i].title}, {"track", track_name(runs[i].track)}, {"trials", trials}});
    std::map<std::pair<std::string, int>, const RecordDiagnosis*> diagnosed_records;
    if (diagnosed)
      for (const auto& d : options.diagnoses[i].records) diagnosed_records[{d.task_key, d.trial}] = &d;
    for (const auto& r : runs[i].records) {
      Json t = task_json(i, r, options.max_observation_chars, trials > 1);
      if (auto it = diagnosed_records.find({r.task_key, r.trial}); it != diagnosed_records.end())
        add_diagnosis(t, *it->second);
      tasks.push_back(std::move(t));
    }
  }
  j["runs"] = std::move(rs);
  j["tasks"] = std::move(tasks);
  // Records hold arbitrary text: invalid UTF-8 becomes U+FFFD rather than failing the page.
  return escape_json_for_script(j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace

std::string escape_json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (std::size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    // U+2028 / U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
    if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' && (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string cut_utf8(std::string_view text, std::size_t max_bytes) {
  if (max_bytes == 0 || text.size() <= max_bytes) return std::string(text);
  std::size_t end = max_bytes;
  // Step back over continuation bytes (10xxxxxx) so the cut falls before a sequence's first byte.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

std::string render_html(const std::vector<runner::Run>& runs, const ReportOptions& options) {
  if (runs.empty()) throw UsageError("a report needs at least one run directory");
  const bool diagnosed = !options.diagnoses.empty();
  if (diagnosed && options.diagnoses.size() != runs.size())
    throw UsageError(fmt::format("a report over {} runs needs {} diagnoses, got {}", runs.size(), runs.size(),
                                 options.diagnoses.size()));
  std::vector<metrics::Summary> sums;
  for (const runner::Run& r : runs) sums.push_back(metrics::summarize(r.outcomes, options.bootstrap));

  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<meta name=\"generator\" content=\"pwab " + std::string(kVersion) + "\"><title>" +
         html::escape(options.title) + "</title>\n<script>" + std::string(assets::error_hook_js()) + "</script>\n<style>" +
         std::string(assets::report_css()) + "</style></head>\n<body>\n"
         "<div id=\"console-errors\" hidden><strong>This page hit a script error:</strong></div>\n<header><h1>" +
         html::escape(options.title) + "</h1><nav><a href=\"#runs\">Runs</a> <a href=\"#scores\">Scores</a> "
         "<a href=\"#charts\">Charts</a>" + (runs.size() > 1 ? " <a href=\"#comparison\">Comparison</a>" : "") +
         " <a href=\"#analysis\">Analysis</a>" + (diagnosed ? " <a href=\"#diagnosis\">Why tasks fail</a>" : "") +
         " <a href=\"#trajectories\">Trajectories</a></nav></header>\n<main>\n";
  append_runs(out, runs);
  append_scores(out, runs, sums, options.bootstrap);
  append_charts(out, runs, sums);
  append_comparisons(out, runs, options.bootstrap);
  out += html::analysis_section(runs, sums);
  if (diagnosed) out += html::diagnosis_section(runs, options.diagnoses, options.bootstrap);
  append_viewer(out, runs, diagnosed);
  out += "</main>\n<footer>Made by <code>pwab report</code> " + std::string(kVersion) +
         (options.generated_utc.empty() ? std::string() : " on " + html::escape(options.generated_utc)) +
         ". The numbers above are those of <code>pwab score</code> on each run directory.</footer>\n";
  out += "<script type=\"application/json\" id=\"pwab-data\">" + viewer_data(runs, options) + "</script>\n<script>" +
         std::string(assets::viewer_js()) + "</script>\n</body></html>\n";
  return out;
}

}  // namespace pwab::report
