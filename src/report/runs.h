// src/report/runs.h: a run directory read the way `pwab score` reads it: the manifest, the final record of each
// task in task order, the scored outcomes, and the names tables give the run. `pwab score`, `pwab compare` and
// `pwab report` all read runs through here, so the numbers they print agree.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "metrics/metrics.h"
#include "runner/results.h"

namespace pwab::report {

struct Diagnosis;  // report/diagnosis.h

struct Run {
  std::filesystem::path dir;
  runner::RunManifest manifest;
  std::string title;                         //!< run_title() of the manifest
  metrics::Track track = metrics::Track::kMultiTurn;
  std::string embedder;                      //!< the config's embedder, "unknown" when it names none
  std::vector<runner::TaskRecord> records;   //!< per task the final record (errored ones too), in task order
  std::size_t n_errored = 0;                 //!< records with a non-empty error: not scored
  std::vector<metrics::TaskOutcome> outcomes;  //!< the metrics inputs of the records that did not error
};

//! Reads RUN_DIR/manifest.json and results.jsonl; DataError naming the file (and line) on bad input.
Run read_run(const std::filesystem::path& dir);
//! The same from a manifest and the final records already at hand (one per (task, trial), in any order: they are
//! sorted here), e.g. those a run just wrote (runner::RunReport::records, when exact): read_run is this on what it
//! reads.
Run make_run(const std::filesystem::path& dir, runner::RunManifest manifest, std::vector<runner::TaskRecord> records);

//! The title of a run in tables: the agent and its memory, e.g. "heuristic (taskspec)", from the manifest's
//! config ("run" when the config names no agent).
std::string run_title(const runner::RunManifest& manifest);
//! Which table layout the run belongs to: single-turn when the config says track "single", else multi-turn.
metrics::Track run_track(const runner::RunManifest& manifest);
//! The embedder that scored review R. Acc ("unknown" when the config does not say).
std::string run_embedder(const runner::RunManifest& manifest);

//! A run's summary as `pwab score --format` prints it: "table" and "md" (the paper's layout for the run's track,
//! followed by the embedder that scored reviews: review R. Acc compares only across runs with the same one),
//! "csv" or "json". "md" and "json" add the analysis figures (analysis.h: time per task; for multi-turn runs the
//! action transitions and the results by step), "json" as its "analysis" object. With a `diagnosis` (computed with
//! the dataset: `pwab score --data`), "table" and "md" add its tables and "json" its "diagnosis" object
//! (diagnosis.h). UsageError for another format.
std::string render_summary(const metrics::Summary& summary, const Run& run, const std::string& format,
                           const Diagnosis* diagnosis = nullptr);
//! Writes summary.{md,csv,json} beside the records (derived files: `pwab score` rebuilds them) and returns the
//! summary as a table. With the run's dataset, summary.md and summary.json also hold the diagnosis (`pwab score
//! --data DATA` prints the same); the returned table does not.
std::string write_summaries(const std::filesystem::path& dir, const metrics::BootstrapOptions& bootstrap = {},
                            const data::Dataset* dataset = nullptr);
//! The same for a run at hand (read_run or make_run), written to run.dir.
std::string write_summaries(const Run& run, const metrics::BootstrapOptions& bootstrap = {},
                            const data::Dataset* dataset = nullptr);

}  // namespace pwab::report
