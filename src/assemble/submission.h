// src/assemble/submission.h: leaderboard submissions that verify themselves (`pwab submit prepare|verify`,
// docs/submit.md).
//
// A bundle is a folder: submission.json (what is claimed: the model and agent, each run's environment and dataset
// fingerprints and its scores as `pwab score --format json` prints them), summary.md (the claims as Markdown
// tables), and runs/<k>/manifest.json + results.jsonl (each run's final records). Verifying replays every record's
// actions against the dataset (assemble::rescore_run: no agent is called; the scripted user answers again), and
// checks that each record's scored attempts and then each claimed number follow from the trajectories.
// Verification shows that the scores follow from the trajectories; it cannot show that an agent chose them.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/track.h"
#include "metrics/metrics.h"

namespace pwab::assemble {

inline constexpr const char* kSubmissionFormat = "pwab-submission/1";
inline constexpr const char* kSubmissionFile = "submission.json";

struct SubmissionInfo {
  std::string model;        //!< the model behind the agent, as the leaderboard should name it (required)
  std::string description;  //!< free text: method, prompts, training data, links
  metrics::BootstrapOptions bootstrap;  //!< the claimed scores' intervals (the defaults are `pwab score`'s)
  //! The runs' dataset. When set, each run also claims its diagnosis (failure categories, user leaks, personalization:
  //! `pwab score --data`'s "diagnosis"), which verify recomputes from the re-scored records.
  std::filesystem::path data;
};

//! Writes the bundle for `runs` (at least one) into `out`, which must not exist or be empty (UsageError). A run
//! with errored records (retry them with --resume) or a shard (merge the shards first) is a UsageError; a damaged
//! run is a DataError naming the file.
void prepare_submission(const std::vector<std::filesystem::path>& runs, const std::filesystem::path& out,
                        const SubmissionInfo& info);

struct VerifyOptions {
  std::filesystem::path data;        //!< the dataset every run must have been made on
  std::string embedder;              //!< "" = each run's own (as `pwab rescore`)
  std::filesystem::path index_dir;   //!< "" = DATA's default
  std::filesystem::path checkpoint;  //!< "" = DATA's default
  //! Result accuracies and claimed numbers may differ by this much (relative above 1): review similarity goes
  //! through floating-point embeddings that need not agree to the last bit across machines.
  double tolerance = 1e-6;
  bool require_complete = false;  //!< fail unless each run covers every task of its split
  std::filesystem::path work_dir;  //!< where the re-scored runs are written ("" = a temporary folder, removed)
  std::function<void(const std::string&)> status;  //!< progress lines; null = silent
};

//! What verification found for one run of the bundle.
struct RunVerdict {
  std::string name;           //!< its folder under runs/
  std::string title;          //!< runner::run_title(), e.g. "heuristic (taskspec)"
  data::Track track = data::kDefaultTrack;
  std::size_t records = 0;    //!< records re-scored
  std::size_t tasks = 0;      //!< distinct tasks among them
  std::size_t split_tasks = 0;  //!< tasks in the run's split of DATA
  bool replies_regenerated = false;  //!< the scripted user answered again (else replies were taken as recorded)
  int changed_observations = 0;      //!< records with a tool observation unlike the recorded one (a note)
  std::string failure;        //!< the first difference; empty when the run verified
};

struct VerifyReport {
  std::string model;
  std::vector<RunVerdict> runs;
  std::vector<std::string> notes;  //!< facts a reviewer should know that do not fail the bundle
  bool ok() const;
  //! The first failure, prefixed with its run ("" when ok()).
  std::string first_failure() const;
};

//! Verifies BUNDLE against `options.data` (see the file comment). Every run is checked, in order: the records
//! file is the one prepared (hash), the dataset and the environment match, the records re-score to the attempts
//! they hold, the claimed scores follow from the re-scored records. A failure stops that run's checks and is
//! reported in its verdict; a bundle that cannot be read at all is a DataError naming the file and field.
VerifyReport verify_submission(const std::filesystem::path& bundle, const VerifyOptions& options);

//! The verdicts as text: one line per run and a last line "verified" or "NOT verified: <first failure>".
std::string format_verify_report(const VerifyReport& report);

}  // namespace pwab::assemble
