// src/runner/read_run.h: a run directory read the way `pwab score` reads it: the manifest, the final record of each
// task in task order, the scored outcomes, and the names tables give the run. `pwab score`, `pwab compare` and
// `pwab report` all read runs through here, so the numbers they print agree.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "data/track.h"
#include "metrics/metrics.h"
#include "runner/results.h"

namespace pwab::runner {

struct Run {
  std::filesystem::path dir;
  RunManifest manifest;
  std::string title;                         //!< run_title() of the manifest
  data::Track track = data::kDefaultTrack;   //!< manifest_track() of the manifest
  std::string embedder;                      //!< the config's embedder, "unknown" when it names none
  std::vector<TaskRecord> records;           //!< per task the final record (errored ones too), in task order
  std::size_t n_errored = 0;                 //!< records with a non-empty error: not scored
  std::vector<metrics::TaskOutcome> outcomes;  //!< the metrics inputs of the records that did not error
};

//! Reads RUN_DIR/manifest.json and results.jsonl; DataError naming the file (and line) on bad input.
Run read_run(const std::filesystem::path& dir);

//! The same from a manifest and the final records already at hand (one per (task, trial), in any order: they are
//! sorted here), e.g. those a run just wrote (RunReport::records, when exact): read_run is this on what it reads.
Run make_run(const std::filesystem::path& dir, RunManifest manifest, std::vector<TaskRecord> records);

//! The title of a run in tables: the agent and its memory, e.g. "heuristic (taskspec)", from the manifest's
//! config ("run" when the config names no agent).
std::string run_title(const RunManifest& manifest);

//! The embedder that scored review R. Acc ("unknown" when the config does not say).
std::string run_embedder(const RunManifest& manifest);

}  // namespace pwab::runner
