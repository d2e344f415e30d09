// Runner benchmarks. runner/overhead: what the run loop itself costs per episode — session, environment steps,
// the scripted user, the JSONL record and its fsync — with an in-process agent that answers instantly, so the
// figure is the ceiling on episodes per hour that pwab adds to any agent. run/heuristic_single_full: the whole
// `pwab run` command on the full synthetic test split (2,174 tasks) with the offline heuristic agent.
#include <fmt/format.h>

#include <memory>

#include "bench.h"
#include "core/sys.h"
#include "data/loader.h"
#include "data/synth.h"
#include "embed/embedder.h"
#include "env/tools.h"
#include "runner/results.h"
#include "runner/run.h"
#include "sim/scripted_user.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

//! Multi-turn: asks the user once, writes a fixed review (or a fixed search with no search backend: an Error
//! observation), then stops — three steps, no thinking time.
class InstantAgent final : public runner::Agent {
 public:
  void begin(const data::Task& task, const std::string&, data::Track) override { type_ = task.type; }
  runner::AgentStep next(const std::string&) override {
    switch (++calls_) {
      case 1: return {{std::string(env::kRespond), R"({"content": "What matters most to you here?"})"}, 0, 0};
      case 2:
        if (type_ == data::TaskType::kReview)
          return {{std::string(env::kAddReview), R"({"review": "Works as described, good value for the price."})"}};
        return {{std::string(env::kSearch), R"({"query": "good value"})"}};
      default: return {{std::string(env::kStop), "{}"}};
    }
  }

 private:
  data::TaskType type_ = data::TaskType::kSearch;
  int calls_ = 0;
};

struct OverheadState {
  std::unique_ptr<data::Dataset> ds;
  std::unique_ptr<embed::HashingEmbedder> embedder;
  std::unique_ptr<env::Environment> environment;
  std::vector<const data::Task*> tasks;  // both splits, repeated to a few thousand episodes
  std::size_t last_records = 0;
  fs::path last_dir;
};
OverheadState overhead;

void overhead_setup(const Context&) {
  if (overhead.ds) return;
  overhead.ds = std::make_unique<data::Dataset>(data::synthesize({data::SynthScale::kMini, 1}));
  overhead.embedder = std::make_unique<embed::HashingEmbedder>();
  overhead.environment = std::make_unique<env::Environment>(*overhead.ds, nullptr, nullptr, *overhead.embedder);
  for (auto split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : overhead.ds->tasks(split)) overhead.tasks.push_back(&t);
}

double overhead_run(const Context& ctx, std::vector<Extra>& extras) {
  fs::path dir = ctx.out_dir / "runner" / "overhead";
  fs::remove_all(dir);
  runner::RunManifest m;
  m.config_json = R"({"agent":"instant"})";
  m.dataset_fingerprint = "bench";
  m.pwab_version = "bench";
  auto run_dir = runner::RunDirectory::open(dir, m, false);
  runner::RunOptions options;
  options.episode = {data::Track::kMultiTurn, 10};
  options.concurrency = 2;
  const auto& ds = *overhead.ds;
  runner::UserMaker user = [&ds](const data::Task& t, int) { return std::make_unique<sim::ScriptedUser>(ds, t, 1); };
  runner::AgentMaker agent = [](const data::Task&, int) { return std::make_unique<InstantAgent>(); };
  Stopwatch clock;
  auto report = runner::run_tasks(*overhead.environment, overhead.tasks, run_dir, agent, user, options);
  double seconds = clock.seconds();
  overhead.last_records = report.progress.finished;
  overhead.last_dir = dir;
  extras.push_back({"episodes", static_cast<double>(report.progress.finished), ""});
  extras.push_back({"episodes_per_hour", static_cast<double>(report.progress.finished) / seconds * 3600.0, "/h"});
  extras.push_back({"us_per_episode", seconds / static_cast<double>(report.progress.finished) * 1e6, "us"});
  return seconds;
}

std::string overhead_check(const Context&) {
  auto records = runner::read_records(overhead.last_dir);
  if (records.size() != overhead.tasks.size())
    return fmt::format("{} records for {} tasks", records.size(), overhead.tasks.size());
  for (const auto& r : records)
    if (r.steps != 3 || r.ending != "stop") return "episode " + r.task_key + " did not run 3 steps to stop";
  return {};
}

const int kOverhead = add({
    "runner/overhead",
    "run-loop cost per episode: mini dataset (all tasks), 3-step multi-turn episodes with the scripted user, an "
    "instant agent, JSONL + fsync per record, 2 workers (target >= 100k episodes/h)",
    5,
    overhead_setup,
    overhead_run,
    overhead_check,
});

}  // namespace

namespace {

// --- the whole command on the full synthetic test split -------------------------------------------------

// build/release/bench/pwab-bench → build/release/pwab
fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path full_run_dir(const Context& ctx) { return ctx.out_dir / "runner" / "heuristic-single"; }

// Untimed: the index, a (briefly trained) recommender checkpoint and the fastText caches, so the timed runs
// measure the run itself. Cold-start costs are reported by the setup lines and in docs/performance.md.
void full_setup(const Context& ctx) {
  fs::path data = full_dataset_dir(ctx);
  std::string pwab = pwab_binary(ctx).string();
  if (!fs::exists(data / ".pwab-rec" / "sasrec.pwab"))
    time_command(pwab + " rec train " + data.string() + " --epochs 1 --eval-every 0 > /dev/null 2>&1");
  fs::remove_all(full_run_dir(ctx));
  double s = time_command(pwab + " run --quiet --data " + data.string() + " --tasks 0:1 --out " +
                          full_run_dir(ctx).string() + " > /dev/null");
  fmt::print(stderr, "[bench] run/heuristic_single_full: warm-up run (index + fastText caches) {:.1f} s\n", s);
}

double full_run(const Context& ctx, std::vector<Extra>& extras) {
  fs::remove_all(full_run_dir(ctx));
  double s = time_command(pwab_binary(ctx).string() + " run --quiet --data " + full_dataset_dir(ctx).string() +
                          " --track single --agent heuristic --out " + full_run_dir(ctx).string() + " > /dev/null");
  extras.push_back({"tasks_per_s", 2174.0 / s, "/s"});
  return s;
}

std::string full_check(const Context& ctx) {
  // The whole command: the summaries, with the diagnosis computed on the dataset, are part of what is timed.
  for (const char* f : {"summary.md", "summary.csv", "summary.json"})
    if (!fs::exists(full_run_dir(ctx) / f)) return std::string("no ") + f + " written";
  if (read_file(full_run_dir(ctx) / "summary.json").find("\"diagnosis\"") == std::string::npos)
    return "summary.json has no diagnosis";
  auto records = runner::read_records(full_run_dir(ctx));
  if (records.size() != 2174) return fmt::format("{} records, expected 2174", records.size());
  double r = 0;
  for (const auto& rec : records) {
    if (!rec.error.empty()) return "task " + rec.task_key + " errored: " + rec.error;
    r += metrics::score_task(rec.outcome()).r;
  }
  if (r <= 0) return "R. Acc is 0";
  return {};
}

const int kFull = add({
    "run/heuristic_single_full",
    "`pwab run` end to end as a user types it, process start to exit (load, index open, SASRec load, fastText "
    "caches, 2,174 episodes, fsynced records, summaries with the diagnosis) on the full synthetic test split, "
    "single-turn, heuristic agent (target < 1.5 s, issue 31)",
    3,
    full_setup,
    full_run,
    full_check,
});

}  // namespace
