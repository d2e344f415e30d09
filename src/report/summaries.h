// src/report/summaries.h: a run's summary in the formats `pwab score` prints, and the summary files written beside
// its records (summary.md, summary.csv, summary.json).
#pragma once

#include <filesystem>
#include <string>

#include "data/dataset.h"
#include "metrics/metrics.h"
#include "runner/read_run.h"

namespace pwab::report {

struct Diagnosis;  // report/diagnosis.h

//! A run's summary as `pwab score --format` prints it: "table" and "md" (the paper's layout for the run's track,
//! followed by the embedder that scored reviews: review R. Acc compares only across runs with the same one),
//! "csv" or "json". "md" and "json" add the analysis figures (analysis.h: time per task; for multi-turn runs the
//! action transitions and the results by step), "json" as its "analysis" object. With a `diagnosis` (computed with
//! the dataset: `pwab score --data`), "table" and "md" add its tables and "json" its "diagnosis" object
//! (diagnosis.h). UsageError for another format.
std::string render_summary(const metrics::Summary& summary, const runner::Run& run, const std::string& format,
                           const Diagnosis* diagnosis = nullptr);
//! Writes summary.{md,csv,json} beside the records (derived files: `pwab score` rebuilds them) and returns the
//! summary as a table. With the run's dataset, summary.md and summary.json also hold the diagnosis (`pwab score
//! --data DATA` prints the same); the returned table does not.
std::string write_summaries(const std::filesystem::path& dir, const metrics::BootstrapOptions& bootstrap = {},
                            const data::Dataset* dataset = nullptr);
//! The same for a run at hand (read_run or make_run), written to run.dir.
std::string write_summaries(const runner::Run& run, const metrics::BootstrapOptions& bootstrap = {},
                            const data::Dataset* dataset = nullptr);

}  // namespace pwab::report
