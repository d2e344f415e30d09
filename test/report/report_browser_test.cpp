// `pwab report` as the real binary on real runs (mini dataset, heuristic agent, both tracks), loaded in headless
// Chromium (Debian's `chromium` package): a screenshot is taken and is not blank, the page loads with no console
// errors (seen two ways: Chromium's console log on stderr, and the page's own error banner in the DOM), the
// numbers shown after the scripts ran equal `pwab score` and `pwab compare`, the viewer's filters and trajectory
// pane work when driven by a script, and hostile record text stays text. Negative controls prove the error
// detection catches a broken page. Skips when chromium is not installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/missing_tool.h"
#include "support/test_support.h"
#include "page_text.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using pwab::test::metric_text;
using pwab::test::read_text;
using pwab::test::TempDir;
using pwab::test::write_text;

using pwab::test::run_pwab;

std::string chromium_binary() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(p)) return p;
  return {};
}

//! What headless Chromium left behind for one page.
struct PageLoad {
  int status = -1;
  std::string dom;                    //!< --dump-dom: the DOM after the page's scripts ran
  std::vector<std::string> console;  //!< console messages and uncaught errors from the log on stderr
};

//! Loads `page` (with an optional #fragment) in a fresh headless Chromium profile. The flags keep it off the
//! network and away from services this machine does not have.
PageLoad load_page(const fs::path& page, const std::string& fragment = "", const std::string& extra_flags = "--dump-dom") {
  TempDir profile;
  std::string cmd = chromium_binary() +
                    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                    " --disable-background-networking --disable-component-update --disable-sync"
                    " --enable-logging=stderr --v=0 --user-data-dir=" +
                    (profile / "profile").string() + " " + extra_flags + " 'file://" + fs::absolute(page).string() +
                    fragment + "' > " + (profile / "out").string() + " 2> " + (profile / "err").string();
  PageLoad load;
  load.status = WEXITSTATUS(std::system(cmd.c_str()));
  load.dom = read_text(profile / "out");
  std::istringstream log(read_text(profile / "err"));
  for (std::string line; std::getline(log, line);)
    if (line.find(":CONSOLE") != std::string::npos) load.console.push_back(line);
  return load;
}

//! The messages in the page's #console-errors banner (its error hook writes each one as a div).
std::vector<std::string> banner_errors(const std::string& dom) {
  std::vector<std::string> out;
  std::regex re("<div class=\"console-error\">([^<]*)</div>");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

std::string cell(const Json& c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.3f [%.2f, %.2f]", c["value"].get<double>(), c["ci_low"].get<double>(),
                c["ci_high"].get<double>());
  return buf;
}

//! A difference cell as metrics::format_diff writes it.
std::string diff_cell(const Json& c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%+.3f [%.2f, %.2f]", c["value"].get<double>(), c["ci_low"].get<double>(),
                c["ci_high"].get<double>());
  return buf;
}

//! "12 (40%)" as the diagnosis tables write a count and its share of the group's records ("0" of none).
std::string count_share(long part, long whole) {
  if (whole == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%ld (%.0f%%)", part, 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

//! Text as Chromium's DOM dump serializes it.
std::string html_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

//! The records of a run in task order ("test/N" by N), as the report lists them (the file has them in the order
//! the workers finished).
std::vector<Json> records_of(const fs::path& run) {
  std::vector<Json> out;
  std::istringstream in(read_text(run / "results.jsonl"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(Json::parse(line));
  auto index = [](const Json& r) { return std::stoi(r["task"].get<std::string>().substr(5)); };
  std::sort(out.begin(), out.end(), [&](const Json& a, const Json& b) { return index(a) < index(b); });
  return out;
}

void expect_clean(const PageLoad& load) {
  EXPECT_EQ(load.status, 0);
  EXPECT_TRUE(load.console.empty()) << load.console.front();
  auto banner = banner_errors(load.dom);
  EXPECT_TRUE(banner.empty()) << banner.front();
  EXPECT_NE(load.dom.find("data-viewer=\"ready\""), std::string::npos) << "the viewer script did not finish";
}

//! Three runs on the mini dataset (single-turn with and without memory, a multi-turn slice) and their report.
class ReportBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (chromium_binary().empty()) return;
    dir_ = new TempDir;
    std::string data = (*dir_ / "mini").string(), err;
    ASSERT_EQ(run_pwab("data synth --out " + data + " --scale mini --seed 2"), 0);
    ASSERT_EQ(run_pwab("rec train " + data + " --epochs 3 --eval-every 0"), 0);
    const std::string run = "run --quiet --data " + data + " --agent heuristic --tasks 0:60 ";
    ASSERT_EQ(run_pwab(run + "--out " + path("st"), nullptr, &err), 0) << err;
    ASSERT_EQ(run_pwab(run + "--memory none --out " + path("st-none"), nullptr, &err), 0) << err;
    ASSERT_EQ(run_pwab("run --quiet --data " + data + " --agent heuristic --track multi --tasks 0:20 --out " +
                             path("mt"),
                         nullptr, &err),
              0)
        << err;
    // With --data: the page has the diagnosis ("Why tasks fail", the viewer's category and flag filters), so every
    // check below also runs on it; the pages without it are made by the tests that need them.
    ASSERT_EQ(run_pwab("report " + path("st") + " " + path("st-none") + " " + path("mt") + " --data " + data +
                             " --out " + path("report.html"),
                         nullptr, &err),
              0)
        << err;
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (chromium_binary().empty()) PWAB_SKIP_MISSING_TOOL("chromium is not installed (scripts/install-deps.sh installs it)");
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }

  static TempDir* dir_;
};
TempDir* ReportBrowser::dir_ = nullptr;

//! A 1280×2000 screenshot of `page`: checks it is a PNG of that size with more in it than a blank page, and
//! copies it to $PWAB_REPORT_SCREENSHOT<suffix>.png when that is set (to look at it).
void expect_screenshot(const fs::path& page, const std::string& fragment, const fs::path& png,
                       const std::string& suffix) {
  auto load = load_page(page, fragment, "--screenshot=" + png.string() + " --window-size=1280,2000 --hide-scrollbars");
  ASSERT_EQ(load.status, 0);
  ASSERT_TRUE(fs::exists(png));
  std::string bytes = read_text(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  auto be32 = [&](std::size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(bytes[at])) << 24) |
           (static_cast<unsigned char>(bytes[at + 1]) << 16) | (static_cast<unsigned char>(bytes[at + 2]) << 8) |
           static_cast<unsigned char>(bytes[at + 3]);
  };
  EXPECT_EQ(be32(16), 1280u);  // IHDR width and height
  EXPECT_EQ(be32(20), 2000u);
  // A blank 1280×2000 page compresses to a few kB; tables, charts or a trajectory take far more.
  EXPECT_GT(bytes.size(), 60000u) << png << " looks blank";
  if (const char* keep = std::getenv("PWAB_REPORT_SCREENSHOT"))
    fs::copy_file(png, std::string(keep) + suffix + ".png", fs::copy_options::overwrite_existing);
}

TEST_F(ReportBrowser, ScreenshotsAreNotBlank) {
  // The top of the page: runs, tables, charts, comparison.
  expect_screenshot(path("report.html"), "", *dir_ / "top.png", "");
  // A link to a trajectory, on a copy of the page showing only the viewer (a link scrolls to the viewer, and
  // headless screenshots of a scrolled page leave the part above the scroll position unpainted).
  std::string page = read_text(path("report.html"));
  page.insert(page.find("</head>"), "<style>header, #runs, #scores, #charts, #comparison, #diagnosis { display: none; }</style>");
  write_text(*dir_ / "viewer-only.html", page);
  expect_screenshot(*dir_ / "viewer-only.html", "#task=R3%3Atest%2F0", *dir_ / "trajectory.png", "-trajectory");
}

TEST_F(ReportBrowser, LoadsWithoutConsoleErrors) {
  auto load = load_page(path("report.html"));
  expect_clean(load);
  std::size_t total = records_of(path("st")).size() + records_of(path("st-none")).size() + records_of(path("mt")).size();
  EXPECT_NE(load.dom.find("data-matching=\"" + std::to_string(total) + "\""), std::string::npos);
}

TEST_F(ReportBrowser, NumbersEqualPwabScore) {
  auto load = load_page(path("report.html"));
  expect_clean(load);
  const std::pair<std::string, std::string> runs[] = {{"R1", "st"}, {"R2", "st-none"}, {"R3", "mt"}};
  for (const auto& [id, name] : runs) {
    std::string json, err;
    ASSERT_EQ(run_pwab("score " + path(name) + " --format json", &json, &err), 0) << err;
    auto score = Json::parse(json);
    for (const char* group : {"search", "recommend", "review", "overall"}) {
      const Json& g = score["groups"][group];
      for (const char* metric : {"f_acc", "r_acc", "avg_steps"}) {
        std::string key = id + "." + group + "." + metric;
        if (std::string(metric) == "avg_steps" && name != "mt") {
          EXPECT_EQ(metric_text(load.dom, key), "") << key << ": single-turn tables have no steps";
          continue;
        }
        EXPECT_EQ(metric_text(load.dom, key), cell(g[metric])) << key;
      }
      EXPECT_EQ(metric_text(load.dom, id + "." + group + ".n_tasks"), "n = " + std::to_string(g["n_tasks"].get<int>()));
    }
  }
  // The paired comparison: each cell appears in `pwab compare R1 R2`'s row of the same group and metric.
  std::string cmp, err;
  ASSERT_EQ(run_pwab("compare " + path("st") + " " + path("st-none"), &cmp, &err), 0) << err;
  const std::pair<std::string, std::string> groups[] = {
      {"search", "Search"}, {"recommend", "Recommendation"}, {"review", "Review"}, {"overall", "Overall"}};
  const std::pair<std::string, std::string> metrics[] = {{"f_acc", "Function Acc"}, {"r_acc", "Res Acc"}};
  for (const auto& [gid, gname] : groups)
    for (const auto& [mid, mname] : metrics) {
      std::string shown = metric_text(load.dom, "cmp.R2." + gid + "." + mid);
      ASSERT_FALSE(shown.empty()) << gid << " " << mid;
      std::regex row(gname + R"(\s+\d+\s+)" + mname + R"(\s+\S+\s+\S+\s+)" +
                     std::regex_replace(shown, std::regex(R"([\[\].+])"), R"(\$&)"));
      EXPECT_TRUE(std::regex_search(cmp, row)) << gname << " " << mname << " " << shown << "\n" << cmp;
    }
}

TEST_F(ReportBrowser, FragmentOpensATrajectory) {
  auto records = records_of(path("mt"));
  ASSERT_FALSE(records.empty());
  const Json& rec = records.front();
  std::string key = rec["task"];
  auto load = load_page(path("report.html"), "#task=R3%3A" + std::regex_replace(key, std::regex("/"), "%2F"));
  expect_clean(load);
  EXPECT_NE(load.dom.find("data-task=\"R3:" + key + "\""), std::string::npos);
  EXPECT_NE(load.dom.find(html_text(rec["instruction"])), std::string::npos);
  auto detail = load.dom.substr(load.dom.find("id=\"task-detail\""));
  std::size_t steps = 0;
  for (auto p = detail.find("class=\"step\""); p != std::string::npos; p = detail.find("class=\"step\"", p + 1)) ++steps;
  EXPECT_EQ(steps, rec["actions"].size());
  EXPECT_NE(detail.find("User reply"), std::string::npos) << "the multi-turn heuristic asks the user";
}

//! The viewer driven like a user would: a script appended to a copy of the page sets filters and clicks, then
//! writes what the page shows into #test-results; the expectations are computed here from the records.
TEST_F(ReportBrowser, FiltersAndClicksWork) {
  std::string page = read_text(path("report.html"));
  const std::string driver = R"(<script>
(function () {
  var out = {};
  function set(id, value) {
    var e = document.getElementById(id);
    if (e.type === 'checkbox') e.checked = value; else e.value = value;
    e.dispatchEvent(new Event(e.type === 'search' ? 'input' : 'change'));
  }
  function matching() { return Number(document.getElementById('task-count').dataset.matching); }
  set('filter-run', '0'); out.run0 = matching();
  set('filter-failed', true); out.run0_failed = matching();
  set('filter-below', '0.9'); out.run0_failed_09 = matching();
  set('filter-failed', false); set('filter-below', '0.5'); set('filter-run', 'all');
  set('filter-type', 'review'); out.review = matching();
  set('filter-type', 'all');
  set('filter-text', 'NO-SUCH-TEXT-ANYWHERE'); out.none = matching();
  set('filter-text', '');
  document.querySelector('#task-list tr').click();
  out.clicked = document.getElementById('task-detail').dataset.task;
  document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j'}));
  out.after_j = document.getElementById('task-detail').dataset.task;
  out.hash = decodeURIComponent(location.hash);
  var pre = document.createElement('pre');
  pre.id = 'test-results';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>)";
  auto at = page.rfind("</body>");
  ASSERT_NE(at, std::string::npos);
  page.insert(at, driver);
  fs::path driven = *dir_ / "driven.html";
  write_text(driven, page);
  auto load = load_page(driven);
  expect_clean(load);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(load.dom, m, std::regex("<pre id=\"test-results\">([^<]*)</pre>"))) << load.dom.size();
  auto got = Json::parse(std::regex_replace(m[1].str(), std::regex("&quot;"), "\""));

  // Failed = errored, or the task's F = 0, or its R below the threshold (docs/decisions.md §3.2 per-task score: the
  // best valid attempt). The heuristic's records: F = 1 on a right-function attempt.
  auto task_score = [](const Json& r) {
    double f = 0, best = -1;
    for (const auto& a : r["attempts"])
      if (a[0].get<double>() == 1 && a[1].get<double>() > best) best = a[1].get<double>(), f = 1;
    return std::pair<double, double>(f, f ? best : 0);
  };
  auto st = records_of(path("st"));
  int failed05 = 0, failed09 = 0, reviews = 0;
  for (const auto& r : st) {
    auto [f, score] = task_score(r);
    bool err = r.contains("error") && !r["error"].get<std::string>().empty();
    failed05 += err || f == 0 || score < 0.5;
    failed09 += err || f == 0 || score < 0.9;
  }
  for (const char* name : {"st", "st-none", "mt"})
    for (const auto& r : records_of(path(name))) reviews += r["type"] == "review";
  EXPECT_EQ(got["run0"], st.size());
  EXPECT_EQ(got["run0_failed"], failed05);
  EXPECT_EQ(got["run0_failed_09"], failed09);
  EXPECT_GE(failed09, failed05);
  EXPECT_EQ(got["review"], reviews);
  EXPECT_EQ(got["none"], 0);
  EXPECT_EQ(got["clicked"], "R1:" + st[0]["task"].get<std::string>());
  EXPECT_EQ(got["after_j"], "R1:" + st[1]["task"].get<std::string>());
  EXPECT_EQ(got["hash"], "#task=R1:" + st[1]["task"].get<std::string>());
}

TEST_F(ReportBrowser, HostileRecordTextStaysText) {
  // A copy of the single-turn run whose first instruction tries to end the data element and run a script.
  fs::path hostile = *dir_ / "hostile";
  pwab::test::copy_dir(path("st"), hostile);
  auto records = records_of(hostile);
  const std::string text = "</script><script>document.title='pwned'</script><!-- \u2028 \u2029 & done";
  records[0]["instruction"] = text;
  std::string jsonl;
  for (const auto& r : records) jsonl += r.dump() + "\n";
  write_text(hostile / "results.jsonl", jsonl);
  std::string err;
  ASSERT_EQ(run_pwab("report " + hostile.string() + " --title 'A <b>bold</b> title' --out " +
                           (*dir_ / "hostile.html").string(),
                       nullptr, &err),
            0)
      << err;
  std::string key = records[0]["task"];
  auto load = load_page(*dir_ / "hostile.html", "#task=R1%3A" + std::regex_replace(key, std::regex("/"), "%2F"));
  expect_clean(load);
  EXPECT_EQ(load.dom.find("pwned</title>"), std::string::npos);
  EXPECT_NE(load.dom.find("<title>A &lt;b&gt;bold&lt;/b&gt; title</title>"), std::string::npos);
  EXPECT_NE(load.dom.find("&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;!--"), std::string::npos);
}

//! The analysis figures and the repeated-trials tables show `pwab score --format json`'s numbers, and the search
//! box finds text that only the conversation holds.
TEST_F(ReportBrowser, AnalysisAndTrialsEqualPwabScore) {
  std::string err;
  ASSERT_EQ(run_pwab("run --quiet --data " + path("mini") + " --agent heuristic --track multi --tasks 20:32 "
                     "--trials 2 --out " + path("mt-trials"),
                     nullptr, &err),
            0)
      << err;
  const fs::path page = *dir_ / "analysis.html";
  ASSERT_EQ(run_pwab("report " + path("st") + " " + path("mt-trials") + " --out " + page.string(), nullptr, &err), 0)
      << err;

  // A word of the users' replies that no instruction has: the search box must find the rows whose conversation
  // holds it (the agent's arguments and the user's replies), and only those.
  auto haystack = [](const Json& r) {
    std::string text = r["task"].get<std::string>() + " " + r["user_id"].get<std::string>() + " " +
                       r["target_asin"].get<std::string>() + " " + r["instruction"].get<std::string>();
    for (const auto& a : r["actions"]) {
      text += " " + a["arguments"].get<std::string>();
      if (a["name"] == "respond") text += " " + a["observation"].get<std::string>();
    }
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  std::vector<Json> rows = records_of(path("st"));
  for (const auto& r : records_of(path("mt-trials"))) rows.push_back(r);
  std::string word;
  for (const auto& r : records_of(path("mt-trials"))) {
    for (const auto& a : r["actions"]) {
      if (a["name"] != "respond" || !word.empty()) continue;
      std::istringstream words(a["observation"].get<std::string>());
      for (std::string w; words >> w && word.empty();) {
        std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return std::tolower(c); });
        if (w.size() < 5 || !std::all_of(w.begin(), w.end(), ::isalpha)) continue;
        bool in_instruction = false;
        for (const auto& other : rows) {
          std::string instr = other["instruction"];
          std::transform(instr.begin(), instr.end(), instr.begin(), [](unsigned char c) { return std::tolower(c); });
          in_instruction = in_instruction || instr.find(w) != std::string::npos;
        }
        if (!in_instruction) word = w;
      }
    }
  }
  ASSERT_FALSE(word.empty()) << "no reply word outside the instructions";
  long expected = std::count_if(rows.begin(), rows.end(),
                                [&](const Json& r) { return haystack(r).find(word) != std::string::npos; });
  std::string html = read_text(page);
  html.insert(html.rfind("</body>"),
              "<script>(function () { var e = document.getElementById('filter-text'); e.value = '" + word +
                  "'; e.dispatchEvent(new Event('input')); var p = document.createElement('pre'); p.id = "
                  "'test-results'; p.textContent = document.getElementById('task-count').dataset.matching; "
                  "document.body.appendChild(p); })();</script>");
  write_text(*dir_ / "analysis-driven.html", html);
  auto driven = load_page(*dir_ / "analysis-driven.html");
  expect_clean(driven);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(driven.dom, m, std::regex("<pre id=\"test-results\">([0-9]+)</pre>")));
  EXPECT_GT(expected, 0);
  EXPECT_EQ(std::stol(m[1].str()), expected) << word;

  auto load = load_page(page);
  expect_clean(load);
  auto fixed = [](double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  const char* groups[] = {"search", "recommend", "review", "overall"};
  const std::pair<std::string, std::string> runs[] = {{"R1", "st"}, {"R2", "mt-trials"}};
  for (const auto& [id, name] : runs) {
    std::string json;
    ASSERT_EQ(run_pwab("score " + path(name) + " --format json", &json, &err), 0) << err;
    const Json score = Json::parse(json);
    const Json& analysis = score["analysis"];
    // Figure 7.
    for (const char* g : groups)
      EXPECT_EQ(metric_text(load.dom, id + ".time." + g + ".mean"), fixed(analysis["time"][g]["mean"], 4)) << id << g;
    for (const char* stat : {"median", "p90", "mean_agent", "mean_env"})
      EXPECT_EQ(metric_text(load.dom, id + ".time.overall." + stat), fixed(analysis["time"]["overall"][stat], 4));
    EXPECT_EQ(metric_text(load.dom, id + ".time.overall.n"), analysis["time"]["overall"]["n"].dump());
    if (name == "st") {
      EXPECT_FALSE(analysis.contains("transitions"));
      EXPECT_FALSE(score.contains("trials"));
      continue;
    }
    // Figure 8: every transition count, and one band per (turn, from, to).
    std::size_t links = 0, bands = 0;
    for (const char* g : {"search", "recommend", "review"}) {
      for (const auto& t : analysis["transitions"][g]["totals"])
        EXPECT_EQ(metric_text(load.dom, id + ".transitions." + g + "." + t["from"].get<std::string>() + "." +
                                             t["to"].get<std::string>()),
                  t["count"].dump());
      for (const auto& turn : analysis["transitions"][g]["turns"]) links += turn["links"].size();
    }
    for (auto at = load.dom.find("data-link=\"" + id + "."); at != std::string::npos;
         at = load.dom.find("data-link=\"" + id + ".", at + 1))
      ++bands;
    EXPECT_GT(links, 0u);
    EXPECT_EQ(bands, links);
    // Figure 9.
    for (const char* g : groups)
      for (const auto& row : analysis["by_step"][g]) {
        const std::string key = id + ".by_step." + g + "." + row["step"].dump();
        EXPECT_EQ(metric_text(load.dom, key + ".ended"), row["ended"].dump());
        EXPECT_EQ(metric_text(load.dom, key + ".solved"), row["solved"].dump());
        EXPECT_EQ(metric_text(load.dom, key + ".r_acc"), fixed(row["r_acc"], 3));
      }
    // The repeated-trials tables.
    ASSERT_EQ(score["trials"]["max_trials"], 2);
    for (const char* g : groups) {
      const Json& tg = score["trials"]["groups"][g];
      for (const auto& p : tg["pass_hat"])
        EXPECT_EQ(metric_text(load.dom, id + ".trials." + g + ".pass_hat." + p["k"].dump()),
                  cell(p) + "n = " + p["n_tasks"].dump());
      const std::string n_multi = "n = " + tg["n_multi"].dump();
      EXPECT_EQ(metric_text(load.dom, id + ".trials." + g + ".flip_rate"), cell(tg["flip_rate"]) + n_multi);
      EXPECT_EQ(metric_text(load.dom, id + ".trials." + g + ".mixed"), cell(tg["mixed"]) + n_multi);
    }
  }
}

//! `pwab score RUN --data DATA --format json`'s "diagnosis" object.
Json score_diagnosis(const std::string& run, const std::string& data) {
  std::string json, err;
  EXPECT_EQ(run_pwab("score " + run + " --data " + data + " --format json", &json, &err), 0) << err;
  auto score = Json::parse(json);
  EXPECT_TRUE(score.contains("diagnosis"));
  return score["diagnosis"];
}

//! Every cell of run `id`'s part of "Why tasks fail" in `dom` equals `diagnosis` (pwab score's JSON): the category
//! and flag counts exactly (rows only for those with a record, and solved), their shares to the page's rounding,
//! the bar segments, the leaks (multi-turn) and the attribution cells as format_cell / format_diff write them.
void expect_diagnosis_cells(const std::string& dom, const std::string& id, const Json& diagnosis, bool multi_turn) {
  for (const char* group : {"search", "recommend", "review", "overall"}) {
    const std::string at = id + ".diagnosis." + group;
    const Json& c = diagnosis["categories"][group];
    const long records = c["records"];
    EXPECT_EQ(metric_text(dom, at + ".records"), std::to_string(records)) << at;
    for (const auto& [name, n] : c["primary"].items()) {
      const long overall = diagnosis["categories"]["overall"]["primary"][name];
      const std::string shown = metric_text(dom, at + ".primary." + name);
      if (overall == 0 && name != "solved") {
        EXPECT_EQ(shown, "") << at << " " << name << ": no record, no row";
        continue;
      }
      EXPECT_EQ(shown, count_share(n.get<long>(), records)) << at << " " << name;
      const std::string segment = "data-segment=\"" + id + "." + group + "." + name + "\"";
      if (n.get<long>() > 0)
        EXPECT_NE(dom.find(segment + " data-count=\"" + n.dump() + "\""), std::string::npos) << segment;
      else
        EXPECT_EQ(dom.find(segment), std::string::npos) << segment;
    }
    for (const auto& [name, n] : c["flags"].items()) {
      const long overall = diagnosis["categories"]["overall"]["flags"][name];
      EXPECT_EQ(metric_text(dom, at + ".flags." + name), overall == 0 ? "" : count_share(n.get<long>(), records))
          << at << " " << name;
    }
    if (multi_turn) {
      ASSERT_TRUE(diagnosis.contains("leaks"));
      const Json& l = diagnosis["leaks"][group];
      EXPECT_EQ(metric_text(dom, at + ".leaks.replies"),
                count_share(l["leaked_replies"], l["replies"]) + " of " + l["replies"].dump());
      EXPECT_EQ(metric_text(dom, at + ".leaks.episodes"),
                count_share(l["leaked_episodes"], l["episodes"]) + " of " + l["episodes"].dump());
      EXPECT_EQ(metric_text(dom, at + ".leaks.kinds"),
                l["kinds"]["asin"].dump() + " / " + l["kinds"]["title"].dump() + " / " + l["kinds"]["review"].dump());
      for (const char* score : {"f_all", "r_all", "f_clean", "r_clean"})
        EXPECT_EQ(metric_text(dom, at + ".leaks." + score), cell(l["scores"][score])) << at << " " << score;
      for (const char* score : {"f_diff", "r_diff"})
        EXPECT_EQ(metric_text(dom, at + ".leaks." + score), diff_cell(l["scores"][score])) << at << " " << score;
      EXPECT_EQ(metric_text(dom, at + ".leaks.clean_outcomes"), l["scores"]["clean_outcomes"].dump());
    } else {
      EXPECT_FALSE(diagnosis.contains("leaks"));
      EXPECT_EQ(metric_text(dom, at + ".leaks.replies"), "") << "single-turn runs have no leaks table";
    }
    const Json& a = diagnosis["attribution"][group];
    for (const char* share : {"share", "any"})
      EXPECT_EQ(metric_text(dom, at + ".attribution." + share), cell(a[share]) + "n = " + a[share]["n"].dump())
          << at << " " << share;
    EXPECT_EQ(metric_text(dom, at + ".attribution.actions"), a["actions"].dump());
  }
}

TEST_F(ReportBrowser, DiagnosisEqualsPwabScore) {
  auto load = load_page(path("report.html"));
  expect_clean(load);
  EXPECT_NE(load.dom.find("<section id=\"diagnosis\">"), std::string::npos);
  const std::pair<std::string, std::string> runs[] = {{"R1", "st"}, {"R2", "st-none"}, {"R3", "mt"}};
  for (const auto& [id, name] : runs) {
    SCOPED_TRACE(id);
    expect_diagnosis_cells(load.dom, id, score_diagnosis(path(name), path("mini")), name == "mt");
  }
}

//! The viewer's Category and Flag filters narrow the list to the records `pwab score --records-out` gives each
//! category and flag; a trajectory shows its record's category and flags. A copy of the single-turn run is edited
//! so that some records have flags and other categories (the heuristic's own records have none).
TEST_F(ReportBrowser, CategoryAndFlagFiltersNarrowTheList) {
  fs::path flagged = *dir_ / "flagged";
  pwab::test::copy_dir(path("st"), flagged);
  auto records = records_of(flagged);
  ASSERT_GE(records.size(), 8u);
  for (std::size_t i = 0; i < 3; ++i) {  // a repeated call
    Json first = records[i]["actions"][0];
    first["done"] = false;
    records[i]["actions"].insert(records[i]["actions"].begin(), first);
  }
  for (std::size_t i = 3; i < 5; ++i) records[i]["ending"] = "step_cap";
  records[5]["error"] = "search backend down";  // infra_error
  records[6]["actions"] = Json::array();         // stopped without an attempt
  records[6]["attempts"] = Json::array();
  records[6]["ending"] = "stop";
  records[6]["steps"] = 0;
  std::string jsonl;
  for (const auto& r : records) jsonl += r.dump() + "\n";
  write_text(flagged / "results.jsonl", jsonl);
  const fs::path page = *dir_ / "diagnosis.html";
  std::string err;
  ASSERT_EQ(run_pwab("report " + path("st") + " " + flagged.string() + " " + path("mt") + " --data " + path("mini") +
                         " --out " + page.string(),
                     nullptr, &err),
            0)
      << err;

  // Per record: run index, category and flags, from `pwab score --data --records-out`.
  struct Row {
    int run;
    std::string category;
    std::vector<std::string> flags;
  };
  std::vector<Row> rows;
  const std::string names[] = {path("st"), flagged.string(), path("mt")};
  for (int i = 0; i < 3; ++i) {
    const fs::path out = *dir_ / ("records-" + std::to_string(i) + ".jsonl");
    ASSERT_EQ(run_pwab("score " + names[i] + " --data " + path("mini") + " --records-out " + out.string(), nullptr,
                       &err),
              0)
        << err;
    std::istringstream in(read_text(out));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) {
        auto j = Json::parse(line);
        rows.push_back({i, j["category"], j["flags"].get<std::vector<std::string>>()});
      }
  }
  std::map<std::string, long> by_category, by_flag, run1_by_category;
  for (const auto& r : rows) {
    by_category[r.category] += 1;
    if (r.run == 1) run1_by_category[r.category] += 1;
    for (const auto& f : r.flags) by_flag[f] += 1;
  }
  ASSERT_GE(by_category.size(), 4u) << "solved, recommend_target_absent, infra_error, stopped_without_attempt";
  ASSERT_EQ(by_flag["repeated_call"], 3);
  ASSERT_EQ(by_flag["step_cap"], 2);

  std::string html = read_text(page);
  html.insert(html.rfind("</body>"), R"(<script>
(function () {
  var out = { category: {}, flag: {}, run1: {}, detail: {} };
  function set(id, value) {
    var e = document.getElementById(id);
    e.value = value;
    e.dispatchEvent(new Event('change'));
  }
  function matching() { return Number(document.getElementById('task-count').dataset.matching); }
  function options(id) {
    return Array.prototype.map.call(document.getElementById(id).options, function (o) { return o.value; })
        .filter(function (v) { return v !== 'all'; });
  }
  out.categories = options('filter-category');
  out.flags = options('filter-flag');
  out.categories.forEach(function (c) {
    set('filter-category', c);
    out.category[c] = matching();
    // Every listed row shows that category, and its trajectory names it.
    var row = document.querySelector('#task-list tr');
    row.click();
    var field = document.querySelector('#task-detail [data-field="category"]');
    out.detail[c] = field ? field.textContent : '';
    set('filter-run', '1'); out.run1[c] = matching(); set('filter-run', 'all');
  });
  set('filter-category', 'all');
  out.flags.forEach(function (f) { set('filter-flag', f); out.flag[f] = matching(); });
  set('filter-flag', 'repeated_call');
  document.querySelector('#task-list tr').click();
  out.flags_shown = document.querySelector('#task-detail [data-field="flags"]').textContent;
  set('filter-flag', 'all');
  out.all = matching();
  var pre = document.createElement('pre');
  pre.id = 'test-results';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>)");
  write_text(*dir_ / "diagnosis-driven.html", html);
  auto load = load_page(*dir_ / "diagnosis-driven.html");
  expect_clean(load);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(load.dom, m, std::regex("<pre id=\"test-results\">([^<]*)</pre>")));
  auto got = Json::parse(std::regex_replace(m[1].str(), std::regex("&quot;"), "\""));

  // The options: the categories and flags present, in the taxonomy's order (that of pwab score's JSON).
  std::vector<std::string> categories, flags;
  const Json flagged_diagnosis = score_diagnosis(flagged.string(), path("mini"));
  for (const auto& [name, n] : flagged_diagnosis["categories"]["overall"]["primary"].items())
    if (by_category.count(name)) categories.push_back(name);
  for (const auto& [name, n] : flagged_diagnosis["categories"]["overall"]["flags"].items())
    if (by_flag.count(name)) flags.push_back(name);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(got["categories"].get<std::vector<std::string>>()), categories);
  EXPECT_EQ(sorted(got["flags"].get<std::vector<std::string>>()), flags);
  for (const auto& [category, n] : by_category) {
    EXPECT_EQ(got["category"][category], n) << category;
    EXPECT_EQ(got["run1"][category], run1_by_category[category]) << category;
    EXPECT_EQ(got["detail"][category], "Category " + category) << category;
  }
  for (const auto& [flag, n] : by_flag) EXPECT_EQ(got["flag"][flag], n) << flag;
  EXPECT_NE(got["flags_shown"].get<std::string>().find("repeated_call"), std::string::npos) << got["flags_shown"];
  EXPECT_EQ(got["all"], rows.size());

  // The edited run's cells equal pwab score's, as for the fixture's runs.
  auto plain = load_page(page);
  expect_clean(plain);
  expect_diagnosis_cells(plain.dom, "R2", flagged_diagnosis, false);

  // Without --data: no section, no filters, and the viewer works as before.
  ASSERT_EQ(run_pwab("report " + path("st") + " --out " + (*dir_ / "plain.html").string(), nullptr, &err), 0) << err;
  auto without = load_page(*dir_ / "plain.html");
  expect_clean(without);
  EXPECT_EQ(without.dom.find("id=\"diagnosis\""), std::string::npos);
  EXPECT_EQ(without.dom.find("id=\"filter-category\""), std::string::npos);
  EXPECT_EQ(without.dom.find("data-field=\"category\""), std::string::npos);
  EXPECT_NE(without.dom.find("data-matching=\"" + std::to_string(records_of(path("st")).size()) + "\""),
            std::string::npos);
}

//! Negative controls: the same checks on broken pages do report the errors, on both channels.
TEST_F(ReportBrowser, BrokenPagesAreDetected) {
  // The report with its data blob cut short: JSON.parse throws in the viewer.
  std::string page = read_text(path("report.html"));
  auto blob = page.find("id=\"pwab-data\">");
  ASSERT_NE(blob, std::string::npos);
  page.erase(blob + 40, page.find("</script>", blob) - (blob + 40));
  write_text(*dir_ / "broken.html", page);
  auto load = load_page(*dir_ / "broken.html");
  EXPECT_FALSE(load.console.empty());
  ASSERT_FALSE(banner_errors(load.dom).empty());
  EXPECT_NE(banner_errors(load.dom).front().find("JSON"), std::string::npos) << banner_errors(load.dom).front();
  EXPECT_EQ(load.dom.find("data-viewer=\"ready\""), std::string::npos);

  // A deliberate reference error and a console.error call, after the report's own scripts.
  page = read_text(path("report.html"));
  page.insert(page.rfind("</body>"), "<script>console.error('deliberate'); notDefinedAnywhere();</script>");
  write_text(*dir_ / "error.html", page);
  load = load_page(*dir_ / "error.html");
  EXPECT_EQ(load.console.size(), 2u);
  auto banner = banner_errors(load.dom);
  ASSERT_EQ(banner.size(), 2u);
  EXPECT_NE(banner[0].find("deliberate"), std::string::npos);
  EXPECT_NE(banner[1].find("notDefinedAnywhere"), std::string::npos);
}

TEST_F(ReportBrowser, BadInputIsAClearError) {
  std::string err;
  EXPECT_EQ(run_pwab("report " + path("nowhere") + " --out " + path("x.html"), nullptr, &err), 1);
  EXPECT_NE(err.find("manifest.json"), std::string::npos) << err;
  EXPECT_EQ(run_pwab("report " + path("st"), nullptr, &err), 2);  // --out is required
  EXPECT_FALSE(fs::exists(path("x.html")));
}

}  // namespace
