// src/runner/results.h: the files a run leaves behind (docs/decisions.md, code practices §9 item 2;
// docs/runner.md "Results files").
//
// A run directory holds `manifest.json` (what the run was: config, seed, dataset fingerprint, pwab version,
// shard) and `results.jsonl`, one line appended per finished (task, trial) and never rewritten. A record is
// identified by its RecordId: the task key and the trial number (`pwab run --trials N` runs every task N
// times). A killed run resumes from those lines; shard directories merge into one; `pwab score` recomputes
// every number from the lines alone. No JSON library type appears here: records carry plain fields and
// (de)serialize themselves.
#pragma once
#include <cstddef>
#include <compare>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "data/types.h"
#include "env/environment.h"
#include "metrics/metrics.h"
#include "runner/episode.h"

namespace pwab::runner {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kResultsFile = "results.jsonl";

//! RUN_DIR/manifest.json.
struct RunManifest {
  //! The full run config as a JSON object text. Stored and compared in canonical form (keys sorted, compact),
  //! so key order and whitespace do not matter on resume.
  std::string config_json = "{}";
  uint64_t seed = 0;
  std::string dataset_fingerprint;  //!< dataset_fingerprint() of the data directory
  std::string pwab_version;         //!< pwab::kVersion of the build that created the run
  std::string created_utc;          //!< ISO 8601, filled with the current time when empty at creation
  int shard_index = 0;
  int shard_count = 1;
};

//! Reads RUN_DIR/manifest.json; throws DataError naming the file and the problem.
RunManifest read_manifest(const std::filesystem::path& dir);

//! 16 hex digits identifying the dataset: every regular file under `data_dir` (recursively, sorted by relative
//! path), each contributing its relative path and the hash of its bytes. Hidden files and folders (names
//! starting with '.', such as pwab's .pwab-index / .pwab-rec caches) are not part of it. Throws pwab::Error
//! when unreadable.
std::string dataset_fingerprint(const std::filesystem::path& data_dir);

//! The manifest config key holding the number of trials per task (`pwab run --trials`); a config without it
//! (a run directory written before trials existed) has 1.
inline constexpr const char* kTrialsKey = "trials";

//! What a record is the result of: one trial of one task. The one identity of records everywhere (resume,
//! latest record, merge, ordering, the LLM ledger's booking key); build it with TaskRecord::id() or directly,
//! never by pasting strings.
struct RecordId {
  std::string task_key;  //!< "<split>/<index>", e.g. "test/17"
  int trial = 0;         //!< 0-based

  //! Plain text order (task key, then trial); sort_by_task orders task keys numerically instead.
  auto operator<=>(const RecordId&) const = default;
  //! A text form for maps keyed by strings (the LLM ledger) and messages: the task key alone for trial 0, so a
  //! single-trial run books and prints exactly as before; "test/17 trial 2" otherwise.
  std::string to_string() const;
};

//! One finished trial of a task: one line of results.jsonl.
struct TaskRecord {
  std::string task_key;  //!< "<split>/<index>", e.g. "test/17"
  //! 0-based trial number (`pwab run --trials N` runs trials 0..N-1). Written as "trial" in every record; a
  //! record without it (written before trials existed) reads as trial 0.
  int trial = 0;
  std::string user_id;
  std::string instruction;
  data::TaskType type = data::TaskType::kSearch;
  std::string target_asin;
  std::string first_observation;             //!< what reset() showed the agent
  std::vector<env::ActionRecord> actions;    //!< the whole trajectory, in order
  std::vector<metrics::Attempt> attempts;    //!< the scored attempts, in order
  int steps = 0;
  std::string ending;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double seconds_env = 0;
  double seconds_agent = 0;
  //! Non-empty: the task failed for an infrastructure reason (not the agent's fault). Such a record is not
  //! done: resume runs the task again and the later record supersedes this one.
  std::string error;
  //! Model usage and cost of the task per role as a JSON object text (llm::Ledger::to_json(task)), "" when the
  //! run used no LLM. Written as the record's "usage" object.
  std::string usage_json;
  //! What the user simulator reports about its replies as a JSON object text (env::UserChannel::record_json:
  //! the LLM user's leak guard counts), "" when it reports nothing. Written as the record's "user" object, only
  //! when set, so records of runs without it are unchanged.
  std::string user_json;

  //! The record as one JSON object on one line (no '\n' inside, none at the end). Invalid UTF-8 in strings is
  //! replaced by U+FFFD rather than failing.
  std::string to_json_line() const;
  //! Parses one line; throws DataError naming the missing or mistyped field. Unknown fields are ignored.
  static TaskRecord from_json(std::string_view line);
  //! The metrics input (task_key, type, attempts, steps, trial).
  metrics::TaskOutcome outcome() const;
  //! (task_key, trial).
  RecordId id() const { return {task_key, trial}; }
};

//! "<split>/<index>" of a task (data/types.h; here too for existing callers).
using data::task_key;

//! The record of a finished episode (error empty) of trial `trial`.
TaskRecord make_record(const data::Dataset& ds, const data::Task& task, const EpisodeResult& result, int trial = 0);

//! A record with its results.jsonl line, made before the append (RunDirectory::append_all), e.g. by the thread
//! that ran the episode rather than the one that writes.
struct RecordLine {
  TaskRecord record;
  std::string line;   //!< record.to_json_line() and a newline
  //! Whether read_records gives `record` back exactly from `line`: false when the record holds something its line
  //! does not carry back as it is (invalid UTF-8, written replaced; a non-finite number, written as null; a usage
  //! or user object, read back re-serialized) or, to be safe, when the line holds a U+FFFD.
  bool exact = true;
  explicit RecordLine(TaskRecord r);
};

namespace detail {
struct PendingRecord;  // a line waiting for its write (results.cpp)
}

//! An open run directory, appending to results.jsonl. Movable, not copyable; append() is thread-safe.
class RunDirectory {
 public:
  //! Without `resume`: creates `dir` (if needed) and writes its manifest; a UsageError when `dir` already has
  //! results. With `resume`: a directory without a manifest is created as above; otherwise the stored manifest
  //! must match `manifest` in config, seed, dataset fingerprint and shard (a UsageError naming the first field
  //! that differs), the existing lines are checked (DataError with the line number on a bad one), and an
  //! unterminated last line left by a kill mid-write is cut off the file before anything is appended.
  //! The config's "trials" (kTrialsKey, 1 when absent) is the one config value a resume may change, and only
  //! upwards: more trials rewrite the stored manifest with the new count (the missing trials then run);
  //! fewer is a UsageError.
  static RunDirectory open(const std::filesystem::path& dir, const RunManifest& manifest, bool resume);

  RunDirectory(RunDirectory&&) noexcept;
  RunDirectory& operator=(RunDirectory&&) noexcept;
  ~RunDirectory();

  const std::filesystem::path& path() const;
  //! The manifest in force (the stored one when resuming, with its trials raised when the caller asked for more).
  const RunManifest& manifest() const;
  //! The (task, trial) units whose latest record has no error: what a resumed run skips.
  std::set<RecordId> done() const;
  //! Whether one (task, trial) is done, without copying the set.
  bool is_done(const RecordId& id) const;
  //! Lines dropped from the end of the file when it was opened (0 or 1).
  std::size_t n_truncated() const;
  //! Appends the record as one line and fsyncs it; safe to call from several threads, and returns once the record
  //! is on disk. Records appended at the same moment are committed together (one write of whole lines, one
  //! fsync); when that write fails, the file is cut back to where it was and each of them throws.
  void append(const TaskRecord& record);
  //! Appends several records made into lines beforehand the same way: one write of their lines and one fsync
  //! (shared with any concurrent appends), returning once all are on disk.
  void append_all(const std::vector<RecordLine>& records);

 private:
  struct State;
  void commit(const std::vector<std::shared_ptr<detail::PendingRecord>>& records);
  explicit RunDirectory(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

//! The final records of a run directory: per (task, trial) the latest record (errored ones included; check
//! `error`), in the file order of those latest records. An unterminated last line is ignored and counted in
//! `*n_truncated`; any other bad line throws DataError naming the file and line number.
std::vector<TaskRecord> read_records(const std::filesystem::path& dir, std::size_t* n_truncated = nullptr);

//! The metrics inputs of the records that did not error.
std::vector<metrics::TaskOutcome> scored_outcomes(const std::vector<TaskRecord>& records);

//! Merges shard run directories into `out`. The manifests must agree on config (trials included), seed,
//! dataset, pwab version and shard count, and together be shards 0..N-1 exactly once; a (task, trial) present
//! in two shards is a DataError. Writes out/manifest.json (shard 0 of 1) and out/results.jsonl with each
//! shard's final records, ordered by split, numerically by index, then by trial (sort_by_task). `out` must not already hold results (UsageError).
void merge_runs(const std::vector<std::filesystem::path>& shard_dirs, const std::filesystem::path& out);

//! Orders records by split, then numerically by index, then by trial (the order `pwab merge` writes), so
//! summaries and bootstrap intervals do not depend on the order workers finished in. Stable.
void sort_by_task(std::vector<TaskRecord>& records);

//! The track a manifest's config names ("track"); data::kDefaultTrack when it names none or no track.
data::Track manifest_track(const RunManifest& manifest);

//! The trials per task a manifest's config asks for: its "trials" value, 1 when absent. DataError when the
//! value is not an integer ≥ 1.
int manifest_trials(const RunManifest& manifest);

//! Whether shard `shard_index` of `shard_count` runs task `task_index` (its position in the split): exactly
//! when task_index % shard_count == shard_index. UsageError on shard_count < 1 or an index outside [0, count).
bool in_shard(std::size_t task_index, int shard_index, int shard_count);

}  // namespace pwab::runner
