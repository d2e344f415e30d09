// src/assemble/rescore.h: re-grading a run from its stored trajectories (`pwab rescore`), without any agent.
//
// Every record's actions are replayed, in order, in a fresh episode of its task on the given dataset and services:
// the tools run again and score again (after a dataset fix, with another embedder for review similarity, or
// another search index), and the user's replies are the ones recorded (no user simulator is asked). The actions
// are kept as the agent chose them, even where the new observations differ from those it saw. Token counts, agent
// time, usage and the trial come from the old record; records of errored tasks are copied as they are.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>

namespace pwab::assemble {

struct RescoreOptions {
  std::filesystem::path data;        //!< the dataset to score against
  std::string embedder;              //!< "" = the run's own (its manifest's "embedder")
  std::filesystem::path index_dir;   //!< "" = DATA's default
  std::filesystem::path checkpoint;  //!< "" = DATA's default
  int top_k = 0;                     //!< 0 = the run's own
  std::function<void(const std::string&)> status;  //!< a line per event; null = silent
  //! Refuse (DataError, before any replay) when the review embedder, the search index or the SASRec checkpoint
  //! opened is not the one the run's manifest names ("embedder", "search_index", "recommender"): with other
  //! services the scores cannot match.
  bool require_same_services = false;
  //! For a run whose user simulator was the scripted one (deterministic per seed), let that simulator answer again
  //! instead of replaying the recorded replies; a recorded reply it would not have given then shows up as a
  //! changed observation of a `respond` (RescoreReport::changed_replies).
  bool regenerate_scripted_replies = false;
};

struct RescoreReport {
  int records = 0;
  int rescored = 0;
  int copied_errors = 0;          //!< errored records copied unchanged
  int changed_scores = 0;         //!< records whose task score (f, r) differs from the old one
  int changed_observations = 0;   //!< records with at least one observation that differs
  int changed_replies = 0;        //!< of those, records where a user's reply to a `respond` differs
  bool regenerated_replies = false;  //!< the scripted user answered again (regenerate_scripted_replies applied)
  std::size_t split_tasks = 0;       //!< tasks in the run's split of the dataset (for coverage)
};

//! Reads RUN (manifest.json, results.jsonl) and writes OUT, a run directory `pwab score` reads, whose manifest is
//! RUN's with the new dataset's fingerprint and "rescored_from" / "rescore" added to its config. UsageError when
//! OUT already has results, DataError for a record whose task the dataset does not have.
RescoreReport rescore_run(const std::filesystem::path& run, const std::filesystem::path& out,
                          const RescoreOptions& options);

}  // namespace pwab::assemble
