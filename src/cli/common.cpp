#include "cli/common.h"

#include <fmt/format.h>

#include <iostream>

#include "data/loader.h"
#include "runner/results.h"

namespace pwab::cli {

data::Dataset load_data(const std::string& dir) { return data::load_dataset(dir); }

std::function<void(const std::string&)> stderr_status() {
  return [](const std::string& line) { std::cerr << "pwab: " << line << "\n"; };
}

assemble::ServiceOptions service_options(const std::string& index_dir, const std::string& checkpoint, bool announce) {
  return {index_dir, checkpoint, announce ? stderr_status() : nullptr};
}

report::Diagnosis diagnose_run(const runner::Run& run, const data::Dataset& ds, const std::string& dir,
                               const metrics::PassRule& rule, const metrics::BootstrapOptions& bootstrap) {
  if (const std::string fingerprint = runner::dataset_fingerprint(dir); fingerprint != run.manifest.dataset_fingerprint)
    std::cerr << fmt::format("pwab: warning: {} was not made on {} (dataset fingerprint {} vs {})\n", run.dir.string(),
                             dir, run.manifest.dataset_fingerprint, fingerprint);
  report::DiagnosisOptions options;
  options.rule = rule;
  options.bootstrap = bootstrap;
  return report::diagnose(run, ds, options);
}

}  // namespace pwab::cli
