// src/runner/run.h: running many episodes into a run directory on a worker pool (docs/decisions.md, code
// practices §9 items 1–2).
//
// A run is a list of tasks, a number of trials, an agent maker, a user maker and a RunDirectory. Its units of
// work are (task, trial) pairs, handed out trial by trial (every task's trial 0 first, like tau-bench's
// --num_trials loop). Workers take the next unit not yet done, run its episode and append its record; nothing else is shared between episodes, so an episode that waits
// on a model never holds up another. A task whose episode throws pwab::Error (an LLM service that keeps failing,
// say) is recorded with `error` set, so `--resume` runs it again; a UsageError or RunAbortError stops the whole
// run instead. Cancellation (Ctrl-C, a budget) stops handing out tasks and lets the episodes in flight finish;
// the directory then resumes where it stopped.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "env/environment.h"
#include "runner/episode.h"
#include "runner/results.h"

namespace pwab::runner {

//! A half-open range of task positions within a split, parsed from "A:B", "A:" or ":B".
struct TaskRange {
  std::size_t begin = 0;
  std::optional<std::size_t> end;  //!< nullopt = to the end of the split
  //! "A:B" text; UsageError on anything else (e.g. "5", "b:a", "3:1").
  static TaskRange parse(std::string_view text);
  std::string to_string() const;
};

//! Which tasks a run (or one shard of it) covers: the split's tasks in stored order, cut to `range`, then the
//! positions with index % shard_count == shard_index (in_shard). Positions are within the split, so shard and
//! range membership never depend on other splits. UsageError for an unknown split name.
std::vector<const data::Task*> select_tasks(const data::Dataset& ds, std::string_view split, const TaskRange& range,
                                            int shard_index = 0, int shard_count = 1);

//! Parses "K/N" (0 ≤ K < N); UsageError otherwise.
std::pair<int, int> parse_shard(std::string_view text);

//! A fresh agent for trial `trial` (0-based) of a task (called from worker threads).
using AgentMaker = std::function<std::unique_ptr<Agent>(const data::Task&, int trial)>;
//! The user simulator for trial `trial` of a task, or null for none (called from worker threads).
using UserMaker = std::function<std::unique_ptr<env::UserChannel>(const data::Task&, int trial)>;

//! The seed of trial `trial` of a run seeded with `seed`: `seed` itself for trial 0, so a single-trial run draws
//! exactly what it drew before trials existed; derive_seed(seed, a fixed stream, trial) otherwise. Makers pass
//! it wherever they passed the run seed (the scripted user, seeded agents).
uint64_t trial_seed(uint64_t seed, int trial);

//! One unit of work: one trial of one task.
struct Unit {
  const data::Task* task = nullptr;
  int trial = 0;
};

//! The units of `tasks` × trials 0..trials-1 that are not in `done`, in hand-out order: trial by trial, each
//! in the order of `tasks`. UsageError when trials < 1.
std::vector<Unit> pending_units(const std::vector<const data::Task*>& tasks, int trials,
                                const std::set<RecordId>& done);

//! Where a run stands, for progress lines.
//! Counts are of (task, trial) units; with one trial per task, of tasks.
struct RunProgress {
  std::size_t total = 0;       //!< units this invocation has to run (already-done ones excluded)
  std::size_t finished = 0;    //!< of those, recorded so far (errored included)
  std::size_t errored = 0;
  std::size_t skipped = 0;     //!< already done in the run directory
  double seconds = 0;          //!< since the workers started
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double score_sum = 0;        //!< Σ per-task docs/decisions.md §3.2 R over finished, non-errored tasks
                               //!< (a running R. Acc)
};

struct RunOptions {
  EpisodeOptions episode;
  //! Runs per task (`pwab run --trials`), ≥ 1.
  int trials = 1;
  //! Worker threads; 0 = one per hardware thread.
  int concurrency = 0;
  //! Set from another thread (a signal handler) to stop handing out tasks; the tasks in flight finish and are
  //! recorded. May be null.
  const std::atomic<bool>* cancel = nullptr;
  //! A second reason to stop, asked before each unit is handed out (e.g. a spending budget reached); same
  //! effect as `cancel`. May be empty; called from worker threads, concurrently.
  std::function<bool()> should_stop;
  //! Called after every finished task and once at the end, from one thread at a time. May be empty.
  std::function<void(const RunProgress&)> on_progress;
  //! Called on each record just before it is appended (e.g. to attach the task's LLM usage); from worker
  //! threads, concurrently. May be empty.
  std::function<void(TaskRecord&)> on_record;
  //! Keep the records this call writes in RunReport::records (e.g. to summarize the run without reading
  //! results.jsonl back).
  bool keep_records = false;
};

struct RunReport {
  RunProgress progress;
  bool cancelled = false;  //!< stopped before every task ran
  //! With RunOptions::keep_records: the records this call wrote, in the order they were written (not the
  //! records of an earlier session of a resumed run).
  std::vector<TaskRecord> records;
  //! Whether reading results.jsonl back gives every kept record exactly as it is in `records`
  //! (RecordLine::exact); when false, read the directory instead.
  bool records_exact = true;
};

//! Runs every (task, trial) unit of `tasks` × options.trials not in `dir.done()` (pending_units), appending one
//! record each. Thread-safe makers required.
RunReport run_tasks(const env::Environment& env, const std::vector<const data::Task*>& tasks, RunDirectory& dir,
                    const AgentMaker& make_agent, const UserMaker& make_user, const RunOptions& options);
//! The same on units already chosen by pending_units (a caller that needs them first, to prepare its agents,
//! computes them once); `skipped` is the count of units already done, for progress.
RunReport run_units(const env::Environment& env, const std::vector<Unit>& todo, std::size_t skipped, RunDirectory& dir,
                    const AgentMaker& make_agent, const UserMaker& make_user, const RunOptions& options);

//! A progress line for a terminal: "tasks 120/2174 (3 errors) · 45.1/s · ETA 0:45 · R 0.412 · 10.2k tok".
std::string format_progress(const RunProgress& p);

}  // namespace pwab::runner
