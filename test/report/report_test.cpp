// The report page in-process: runs read as `pwab score` reads them, the tables' numbers equal to metrics'
// formatting of the same summary, the comparison, the viewer's JSON blob (round trip, hostile text, cut
// observations), and a page that loads nothing from outside. The browser side is report_browser_test.cpp.
#include "report/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "runner/results.h"
#include "support/test_support.h"
#include "page_text.h"

namespace pwab::report {
namespace {

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
  report::Run run = read_run(path);
  EXPECT_EQ(run.title, "heuristic (taskspec)");
  EXPECT_EQ(run.track, metrics::Track::kSingleTurn);
  EXPECT_EQ(run.embedder, "fasttext");
  EXPECT_EQ(run.records.size(), 12u);
  EXPECT_EQ(run.n_errored, 1u);
  EXPECT_EQ(run.outcomes.size(), 11u);
  EXPECT_EQ(run.records[2].task_key, "test/2");  // task order

  runner::RunManifest bare;
  bare.config_json = "{}";
  EXPECT_EQ(run_title(bare), "run");
  EXPECT_EQ(run_track(bare), metrics::Track::kMultiTurn);
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
  report::Run st = read_run(make_run(dir, "st", "single", records(30)));
  report::Run mt = read_run(make_run(dir, "mt", "multi", records(21, 0.3)));
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
  report::Run a = read_run(make_run(dir, "a", "single", records(9)));
  report::Run b = read_run(make_run(dir, "b", "single", records(9, 0.2)));
  report::Run c = read_run(make_run(dir, "c", "single", records(9, 0.8)));
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
  report::Run run = read_run(make_run(dir, "st", "single", recs));
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
  report::Run run = read_run(make_run(dir, "st", "single", recs));
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
  report::Run run = read_run(make_run(dir, "st", "single", recs));
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

}  // namespace
}  // namespace pwab::report
