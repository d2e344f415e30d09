// src/runner/run.cpp: task selection, the worker pool and progress lines.
#include "runner/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/rng.h"
#include "core/sys.h"

namespace pwab::runner {
namespace {

std::optional<std::size_t> parse_size(std::string_view s) {
  std::size_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The derive_seed stream of trial seeds, so they never coincide with another use of the run seed.
constexpr uint64_t kTrialStream = 0x7e1a15;

std::string clock_text(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string count_text(int64_t n) {
  if (n >= 1'000'000) return fmt::format("{:.1f}M", static_cast<double>(n) / 1e6);
  if (n >= 10'000) return fmt::format("{:.1f}k", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

}  // namespace

TaskRange TaskRange::parse(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos)
    throw UsageError("--tasks wants A:B (positions in the split, B exclusive; either may be empty), got '" +
                     std::string(text) + "'");
  TaskRange r;
  auto a = text.substr(0, colon), b = text.substr(colon + 1);
  if (!a.empty()) {
    auto v = parse_size(a);
    if (!v) throw UsageError("--tasks: '" + std::string(a) + "' is not a task position");
    r.begin = *v;
  }
  if (!b.empty()) {
    auto v = parse_size(b);
    if (!v) throw UsageError("--tasks: '" + std::string(b) + "' is not a task position");
    if (*v < r.begin) throw UsageError("--tasks: the end " + std::string(b) + " is before the start");
    r.end = *v;
  }
  return r;
}

std::string TaskRange::to_string() const {
  return std::to_string(begin) + ":" + (end ? std::to_string(*end) : std::string());
}

std::pair<int, int> parse_shard(std::string_view text) {
  auto slash = text.find('/');
  std::optional<std::size_t> k, n;
  if (slash != std::string_view::npos) k = parse_size(text.substr(0, slash)), n = parse_size(text.substr(slash + 1));
  if (!k || !n || *n < 1 || *k >= *n || *n > 1'000'000)
    throw UsageError("--shard wants K/N with 0 <= K < N (e.g. 3/8), got '" + std::string(text) + "'");
  return {static_cast<int>(*k), static_cast<int>(*n)};
}

std::vector<const data::Task*> select_tasks(const data::Dataset& ds, std::string_view split, const TaskRange& range,
                                            int shard_index, int shard_count) {
  auto parsed = data::parse_split(split);
  if (!parsed || (*parsed != data::Split::kTrain && *parsed != data::Split::kTest))
    throw UsageError("--split must be test or train, got '" + std::string(split) + "'");
  const auto& all = ds.tasks(*parsed);
  std::size_t end = std::min(all.size(), range.end.value_or(all.size()));
  std::vector<const data::Task*> out;
  for (std::size_t i = range.begin; i < end; ++i)
    if (in_shard(i, shard_index, shard_count)) out.push_back(&all[i]);
  return out;
}

uint64_t trial_seed(uint64_t seed, int trial) {
  return trial == 0 ? seed : derive_seed(seed, kTrialStream, static_cast<uint64_t>(trial));
}

std::vector<Unit> pending_units(const std::vector<const data::Task*>& tasks, int trials,
                                const std::set<RecordId>& done) {
  if (trials < 1) throw UsageError("--trials must be at least 1, got " + std::to_string(trials));
  std::vector<Unit> out;
  for (int trial = 0; trial < trials; ++trial)
    for (const auto* t : tasks)
      if (!done.count({task_key(*t), trial})) out.push_back({t, trial});
  return out;
}

RunReport run_tasks(const env::Environment& env, const std::vector<const data::Task*>& tasks, RunDirectory& dir,
                    const AgentMaker& make_agent, const UserMaker& make_user, const RunOptions& options) {
  const std::vector<Unit> todo = pending_units(tasks, options.trials, dir.done());
  const std::size_t skipped = tasks.size() * static_cast<std::size_t>(options.trials) - todo.size();
  return run_units(env, todo, skipped, dir, make_agent, make_user, options);
}

RunReport run_units(const env::Environment& env, const std::vector<Unit>& todo, std::size_t skipped, RunDirectory& dir,
                    const AgentMaker& make_agent, const UserMaker& make_user, const RunOptions& options) {
  RunReport report;
  RunProgress& progress = report.progress;
  progress.total = todo.size();
  progress.skipped = skipped;

  std::mutex mu;  // guards progress, the callback and first_failure
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stopped{false};
  Stopwatch clock;

  // Worker exceptions other than task failures (usage errors, I/O errors on the results file) stop the run:
  // the first one is rethrown here after every worker has finished its current task.
  std::exception_ptr first_failure;
  auto fail = [&] {
    std::lock_guard lock(mu);
    if (!first_failure) first_failure = std::current_exception();
    next = todo.size();  // hand out nothing more
  };

  // Called once a record is on disk, in the order records were written.
  auto finish = [&](const TaskRecord& record) {
    std::lock_guard lock(mu);
    ++progress.finished;
    progress.seconds = clock.seconds();
    progress.prompt_tokens += record.prompt_tokens;
    progress.completion_tokens += record.completion_tokens;
    if (!record.error.empty()) {
      ++progress.errored;
    } else {
      progress.score_sum += metrics::score_task(record.outcome()).r;
    }
    if (options.on_progress) options.on_progress(progress);
  };

  int n_workers = options.concurrency > 0 ? options.concurrency
                                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(n_workers), std::max<std::size_t>(1, todo.size())));

  // The recorder: workers hand their finished records over and go on with the next unit, while this one thread
  // appends them to the run directory, all that are waiting at once (one write, one fsync), and then counts
  // them. So a worker runs its next episode while its record goes to disk. Records handed over and not yet on
  // disk are at most kLead per worker (then a worker waits), so progress, and a stop asked from it, lag the
  // episodes by little; every record handed over is on disk before run_units returns.
  constexpr std::size_t kLead = 4;
  const std::size_t max_pending = static_cast<std::size_t>(n_workers) * kLead;
  const std::size_t group = std::max<std::size_t>(1, max_pending / 2);  // ≤ max_pending: workers never wait on it
  std::mutex queue_mu;
  std::condition_variable queue_changed;
  std::vector<RecordLine> waiting;
  std::size_t pending = 0;  // handed over, not yet on disk and counted (or failed)
  bool workers_done = false;
  report.records_exact = true;
  auto record_loop = [&] {
    for (;;) {
      std::vector<RecordLine> batch;
      {
        std::unique_lock lock(queue_mu);
        queue_changed.wait(lock, [&] { return !waiting.empty() || workers_done; });
        // Each fsync has a fixed cost: let a few records gather first (the workers go on meanwhile).
        queue_changed.wait_for(lock, std::chrono::milliseconds(20),
                               [&] { return waiting.size() >= group || workers_done; });
        if (waiting.empty()) return;
        batch.swap(waiting);
      }
      try {
        dir.append_all(batch);
        for (const auto& r : batch) finish(r.record);
        if (options.keep_records) {
          for (auto& r : batch) {
            report.records_exact = report.records_exact && r.exact;
            report.records.push_back(std::move(r.record));
          }
        }
      } catch (...) {
        fail();  // not on disk: not counted; what comes after is still tried, as each worker's append was
      }
      {
        std::lock_guard lock(queue_mu);  // only now: a stop asked from the progress callback comes in time
        pending -= batch.size();
      }
      queue_changed.notify_all();
    }
  };
  auto hand_over = [&](TaskRecord&& record) {
    if (options.on_record) options.on_record(record);
    RecordLine line(std::move(record));  // formatted here, so that the recorder only writes
    {
      std::unique_lock lock(queue_mu);
      queue_changed.wait(lock, [&] { return pending < max_pending; });
      waiting.push_back(std::move(line));
      ++pending;
    }
    queue_changed.notify_all();
  };

  auto work = [&] {
    for (;;) {
      if ((options.cancel && options.cancel->load()) || (options.should_stop && options.should_stop())) {
        stopped = true;
        return;
      }
      std::size_t i = next.fetch_add(1);
      if (i >= todo.size()) return;
      const data::Task& task = *todo[i].task;
      const int trial = todo[i].trial;
      TaskRecord record;
      try {
        auto agent = make_agent(task, trial);
        auto user = make_user ? make_user(task, trial) : nullptr;
        EpisodeResult result = run_episode(env, task, *agent, user.get(), options.episode);
        record = make_record(env.dataset(), task, result, trial);
        if (user) record.user_json = user->record_json();
      } catch (const UsageError&) {
        throw;  // a misconfigured run is not a task failure
      } catch (const RunAbortError&) {
        throw;
      } catch (const Error& e) {
        // Infrastructure failure (e.g. the model service gave up): record it so resume retries the task.
        record = TaskRecord{};
        record.task_key = task_key(task);
        record.trial = trial;
        record.user_id = env.dataset().user(task.user).id;
        record.instruction = task.instruction;
        record.type = task.type;
        record.target_asin = env.dataset().product(task.target_product).parent_asin;
        record.error = e.what();
        if (record.error.empty()) record.error = "unknown error";
      }
      hand_over(std::move(record));
    }
  };

  auto guarded = [&] {
    try {
      work();
    } catch (...) {
      fail();
    }
  };
  {
    std::jthread recorder(record_loop);
    struct StopRecorder {  // however the workers end: the recorder writes what was handed over, then stops
      std::mutex& mu;
      std::condition_variable& changed;
      bool& done;
      ~StopRecorder() {
        {
          std::lock_guard lock(mu);
          done = true;
        }
        changed.notify_all();
      }
    } stop_recorder{queue_mu, queue_changed, workers_done};
    if (n_workers == 1) {
      guarded();
    } else {
      std::vector<std::jthread> workers;
      for (int w = 0; w < n_workers; ++w) workers.emplace_back(guarded);
    }
  }  // ~StopRecorder, then the recorder joins
  if (first_failure) std::rethrow_exception(first_failure);

  progress.seconds = clock.seconds();
  report.cancelled = stopped && progress.finished < progress.total;
  if (options.on_progress) options.on_progress(progress);
  return report;
}

std::string format_progress(const RunProgress& p) {
  std::string s = fmt::format("tasks {}/{}", p.finished, p.total);
  if (p.errored) s += fmt::format(" ({} errored)", p.errored);
  if (p.skipped) s += fmt::format(" [+{} done before]", p.skipped);
  if (p.seconds > 0 && p.finished > 0) {
    double rate = static_cast<double>(p.finished) / p.seconds;
    s += fmt::format(" · {:.1f}/s", rate);
    if (p.finished < p.total) s += " · ETA " + clock_text(static_cast<double>(p.total - p.finished) / rate);
    else s += " · " + clock_text(p.seconds);
  }
  std::size_t scored = p.finished - p.errored;
  if (scored > 0) s += fmt::format(" · R {:.3f}", p.score_sum / static_cast<double>(scored));
  if (p.prompt_tokens + p.completion_tokens > 0)
    s += " · " + count_text(p.prompt_tokens + p.completion_tokens) + " tok";
  return s;
}

}  // namespace pwab::runner
