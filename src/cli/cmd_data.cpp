// `pwab data validate` and `pwab data synth`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iostream>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/error.h"
#include "core/sys.h"
#include "data/synth.h"
#include "data/validate.h"

namespace pwab::cli {
namespace {

struct ValidateArgs {
  std::string dir;
  bool json = false;
  bool strict = false;
  unsigned threads = 0;
};

struct SynthArgs {
  std::string out;
  std::string scale = "mini";
  data::SynthOptions options;
};

}  // namespace

void add_data_commands(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Dataset tools: validate a dataset, generate a synthetic one");
  data->require_subcommand(1);

  auto validate_args = std::make_shared<ValidateArgs>();
  auto* validate = data->add_subcommand(
      "validate", "Load a dataset in the original layout, check it, and print its statistics (paper Table 2)");
  validate->add_option("dir", validate_args->dir, "Dataset directory")->required();
  add_shared_flag(*validate, "--json", validate_args->json, "print");
  validate->add_flag("--strict", validate_args->strict, "Treat warnings as errors (exit 1)");
  add_shared_option(*validate, "--threads", validate_args->threads, "files");
  validate->callback([validate_args] {
#if defined(__GLIBC__)
    // The load allocates ~200 MB of small records from two parser threads at once. glibc grows a thread's
    // arena a few pages at a time, one mprotect each (thousands, serialised with the other thread's page
    // faults); a 64 MiB pad makes that a handful. Only address space is reserved: untouched pages cost nothing.
    // Scoped to this command, a short-lived process (docs/performance.md, issue 31).
    mallopt(M_TOP_PAD, 64 << 20);
#endif
    // The dataset is left to the process's exit, which returns its pages in one go: freeing its million strings
    // one by one took ~15% of the command. Reachable from a static, so leak checkers do not count it.
    static auto* const left_to_exit = new data::Dataset;
    auto report = data::validate_dataset(validate_args->dir, validate_args->threads, left_to_exit);
    std::cout << (validate_args->json ? data::format_report_json(report) + "\n" : data::format_report(report));
    bool failed = report.diag.has_errors() || (validate_args->strict && report.diag.n_warnings() > 0);
    if (failed) throw Error(fmt::format("{}: {} errors, {} warnings", validate_args->dir, report.diag.n_errors(),
                                        report.diag.n_warnings()));
  });

  auto synth_args = std::make_shared<SynthArgs>();
  auto* synth = data->add_subcommand(
      "synth", "Generate a deterministic synthetic dataset in the original layout (mini: ~50 users; full: Table 2 scale)");
  add_shared_option(*synth, "--out", synth_args->out, "dataset")->required();
  synth->add_option("--scale", synth_args->scale, "mini | full")->check(CLI::IsMember({"mini", "full"}));
  add_shared_option(*synth, "--seed", synth_args->options.seed, "bytes");
  add_shared_option(*synth, "--users", synth_args->options.n_users, "dataset");
  synth->add_option("--products", synth_args->options.n_products, "Catalogue size (default: by scale)");
  synth->callback([synth_args] {
    synth_args->options.scale = *data::parse_synth_scale(synth_args->scale);
    Stopwatch clock;
    data::synthesize_to(synth_args->options, synth_args->out);
    std::cerr << fmt::format("pwab: wrote the {} synthetic dataset (seed {}) to {} in {:.2f} s\n", synth_args->scale,
                             synth_args->options.seed, synth_args->out, clock.seconds());
  });
}

}  // namespace pwab::cli
