// The report page in-process: runs read as `pwab score` reads them, the tables' numbers equal to metrics'
// formatting of the same summary, the comparison, the viewer's JSON blob (round trip, hostile text, cut
// observations), and a page that loads nothing from outside. The browser side is report_browser_test.cpp.
#include "report/report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "report/analysis.h"
#include "report/html_parts.h"
#include "runner/results.h"
#include "support/test_support.h"
#include "page_text.h"

namespace pwab::report {
namespace {

using runner::read_run;
using runner::run_embedder;
using runner::run_title;

using Json = nlohmann::json;
using test::metric_text;
using test::TempDir;

runner::RunManifest manifest(const std::string& track, const std::string& memory = "taskspec") {
  runner::RunManifest m;
  m.config_json = Json{{"agent", "heuristic"},
                       {"agent_config", {{"memory", memory}}},
                       {"track", track},
                       {"split", "test"},
                       {"tasks", "0:"},
                       {"embedder", "fasttext"}}
                      .dump();
  m.seed = 3;
  m.dataset_fingerprint = "00112233aabbccdd";
  m.pwab_version = "0.1.0";
  return m;
}

//! A record of task `i`: types cycle search / recommend / review; every third search misses.
runner::TaskRecord record(int i, double r = 0.5) {
  runner::TaskRecord rec;
  rec.task_key = "test/" + std::to_string(i);
  rec.user_id = "U" + std::to_string(i % 4);
  rec.instruction = "Find me a kettle number " + std::to_string(i);
  rec.type = static_cast<data::TaskType>(i % 3);
  rec.target_asin = "B00" + std::to_string(i);
  rec.first_observation = "Hello.";
  double f = (i % 9 == 0) ? 0.0 : 1.0;
  rec.actions.push_back({{"search_product_by_query", R"({"query": "kettle"})"}, "['B001 kettle', 'B002 pot']",
                         {f, r}, true, true});
  rec.attempts = {{f, r * f}};
  rec.steps = 1 + i % 3;
  rec.ending = "task_function";
  return rec;
}

std::filesystem::path make_run(const TempDir& dir, const std::string& name, const std::string& track,
                               const std::vector<runner::TaskRecord>& records) {
  auto path = dir / name;
  auto run = runner::RunDirectory::open(path, manifest(track), false);
  for (const auto& r : records) run.append(r);
  return path;
}

std::vector<runner::TaskRecord> records(int n, double r = 0.5) {
  std::vector<runner::TaskRecord> out;
  for (int i = 0; i < n; ++i) out.push_back(record(i, r + 0.01 * (i % 7)));
  return out;
}

template <typename Change>
ReportOptions options(Change change) {
  ReportOptions o;
  change(o);
  return o;
}

//! The viewer's JSON blob, parsed.
Json blob(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"pwab-data\">";
  auto begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  begin += open.size();
  auto end = page.find("</script>", begin);
  return Json::parse(page.substr(begin, end - begin));
}

TEST(ReadRun, NamesTheRunAsScoreDoes) {
  TempDir dir;
  auto recs = records(12);
  recs[4].error = "search backend down";
  auto path = make_run(dir, "st", "single", recs);
  runner::Run run = read_run(path);
  EXPECT_EQ(run.title, "heuristic (taskspec)");
  EXPECT_EQ(run.track, data::Track::kSingleTurn);
  EXPECT_EQ(run.embedder, "fasttext");
  EXPECT_EQ(run.records.size(), 12u);
  EXPECT_EQ(run.n_errored, 1u);
  EXPECT_EQ(run.outcomes.size(), 11u);
  EXPECT_EQ(run.records[2].task_key, "test/2");  // task order

  runner::RunManifest bare;
  bare.config_json = "{}";
  EXPECT_EQ(run_title(bare), "run");
  EXPECT_EQ(runner::manifest_track(bare), data::Track::kMultiTurn);
  EXPECT_EQ(run_embedder(bare), "unknown");
}

TEST(ReadRun, MissingDirectoryNamesTheManifest) {
  TempDir dir;
  try {
    read_run(dir / "nothing-here");
    FAIL() << "expected a DataError";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.json"), std::string::npos) << e.what();
  }
}

TEST(RenderHtml, TableCellsAreScoresFormatting) {
  TempDir dir;
  runner::Run st = read_run(make_run(dir, "st", "single", records(30)));
  runner::Run mt = read_run(make_run(dir, "mt", "multi", records(21, 0.3)));
  std::string page = render_html({st, mt});

  auto s1 = metrics::summarize(st.outcomes), s2 = metrics::summarize(mt.outcomes);
  EXPECT_EQ(metric_text(page, "R1.overall.r_acc"), metrics::format_cell(s1.overall.r_acc));
  EXPECT_EQ(metric_text(page, "R1.search.f_acc"), metrics::format_cell(s1.by_type[0].f_acc));
  EXPECT_EQ(metric_text(page, "R1.review.r_acc"), metrics::format_cell(s1.by_type[2].r_acc));
  EXPECT_EQ(metric_text(page, "R2.recommend.avg_steps"), metrics::format_cell(s2.by_type[1].avg_steps));
  EXPECT_EQ(metric_text(page, "R2.overall.n_tasks"), "n = 21");
  // Single-turn rows have no steps column, as in Table 3.
  EXPECT_EQ(metric_text(page, "R1.overall.avg_steps"), "");
  EXPECT_NE(page.find("Single-turn track"), std::string::npos);
  EXPECT_NE(page.find("Multi-turn track"), std::string::npos);

  // The paired comparison of R2 against R1, as metrics::compare computes it.
  auto cmp = metrics::compare(st.outcomes, mt.outcomes);
  EXPECT_EQ(metric_text(page, "cmp.R2.overall.r_acc"), metrics::format_diff(cmp.overall.r_acc.diff));
  EXPECT_EQ(metric_text(page, "cmp.R2.overall.n_paired"), "21");
  // Other bootstrap settings change the intervals the page shows.
  std::string other = render_html({st}, options([](ReportOptions& o) { o.bootstrap = {200, 0.9, 5}; }));
  EXPECT_EQ(metric_text(other, "R1.overall.r_acc"),
            metrics::format_cell(metrics::summarize(st.outcomes, {200, 0.9, 5}).overall.r_acc));
  EXPECT_EQ(other.find("id=\"comparison\""), std::string::npos);  // one run: nothing to compare
}

TEST(RenderHtml, ChartsHaveOneBarPerRunAndGroup) {
  TempDir dir;
  runner::Run a = read_run(make_run(dir, "a", "single", records(9)));
  runner::Run b = read_run(make_run(dir, "b", "single", records(9, 0.2)));
  runner::Run c = read_run(make_run(dir, "c", "single", records(9, 0.8)));
  std::string page = render_html({a, b, c});
  std::size_t bars = 0;
  for (auto pos = page.find("<rect class=\"bar"); pos != std::string::npos; pos = page.find("<rect class=\"bar", pos + 1))
    ++bars;
  EXPECT_EQ(bars, 2u * 4u * 3u);  // F and R charts × 4 groups × 3 runs
  EXPECT_NE(page.find("data-metric=\"chart.R3.overall.r_acc\""), std::string::npos);
}

TEST(RenderHtml, PageIsSelfContained) {
  TempDir dir;
  std::string page = render_html({read_run(make_run(dir, "st", "single", records(6)))});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* external : {"src=\"http", "href=\"http", "src=\"//", "href=\"//", "<link", "@import", "url("})
    EXPECT_EQ(page.find(external), std::string::npos) << external;
  EXPECT_NE(page.find("<style>"), std::string::npos);
  EXPECT_NE(page.find("id=\"console-errors\""), std::string::npos);
}

TEST(RenderHtml, ViewerBlobCarriesEveryRecord) {
  TempDir dir;
  auto recs = records(10);
  recs[3].error = "timeout";
  runner::Run run = read_run(make_run(dir, "st", "single", recs));
  Json data = blob(render_html({run}));
  ASSERT_EQ(data["tasks"].size(), 10u);
  EXPECT_EQ(data["runs"][0]["id"], "R1");
  EXPECT_EQ(data["failed_below"], 0.5);
  const Json& t0 = data["tasks"][0];
  EXPECT_EQ(t0["key"], "test/0");
  EXPECT_EQ(t0["f"], 0.0);  // i % 9 == 0: the wrong function
  EXPECT_EQ(t0["actions"][0]["name"], "search_product_by_query");
  EXPECT_EQ(t0["actions"][0]["reward"][0], 0.0);
  EXPECT_EQ(data["tasks"][1]["r"], metrics::score_task(run.records[1].outcome()).r);
  EXPECT_EQ(data["tasks"][3]["error"], "timeout");
  EXPECT_FALSE(data["tasks"][3].contains("f"));  // errored tasks are not scored
}

TEST(RenderHtml, RepeatedTrialsAreOneRowEach) {
  TempDir dir;
  auto m = manifest("multi");
  auto config = Json::parse(m.config_json);
  config["trials"] = 2;
  m.config_json = config.dump();
  {
    auto run = runner::RunDirectory::open(dir / "tr", m, false);
    for (int trial = 0; trial < 2; ++trial)
      for (auto r : records(3)) {
        r.trial = trial;
        run.append(r);
      }
  }
  std::string page = render_html({read_run(dir / "tr"), read_run(make_run(dir, "one", "multi", records(3)))});
  Json data = blob(page);
  EXPECT_EQ(data["runs"][0]["trials"], 2);
  ASSERT_EQ(data["tasks"].size(), 9u);  // 3 tasks × 2 trials, then 3 tasks of the single-trial run
  EXPECT_EQ(data["tasks"][0]["trial"], 0);
  EXPECT_EQ(data["tasks"][1]["trial"], 1);  // task order, then trial
  EXPECT_EQ(data["tasks"][1]["key"], "test/0");
  EXPECT_FALSE(data["tasks"][6].contains("trial"));
  EXPECT_NE(page.find("test 0:, 2 trials"), std::string::npos);
}

TEST(RenderHtml, HostileTextCannotLeaveTheDataElement) {
  TempDir dir;
  auto recs = records(3);
  const std::string hostile = "</script><script>alert(1)</script><!-- \xE2\x80\xA8 line \xE2\x80\xA9 para";
  recs[1].instruction = hostile;
  recs[2].first_observation = "bad \xFF byte";
  runner::Run run = read_run(make_run(dir, "st", "single", recs));
  std::string page = render_html({run}, options([](ReportOptions& o) { o.title = "<b>mine</b>"; }));
  auto begin = page.find("id=\"pwab-data\">");
  auto end = page.find("</script>", begin);
  std::string inside = page.substr(begin, end - begin);
  EXPECT_EQ(inside.find('<'), std::string::npos);
  EXPECT_EQ(inside.find("\xE2\x80\xA8"), std::string::npos);
  Json data = blob(page);
  EXPECT_EQ(data["tasks"][1]["instruction"], hostile);  // the same text once parsed
  EXPECT_EQ(data["tasks"][2]["first"]["text"], "bad \xEF\xBF\xBD byte");  // invalid UTF-8 → U+FFFD
  EXPECT_NE(page.find("<title>&lt;b&gt;mine&lt;/b&gt;</title>"), std::string::npos);
}

TEST(RenderHtml, LongObservationsAreCutWithTheirSize) {
  TempDir dir;
  auto recs = records(2);
  std::string long_text;
  while (long_text.size() < 10000) long_text += "['B0 caf\xC3\xA9 kettle', ";
  recs[0].actions[0].observation = long_text;
  runner::Run run = read_run(make_run(dir, "st", "single", recs));
  Json cut = blob(render_html({run}, options([](ReportOptions& o) { o.max_observation_chars = 1001; })));
  std::string shown = cut["tasks"][0]["actions"][0]["obs"]["text"];
  EXPECT_LE(shown.size(), 1001u);
  EXPECT_EQ(long_text.rfind(shown, 0), 0u);  // a prefix, on a character boundary (it parsed as UTF-8)
  EXPECT_EQ(cut["tasks"][0]["actions"][0]["obs"]["full_size"], long_text.size());
  EXPECT_FALSE(cut["tasks"][1]["actions"][0]["obs"].contains("full_size"));
  Json whole = blob(render_html({run}, options([](ReportOptions& o) { o.max_observation_chars = 0; })));
  EXPECT_EQ(whole["tasks"][0]["actions"][0]["obs"]["text"], long_text);
}

TEST(RenderHtml, NoRunsIsAUsageError) { EXPECT_THROW(render_html({}), UsageError); }

// --- the diagnosis on the page (`pwab report --data`) ---------------------------------------------------------

//! A hand-made diagnosis of `run` (the page only shows what it is given): records alternate solved and
//! search_target_absent; every third has the repeated_call flag; the groups count them.
Diagnosis diagnosis_of(const runner::Run& run, bool multi_turn) {
  Diagnosis d;
  d.multi_turn = multi_turn;
  d.user_sim = "scripted";
  for (std::size_t i = 0; i < run.records.size(); ++i) {
    const auto& rec = run.records[i];
    RecordDiagnosis r;
    r.task_key = rec.task_key;
    r.trial = rec.trial;
    r.type = rec.type;
    r.primary = i % 2 ? Failure::kSearchTargetAbsent : Failure::kSolved;
    r.flags = i % 3 == 0 ? kFlagRepeatedCall : 0u;
    r.detail = "detail of " + rec.task_key;
    d.records.push_back(r);
    for (std::size_t g : {static_cast<std::size_t>(rec.type), std::size_t{3}}) {
      d.groups[g].records += 1;
      d.groups[g].primary[static_cast<std::size_t>(r.primary)] += 1;
      if (r.flags) d.groups[g].flags[3] += 1;
    }
  }
  for (auto& g : d.groups) {
    g.replies = 10, g.leaked_replies = 2, g.episodes_with_replies = 5, g.leaked_episodes = 1;
    g.f_all = {0.9, 0.8, 1.0};
    g.f_clean = {0.85, 0.7, 1.0};
    g.f_diff = {0.05, -0.01, 0.12};
    g.personal_share = {{0.25, 0.1, 0.4}, 7};
    g.actions = 9;
  }
  return d;
}

TEST(RenderHtml, WithoutDiagnosesThereIsNoDiagnosis) {
  TempDir dir;
  runner::Run st = read_run(make_run(dir, "st", "single", records(12)));
  std::string page = render_html({st});
  EXPECT_EQ(page.find("id=\"diagnosis\""), std::string::npos);
  EXPECT_EQ(page.find("href=\"#diagnosis\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"filter-category\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"filter-flag\""), std::string::npos);
  EXPECT_EQ(page.find("data-segment="), std::string::npos);
  Json j = blob(page);
  EXPECT_FALSE(j.contains("diagnosis"));
  for (const auto& t : j["tasks"]) EXPECT_FALSE(t.contains("category"));
}

TEST(RenderHtml, DiagnosesShowWhyTasksFail) {
  TempDir dir;
  runner::Run st = read_run(make_run(dir, "st", "single", records(12)));
  runner::Run mt = read_run(make_run(dir, "mt", "multi", records(9, 0.3)));
  Diagnosis dst = diagnosis_of(st, false), dmt = diagnosis_of(mt, true);
  dmt.groups[3].primary[static_cast<std::size_t>(Failure::kSolved)] = 0;  // solved stays as a row of zeros
  const std::string page = render_html({st, mt}, options([&](ReportOptions& o) { o.diagnoses = {dst, dmt}; }));

  EXPECT_NE(page.find("<section id=\"diagnosis\"><h2>Why tasks fail</h2>"), std::string::npos);
  EXPECT_NE(page.find("href=\"#diagnosis\""), std::string::npos);
  // Rows: the categories with a record, and solved; cells "count (share%)"; the definition beside each.
  EXPECT_EQ(metric_text(page, "R1.diagnosis.overall.primary.solved"), "6 (50%)");
  EXPECT_EQ(metric_text(page, "R1.diagnosis.search.primary.search_target_absent"),
            std::to_string(dst.groups[0].primary[4]) + " (" +
                fmt::format("{:.0f}", 100.0 * dst.groups[0].primary[4] / dst.groups[0].records) + "%)");
  EXPECT_EQ(metric_text(page, "R1.diagnosis.overall.records"), "12");
  EXPECT_EQ(metric_text(page, "R1.diagnosis.overall.primary.step_cap"), "") << "no record: no row";
  EXPECT_EQ(metric_text(page, "R2.diagnosis.overall.primary.solved"), "0 (0%)");
  const std::string section = page.substr(page.find("id=\"diagnosis\""), page.find("id=\"trajectories\"") - page.find("id=\"diagnosis\""));
  EXPECT_NE(section.find(html::escape(describe(Failure::kSearchTargetAbsent))), std::string::npos);
  EXPECT_EQ(section.find(html::escape(describe(Failure::kStepCap))), std::string::npos);
  // One bar segment per (group, category) with records.
  EXPECT_NE(page.find("data-segment=\"R1.overall.search_target_absent\" data-count=\"6\""), std::string::npos);
  EXPECT_NE(page.find("class=\"seg cat-solved\""), std::string::npos);
  // Flags: the ones some record has.
  EXPECT_EQ(metric_text(page, "R1.diagnosis.overall.flags.repeated_call"), "4 (33%)");
  EXPECT_EQ(metric_text(page, "R1.diagnosis.overall.flags.step_cap"), "");
  EXPECT_NE(section.find(html::escape(describe_flag(3))), std::string::npos);
  // Leaks for the multi-turn run only; cells formatted as `pwab score` formats them.
  EXPECT_EQ(metric_text(page, "R1.diagnosis.overall.leaks.replies"), "");
  EXPECT_EQ(metric_text(page, "R2.diagnosis.overall.leaks.replies"), "2 (20%) of 10");
  EXPECT_EQ(metric_text(page, "R2.diagnosis.overall.leaks.episodes"), "1 (20%) of 5");
  EXPECT_EQ(metric_text(page, "R2.diagnosis.review.leaks.f_all"), metrics::format_cell(dmt.groups[2].f_all));
  EXPECT_EQ(metric_text(page, "R2.diagnosis.review.leaks.f_diff"), metrics::format_diff(dmt.groups[2].f_diff));
  EXPECT_NE(page.find("User simulator leaks (scripted user)"), std::string::npos);
  // Attribution for both.
  EXPECT_EQ(metric_text(page, "R1.diagnosis.search.attribution.share"),
            metrics::format_cell(dst.groups[0].personal_share.cell) + "n = 7");
  EXPECT_EQ(metric_text(page, "R2.diagnosis.overall.attribution.actions"), "9");

  // The viewer: each record's category and flags, and the two filters.
  EXPECT_NE(page.find("id=\"filter-category\""), std::string::npos);
  EXPECT_NE(page.find("id=\"filter-flag\""), std::string::npos);
  Json j = blob(page);
  ASSERT_TRUE(j.contains("diagnosis"));
  EXPECT_EQ(j["diagnosis"]["categories"].size(), kFailureCount);
  EXPECT_EQ(j["diagnosis"]["flags"][3]["name"], "repeated_call");
  ASSERT_EQ(j["tasks"].size(), 21u);
  for (const auto& t : j["tasks"]) {
    const Diagnosis& d = t["run"] == 0 ? dst : dmt;
    const auto it = std::find_if(d.records.begin(), d.records.end(),
                                 [&](const RecordDiagnosis& r) { return r.task_key == t["key"]; });
    ASSERT_NE(it, d.records.end());
    EXPECT_EQ(t["category"], std::string(to_string(it->primary)));
    EXPECT_EQ(t["flags"], Json(flag_names(it->flags)));
    EXPECT_EQ(t["detail"], it->detail);
  }
}

TEST(RenderHtml, DiagnosesMustMatchTheRuns) {
  TempDir dir;
  runner::Run st = read_run(make_run(dir, "st", "single", records(6)));
  Diagnosis d = diagnosis_of(st, false);
  EXPECT_THROW(render_html({st, st}, options([&](ReportOptions& o) { o.diagnoses = {d}; })), UsageError);
  EXPECT_NO_THROW(render_html({st, st}, options([&](ReportOptions& o) { o.diagnoses = {d, d}; })));
}

TEST(EscapeJson, ParsesToTheSameValue) {
  Json value = {{"a", "</script><!--x-->"}, {"b", "\xE2\x80\xA8\xE2\x80\xA9"}, {"c", "1 < 2"}};
  std::string escaped = escape_json_for_script(value.dump(-1, ' ', false));
  EXPECT_EQ(escaped.find('<'), std::string::npos);
  EXPECT_NE(escaped.find("\\u2028"), std::string::npos);
  EXPECT_EQ(Json::parse(escaped), value);
}

TEST(CutUtf8, NeverSplitsACharacter) {
  EXPECT_EQ(cut_utf8("abc", 0), "abc");
  EXPECT_EQ(cut_utf8("abc", 5), "abc");
  EXPECT_EQ(cut_utf8("ab\xC3\xA9z", 3), "ab");         // é is two bytes: not cut in half
  EXPECT_EQ(cut_utf8("ab\xC3\xA9z", 4), "ab\xC3\xA9");
  EXPECT_EQ(cut_utf8("\xE2\x82\xAC\xE2\x82\xAC", 4), "\xE2\x82\xAC");
}


// --- the analysis figures (analysis.h) -----------------------------------------------------------------------

//! A multi-turn episode of `type` whose actions are `names` (the task function scored `r`), timed agent/env.
runner::TaskRecord episode(int i, data::TaskType type, const std::vector<std::string>& names, double r,
                           double agent_s, double env_s) {
  runner::TaskRecord rec = record(i);
  rec.type = type;
  rec.actions.clear();
  rec.attempts.clear();
  for (const auto& name : names) {
    const bool task_fn = name == "search_product_by_query" || name == "get_recommendations_by_history" ||
                         name == "add_product_review";
    rec.actions.push_back({{name, "{}"}, "obs", {task_fn ? 1.0 : 0.0, task_fn ? r : 0.0}, false, task_fn});
    if (task_fn) rec.attempts.push_back({1.0, r});
  }
  rec.steps = static_cast<int>(names.size());
  rec.ending = names.back() == "stop" ? "stop" : "step_cap";
  rec.seconds_agent = agent_s;
  rec.seconds_env = env_s;
  return rec;
}

TEST(Analysis, TimesTransitionsAndStepsFollowTheRecords) {
  TempDir dir;
  const auto search = data::TaskType::kSearch, review = data::TaskType::kReview;
  std::vector<runner::TaskRecord> recs = {
      episode(0, search, {"search_product_by_query", "respond", "stop"}, 0.9, 1.0, 0.5),
      episode(1, search, {"respond", "search_product_by_query", "respond", "search_product_by_query", "stop"}, 0.4,
              2.0, 1.0),
      episode(2, search, {"search_product_by_query", "respond", "stop"}, 0.0, 3.0, 0.0),
      episode(3, review, {"add_product_review", "stop"}, 0.7, 4.0, 2.0),
      episode(4, search, {"bogus_tool"}, 0.0, 9.0, 9.0),
  };
  recs[4].error = "LLM endpoint unreachable";  // errored: in no figure
  runner::Run run = read_run(make_run(dir, "mt", "multi", recs));
  Analysis a = analyze(run);
  ASSERT_TRUE(a.multi_turn);

  // Figure 7: seconds per finished task; nearest-rank median and p90.
  EXPECT_EQ(a.time[0].n, 3u);
  EXPECT_DOUBLE_EQ(a.time[0].mean, 2.5);  // (1.5 + 3 + 3) / 3
  EXPECT_DOUBLE_EQ(a.time[0].mean_agent, 2.0);
  EXPECT_DOUBLE_EQ(a.time[0].mean_env, 0.5);
  EXPECT_DOUBLE_EQ(a.time[0].median, 3.0);
  EXPECT_DOUBLE_EQ(a.time[3].median, 3.0);  // 1.5, 3, 3, 6
  EXPECT_DOUBLE_EQ(a.time[3].p90, 6.0);
  EXPECT_EQ(a.time[1].n, 0u);

  // Figure 8: the search episodes turn by turn.
  const TurnFlow& f = a.flows[0];
  EXPECT_EQ(f.episodes, 3u);
  ASSERT_EQ(f.actions.size(), 5u);
  EXPECT_EQ(f.actions[0].at("search"), 2u);
  EXPECT_EQ(f.actions[0].at("respond"), 1u);
  EXPECT_EQ(f.actions[2].at("stop"), 2u);
  EXPECT_EQ(f.actions[2].at("respond"), 1u);
  EXPECT_EQ(f.links[0].at({"start", "search"}), 2u);
  EXPECT_EQ(f.links[1].at({"search", "respond"}), 2u);
  EXPECT_EQ(f.links[1].at({"respond", "search"}), 1u);
  EXPECT_EQ(f.totals.at({"search", "respond"}), 3u);
  EXPECT_EQ(f.totals.at({"stop", "end"}), 3u);
  EXPECT_EQ(a.flows[2].totals.at({"review", "stop"}), 1u);
  EXPECT_EQ(action_label("bogus_tool"), "other");
  EXPECT_EQ(action_label("get_product_details_by_asin"), "details");

  // Figure 9: by steps taken. Search: two ended at step 3 (R 0.9 solved, R 0 not), one at step 5 (0.4, solved).
  ASSERT_EQ(a.steps[0].size(), 2u);
  EXPECT_EQ(a.steps[0][0].step, 3);
  EXPECT_EQ(a.steps[0][0].ended, 2u);
  EXPECT_EQ(a.steps[0][0].solved, 1u);
  EXPECT_DOUBLE_EQ(a.steps[0][0].r_acc, 0.45);
  EXPECT_EQ(a.steps[0][1].step, 5);
  EXPECT_EQ(a.steps[0][1].solved, 1u);
  // Review's pass rule needs R >= 0.5: 0.7 passes, and with a stricter rule it does not.
  EXPECT_EQ(a.steps[2][0].solved, 1u);
  EXPECT_EQ(analyze(run, metrics::PassRule::parse("review=0.8")).steps[2][0].solved, 0u);
  EXPECT_EQ(a.steps[3].size(), 3u);  // overall: steps 2, 3 and 5

  // The JSON and Markdown renderings carry the same numbers.
  Json j = Json::parse(analysis_json(a));
  EXPECT_DOUBLE_EQ(j["time"]["overall"]["p90"].get<double>(), 6.0);
  EXPECT_EQ(j["transitions"]["search"]["turns"][1]["actions"]["respond"], 2);
  EXPECT_EQ(j["by_step"]["search"][0]["ended"], 2);
  EXPECT_EQ(j["by_step"]["pass_rule"]["review"], 0.5);
  const std::string md = analysis_markdown(a);
  EXPECT_NE(md.find("| Overall | 4 | 3.3750 | 3.0000 | 6.0000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| start | 2 | 1 | | |"), std::string::npos) << md;  // to search, respond, stop, end
  EXPECT_NE(md.find("| 3 | 2 | 1 | 0.450 |"), std::string::npos) << md;

  // A single-turn run has the time table only.
  runner::Run single = read_run(make_run(dir, "st", "single", records(6)));
  Json js = Json::parse(analysis_json(analyze(single)));
  EXPECT_TRUE(js.contains("time"));
  EXPECT_FALSE(js.contains("transitions"));
  EXPECT_FALSE(js.contains("by_step"));
}

TEST(Analysis, ThePageDrawsTheFiguresAndTheTrialsTables) {
  TempDir dir;
  std::vector<runner::TaskRecord> recs;
  for (int trial = 0; trial < 2; ++trial)
    for (int i = 0; i < 6; ++i) {
      auto r = episode(i, static_cast<data::TaskType>(i % 3), {"respond", "search_product_by_query", "stop"},
                       trial == 0 ? 0.8 : 0.3 * (i % 2), 0.1, 0.2);
      r.trial = trial;
      recs.push_back(r);
    }
  runner::Run run = read_run(make_run(dir, "mt", "multi", recs));
  const std::string page = render_html({run});
  const auto summary = metrics::summarize(run.outcomes);
  EXPECT_EQ(metric_text(page, "R1.trials.overall.pass_hat.2"),
            metrics::format_cell(summary.trials.overall.pass_hat[1]) + "n = 6");
  EXPECT_EQ(metric_text(page, "R1.trials.search.flip_rate"),
            metrics::format_cell(summary.trials.by_type[0].flip_rate) + "n = 2");
  EXPECT_EQ(metric_text(page, "R1.time.overall.mean"), "0.3000");
  EXPECT_EQ(metric_text(page, "R1.transitions.search.start.respond"), "4");
  EXPECT_EQ(metric_text(page, "R1.by_step.overall.3.ended"), "12");
  // One band per transition of each turn: start→respond, respond→search, search→stop for each type.
  std::size_t bands = 0;
  for (auto at = page.find("class=\"link "); at != std::string::npos; at = page.find("class=\"link ", at + 1)) ++bands;
  EXPECT_EQ(bands, 9u);
  EXPECT_NE(page.find("href=\"#analysis\""), std::string::npos);
}

}  // namespace
}  // namespace pwab::report
