// Report benchmark. report/full_split: `pwab report` as a command on two full-split runs of the synthetic dataset
// (the heuristic agent, single-turn and multi-turn, 2,174 tasks each): the time to read, score (1,000 bootstrap
// resamples per run and per comparison) and write the page, the page's size, and, when Debian's chromium is
// installed, how long headless Chromium takes to load, render and screenshot it (against an empty page, so the
// browser's own start-up can be told apart).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "bench.h"
#include "metrics/metrics.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path report_dir(const Context& ctx) { return ctx.out_dir / "report"; }
fs::path page(const Context& ctx) { return report_dir(ctx) / "report.html"; }

//! Headless Chromium loading `html` until its load event (the viewer has rendered by then) and taking a 1280×2000
//! screenshot; a fresh profile each time. (--dump-dom would add the serialization of the whole data blob.)
std::string chromium_load(const Context& ctx, const fs::path& html) {
  fs::path profile = report_dir(ctx) / "chromium-profile";
  fs::remove_all(profile);
  return "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
         profile.string() + " --window-size=1280,2000 --screenshot=" + (report_dir(ctx) / "shot.png").string() +
         " file://" + fs::absolute(html).string() + " > /dev/null 2>&1";
}

// Untimed: the two runs (the index, recommender and fastText caches come with the first).
void setup(const Context& ctx) {
  fs::path data = full_dataset_dir(ctx);
  std::string pwab = pwab_binary(ctx).string();
  if (!fs::exists(data / ".pwab-rec" / "sasrec.pwab"))
    time_command(pwab + " rec train " + data.string() + " --epochs 1 --eval-every 0 > /dev/null 2>&1");
  for (const char* track : {"single", "multi"}) {
    fs::path run = report_dir(ctx) / track;
    if (fs::exists(run / "summary.json")) continue;  // kept between invocations: the runs are deterministic
    fs::remove_all(run);
    double s = time_command(pwab + " run --quiet --data " + data.string() + " --agent heuristic --track " + track +
                            " --out " + run.string() + " > /dev/null");
    fmt::print(stderr, "[bench] report/full_split: {}-turn run of the full test split {:.1f} s\n", track, s);
  }
  fs::path empty = report_dir(ctx) / "empty.html";
  std::ofstream(empty) << "<!DOCTYPE html><html><body></body></html>\n";
}

double run(const Context& ctx, std::vector<Extra>& extras) {
  fs::remove(page(ctx));
  double s = time_command(pwab_binary(ctx).string() + " report --quiet " + (report_dir(ctx) / "single").string() + " " +
                          (report_dir(ctx) / "multi").string() + " --out " + page(ctx).string());
  double bytes = static_cast<double>(fs::file_size(page(ctx)));
  extras.push_back({"html_mb", bytes / 1e6, "MB"});
  if (fs::exists("/usr/bin/chromium")) {
    double empty = time_command(chromium_load(ctx, report_dir(ctx) / "empty.html"));
    double loaded = time_command(chromium_load(ctx, page(ctx)));
    extras.push_back({"chromium_load_s", loaded, "s"});
    extras.push_back({"chromium_empty_page_s", empty, "s"});
    extras.push_back({"chromium_page_cost_s", loaded - empty, "s"});
  }
  return s;
}

//! The page's overall R. Acc cells are `pwab run`'s own summaries of the two runs, formatted as in the tables.
std::string check(const Context& ctx) {
  std::ifstream in(page(ctx));
  std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (html.size() < 1000) return "the page is missing or tiny";
  int id = 1;
  for (const char* track : {"single", "multi"}) {
    std::ifstream summary_file(report_dir(ctx) / track / "summary.json");
    auto summary = nlohmann::json::parse(summary_file);
    const auto& c = summary["groups"]["overall"]["r_acc"];
    std::string cell = metrics::format_cell({c["value"], c["ci_low"], c["ci_high"]});
    std::string marker = fmt::format("data-metric=\"R{}.overall.r_acc\">", id++);
    auto at = html.find(marker);
    if (at == std::string::npos) return "the page lacks " + marker;
    at += marker.size();
    std::string shown = std::regex_replace(html.substr(at, html.find("</td>", at) - at), std::regex("<[^>]*>"), "");
    if (shown != cell) return marker + " shows " + shown + ", summary.json says " + cell;
  }
  if (html.find("id=\"pwab-data\"") == std::string::npos) return "no viewer data";
  return {};
}

const int kFullSplit = add({
    "report/full_split",
    "`pwab report` on two full-split runs (heuristic, single- and multi-turn, 2 x 2,174 tasks): read, score with "
    "1,000 bootstrap resamples, write one HTML page; its size; headless Chromium load time (target < 5 s to write)",
    3,
    setup,
    run,
    check,
});


// report/diagnose_full: `pwab score --data --format json` on the multi-turn full-split run (2,174 records): the
// dataset load, the failure categories, leak checks of every user reply, personalization attribution of every call
// and their bootstrap intervals, beside the anchor `pwab score --format json` without the diagnosis.
fs::path diagnosis_json(const Context& ctx) { return report_dir(ctx) / "diagnosis.json"; }

double run_diagnose(const Context& ctx, std::vector<Extra>& extras) {
  const std::string score = pwab_binary(ctx).string() + " score " + (report_dir(ctx) / "multi").string();
  double plain = time_command(score + " --format json > /dev/null");
  double s = time_command(score + " --data " + full_dataset_dir(ctx).string() + " --format json > " +
                          diagnosis_json(ctx).string());
  extras.push_back({"score_without_data_s", plain, "s"});
  extras.push_back({"diagnosis_cost_s", s - plain, "s"});
  return s;
}

//! Every record has one category, and the diagnosis' F. Acc over all records is the table's.
std::string check_diagnose(const Context& ctx) {
  std::ifstream in(diagnosis_json(ctx));
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("diagnosis")) return "no diagnosis in the output";
  const auto& overall = j["diagnosis"]["categories"]["overall"];
  std::size_t sum = 0;
  for (const auto& [name, n] : overall["primary"].items()) sum += n.get<std::size_t>();
  if (sum != overall["records"].get<std::size_t>() || sum != 2174)
    return fmt::format("{} categorised of {} records", sum, overall["records"].get<std::size_t>());
  const double f = j["groups"]["overall"]["f_acc"]["value"];
  const double f_all = j["diagnosis"]["leaks"]["overall"]["scores"]["f_all"]["value"];
  if (std::abs(f - f_all) > 1e-12) return fmt::format("diagnosis F. Acc {} vs the table's {}", f_all, f);
  return {};
}

const int kDiagnose = add({
    "report/diagnose_full",
    "`pwab score --data --format json` on the full-split multi-turn run (2,174 records): failure categories, leaks, "
    "attribution, with 1,000 bootstrap resamples; extras: the same command without --data",
    3,
    setup,
    run_diagnose,
    check_diagnose,
});

}  // namespace
