// `pwab submit prepare|verify`: leaderboard bundles whose claimed scores anyone can check against the dataset
// (src/assemble/submission.h, docs/submit.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "core/error.h"
#include "core/sys.h"
#include "assemble/submission.h"

namespace pwab::cli {

void add_submit_commands(CLI::App& app) {
  auto* submit = app.add_subcommand("submit", "Leaderboard submissions: prepare a bundle of runs, or verify one");
  submit->require_subcommand(1);

  struct PrepareArgs {
    std::vector<std::string> runs;
    std::string out, description_file, data;
    assemble::SubmissionInfo info;
  };
  auto p = std::make_shared<PrepareArgs>();
  auto* prepare = submit->add_subcommand("prepare", "Bundle run directories with their claimed scores; with --data, each run "
                                                         "also claims its diagnosis (verify recomputes it)");
  prepare->add_option("runs", p->runs, "Run directories (merged, without errored tasks)")->required();
  add_shared_option(*prepare, "--out", p->out, "bundle")->required();
  add_shared_option(*prepare, "--model", p->info.model, "leaderboard")
      ->required();
  auto* text = prepare->add_option("--description", p->info.description, "Method, prompts, training data, links");
  prepare->add_option("--description-file", p->description_file, "Read the description from a file")
      ->excludes(text);
  add_shared_option(*prepare, "--bootstrap", p->info.bootstrap.resamples)
      ->capture_default_str()->check(CLI::Range(0, 1000000));
  add_shared_option(*prepare, "--confidence", p->info.bootstrap.confidence)->capture_default_str()
      ->check(CLI::Range(0.5, 0.999));
  add_shared_option(*prepare, "--seed", p->info.bootstrap.seed, "bootstrap")->capture_default_str();
  add_shared_option(*prepare, "--data", p->data);
  prepare->callback([p] {
    if (!p->description_file.empty()) p->info.description = read_file(p->description_file);
    p->info.data = p->data;
    std::vector<std::filesystem::path> runs(p->runs.begin(), p->runs.end());
    assemble::prepare_submission(runs, p->out, p->info);
    std::cout << read_file(std::filesystem::path(p->out) / "summary.md");
    std::cerr << fmt::format("pwab: wrote the bundle {} ({} runs); check it with `pwab submit verify {} --data DATA`\n",
                             p->out, runs.size(), p->out);
  });

  struct VerifyArgs {
    std::string bundle, data, work_dir;
    assemble::VerifyOptions options;
  };
  auto v = std::make_shared<VerifyArgs>();
  auto* verify = submit->add_subcommand("verify", "Re-score a bundle's trajectories on DATA (the dataset the runs claim "
                                                       "to be on) and check its claims");
  verify->add_option("bundle", v->bundle, "The bundle folder")->required();
  add_shared_option(*verify, "--data", v->data)->required();
  add_shared_option(*verify, "--embedder", v->options.embedder)->default_str("each run's own");
  add_shared_option(*verify, "--index-dir", v->options.index_dir);
  add_shared_option(*verify, "--checkpoint", v->options.checkpoint);
  verify->add_option("--tolerance", v->options.tolerance, "Allowed difference of result accuracies and scores")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  verify->add_flag("--require-complete", v->options.require_complete, "Fail unless every run covers its whole split");
  verify->add_option("--work-dir", v->work_dir, "Keep the re-scored runs here (default: a temporary folder)");
  verify->callback([v] {
    v->options.data = v->data;
    v->options.work_dir = v->work_dir;
    v->options.status = stderr_status();
    assemble::VerifyReport report = assemble::verify_submission(v->bundle, v->options);
    std::cout << assemble::format_verify_report(report);
    if (!report.ok()) throw Error("the bundle does not verify: " + report.first_failure());
  });
}

}  // namespace pwab::cli
