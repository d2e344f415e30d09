// src/cli/common.h: what several subcommands share: loading a dataset, the service flags as assemble::ServiceOptions.
#pragma once
#include <functional>
#include <string>

#include "data/dataset.h"
#include "assemble/services.h"
#include "report/diagnosis.h"

namespace pwab::cli {

//! Loads a dataset directory, throwing DataError with the first problem (see `pwab data validate`).
data::Dataset load_data(const std::string& dir);
//! Status lines on stderr, "pwab: <line>" (a first-run training, resume notes).
std::function<void(const std::string&)> stderr_status();
//! The --index-dir and --checkpoint flags (empty = DATA's defaults); `announce`: status lines ("pwab: ...") on
//! stderr, e.g. when SASRec is trained on first use.
assemble::ServiceOptions service_options(const std::string& index_dir, const std::string& checkpoint, bool announce = true);
//! The diagnosis of `run` against the dataset `ds` loaded from `dir` (`pwab score|compare|report --data`), with a
//! warning on stderr when the run was not made on that dataset.
report::Diagnosis diagnose_run(const runner::Run& run, const data::Dataset& ds, const std::string& dir,
                               const metrics::PassRule& rule, const metrics::BootstrapOptions& bootstrap);

}  // namespace pwab::cli
