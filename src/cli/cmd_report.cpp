// `pwab report`: one self-contained HTML page over run directories: scores, charts, the paired comparison and a
// trajectory viewer (src/report/report.h, docs/report.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "core/error.h"
#include "core/sys.h"
#include "report/diagnosis.h"
#include "report/report.h"

namespace pwab::cli {

void add_report_command(CLI::App& app) {
  struct ReportArgs {
    std::vector<std::string> dirs;
    std::string out, title = "pwab report", data;
    int resamples = 1000;
    double confidence = 0.95;
    uint64_t seed = 1;
    std::size_t max_observation = 2000;
    double failed_below = 0.5;
    bool quiet = false;
  };
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Write one self-contained HTML page: scores, charts, comparison, "
                                              "trajectories; with --data, also why tasks fail (diagnosis, user leaks, "
                                              "personalization) and the viewer's category and flag filters");
  cmd->add_option("run_dirs", a->dirs, "Run directories (the first is the baseline of the paired comparison)")
      ->required();
  add_shared_option(*cmd, "--out", a->out, "html")->required();
  cmd->add_option("--title", a->title, "Page title")->capture_default_str();
  // The same defaults as `pwab score`, so the page's numbers are the ones it prints.
  add_shared_option(*cmd, "--bootstrap", a->resamples)->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  add_shared_option(*cmd, "--confidence", a->confidence)->capture_default_str()->check(CLI::Range(0.5, 0.999));
  add_shared_option(*cmd, "--seed", a->seed, "bootstrap")->capture_default_str();
  cmd->add_option("--max-observation", a->max_observation,
                  "Cut observations longer than this many bytes in the page (0 = keep whole)")
      ->capture_default_str();
  cmd->add_option("--failed-below", a->failed_below, "The viewer's default 'failed' threshold on R")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  add_shared_option(*cmd, "--data", a->data);
  add_shared_flag(*cmd, "--quiet", a->quiet);
  cmd->callback([a] {
    Stopwatch clock;
    std::vector<runner::Run> runs;
    for (const auto& d : a->dirs) runs.push_back(runner::read_run(d));
    report::ReportOptions options;
    options.title = a->title;
    options.bootstrap = {a->resamples, a->confidence, a->seed};
    options.max_observation_chars = a->max_observation;
    options.failed_below = a->failed_below;
    options.generated_utc = utc_now_iso();
    if (!a->data.empty()) {
      // As `pwab score --data` computes it (the default pass rule, the report's bootstrap), so the numbers agree.
      const data::Dataset ds = load_data(a->data);
      for (const auto& run : runs)
        options.diagnoses.push_back(diagnose_run(run, ds, a->data, {}, options.bootstrap));
    }
    std::string page = report::render_html(runs, options);
    write_file_atomic(a->out, page);
    if (!a->quiet) {
      std::size_t n = 0;
      for (const auto& r : runs) n += r.records.size();
      std::cerr << fmt::format("pwab: wrote {} ({:.1f} MB; {} runs, {} tasks) in {:.2f} s\n", a->out,
                               static_cast<double>(page.size()) / 1e6, runs.size(), n, clock.seconds());
    }
  });
}

}  // namespace pwab::cli
