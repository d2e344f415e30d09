// src/runner/run.h: running many episodes into a run directory on a worker pool (style.md §9 items 1–2).
//
// A run is a list of tasks, an agent maker, a user maker and a RunDirectory. Workers take the next task not yet
// done, run its episode and append its record; nothing else is shared between episodes, so an episode that waits
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

//! A fresh agent for one task (called from worker threads).
using AgentMaker = std::function<std::unique_ptr<Agent>(const data::Task&)>;
//! The user simulator for one task, or null for none (called from worker threads).
using UserMaker = std::function<std::unique_ptr<env::UserChannel>(const data::Task&)>;

//! Where a run stands, for progress lines.
struct RunProgress {
  std::size_t total = 0;       //!< tasks this invocation has to run (already-done ones excluded)
  std::size_t finished = 0;    //!< of those, recorded so far (errored included)
  std::size_t errored = 0;
  std::size_t skipped = 0;     //!< already done in the run directory
  double seconds = 0;          //!< since the workers started
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double score_sum = 0;        //!< Σ per-task §3.2 R over finished, non-errored tasks (a running R. Acc)
};

struct RunOptions {
  EpisodeOptions episode;
  //! Worker threads; 0 = one per hardware thread.
  int concurrency = 0;
  //! Set from another thread (a signal handler, a budget check) to stop handing out tasks; the tasks in flight
  //! finish and are recorded. May be null.
  const std::atomic<bool>* cancel = nullptr;
  //! Called after every finished task and once at the end, from one thread at a time. May be empty.
  std::function<void(const RunProgress&)> on_progress;
  //! Called on each record just before it is appended (e.g. to attach the task's LLM usage); from worker
  //! threads, concurrently. May be empty.
  std::function<void(TaskRecord&)> on_record;
};

struct RunReport {
  RunProgress progress;
  bool cancelled = false;  //!< stopped before every task ran
};

//! Runs every task of `tasks` not in `dir.done()`, appending one record each. Thread-safe makers required.
RunReport run_tasks(const env::Environment& env, const std::vector<const data::Task*>& tasks, RunDirectory& dir,
                    const AgentMaker& make_agent, const UserMaker& make_user, const RunOptions& options);

//! Sorts records by split, then numerically by index (the order `pwab merge` writes), so summaries and bootstrap
//! intervals do not depend on the order workers finished in.
void sort_by_task(std::vector<TaskRecord>& records);

//! A progress line for a terminal: "tasks 120/2174 (3 errors) · 45.1/s · ETA 0:45 · R 0.412 · 10.2k tok".
std::string format_progress(const RunProgress& p);

}  // namespace pwab::runner
