// `pwab run`, `pwab score`, `pwab compare`, `pwab merge` and `pwab agents`: the benchmark's front end over
// runner/ (episodes, run directories), agents/ (who acts) and metrics/ (the tables).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>

#include "agents/agent.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "cli/llm_setup.h"
#include "cli/run_trials.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/sys.h"
#include "core/version.h"
#include "env/backends.h"
#include "metrics/metrics.h"
#include "rec/recommender.h"
#include "report/runs.h"
#include "runner/results.h"
#include "runner/run.h"
#include "search/search.h"
#include "sim/llm_user.h"
#include "sim/scripted_user.h"

namespace pwab::cli {
namespace {

using Json = nlohmann::json;

// Ctrl-C asks the workers to stop taking tasks; the episodes in flight finish and are recorded. A second
// Ctrl-C kills the process (results stay consistent: each record is one fsynced line).
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);
}

struct RunArgs {
  std::string data, split = "test", track = "single", agent = "heuristic", memory, user_sim, out, tasks = "0:";
  std::string shard = "0/1", embedder = "fasttext", checkpoint, index_dir;
  std::string agent_url;  // --agent-url: where the remote agent answers
  std::vector<std::string> agent_opts;
  int memory_length = 0, concurrency = 0, max_steps = 0, top_k = 10;  // memory_length 0: the agent's default
  uint64_t seed = 0;
  std::optional<int> trials;  // unset: 1, or on --resume the stored run's count
  bool resume = false, quiet = false;
  LlmFlags llm;
};

runner::Track parse_track(const std::string& s) {
  if (s == "single") return runner::Track::kSingleTurn;
  if (s == "multi") return runner::Track::kMultiTurn;
  throw UsageError("--track must be single or multi, got '" + s + "'");
}

std::map<std::string, std::string> parse_agent_opts(const std::vector<std::string>& opts) {
  std::map<std::string, std::string> out;
  for (const auto& o : opts) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--agent-opt wants KEY=VALUE, got '" + o + "'");
    out[o.substr(0, eq)] = o.substr(eq + 1);
  }
  return out;
}

//! Review R. Acc is a cosine of embeddings, comparable only across runs with the same embedder: say which.
std::string embedder_note(const report::Run& run) { return "Review similarity: " + run.embedder + " embedder.\n"; }

std::string render(const metrics::Summary& s, const report::Run& run, const std::string& format) {
  if (format == "table") return metrics::format_table(s, run.title, run.track) + embedder_note(run);
  if (format == "md") return metrics::format_markdown(s, run.title, run.track) + "\n" + embedder_note(run);
  if (format == "csv") return metrics::format_csv(s);
  if (format == "json") return metrics::format_json(s);
  throw UsageError("--format must be table, md, csv or json, got '" + format + "'");
}

//! Writes summary.{md,csv,json} beside the records (derived files: `pwab score` rebuilds them).
//! Returns the summary's table.
std::string write_summaries(const std::filesystem::path& dir, const metrics::BootstrapOptions& bootstrap) {
  auto run = report::read_run(dir);
  auto summary = metrics::summarize(run.outcomes, bootstrap);
  write_file_atomic(dir / "summary.md", render(summary, run, "md"));
  write_file_atomic(dir / "summary.csv", metrics::format_csv(summary));
  write_file_atomic(dir / "summary.json", metrics::format_json(summary));
  return render(summary, run, "table");
}

//! Progress on stderr, redrawn in place at most ten times a second, when stderr is a terminal.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {}
  void operator()(const runner::RunProgress& p, const std::string& cost) {
    if (!enabled_) return;
    bool last = p.finished == p.total;
    if (!last && clock_.seconds() - last_draw_ < 0.1) return;
    last_draw_ = clock_.seconds();
    std::cerr << "\r\033[K" << runner::format_progress(p) << (cost.empty() ? "" : " · " + cost) << std::flush;
  }
  void end() {
    if (enabled_) std::cerr << "\n";
  }

 private:
  bool enabled_;
  Stopwatch clock_;
  double last_draw_ = -1;
};

void run_benchmark(const RunArgs& a) {
  runner::Track track = parse_track(a.track);
  auto [shard_index, shard_count] = runner::parse_shard(a.shard);
  runner::TaskRange range = runner::TaskRange::parse(a.tasks);
  std::string user_sim = a.user_sim.empty() ? (track == runner::Track::kMultiTurn ? "scripted" : "none") : a.user_sim;
  if (user_sim != "none" && user_sim != "scripted" && user_sim != "llm")
    throw UsageError("--user-sim must be none, scripted or llm, got '" + user_sim + "'");
  if (track == runner::Track::kSingleTurn && user_sim != "none")
    throw UsageError("the single-turn track has no user simulator (drop --user-sim or use --track multi)");

  // Unknown agent names fail before anything is loaded.
  auto known = agents::list_agents();
  if (std::none_of(known.begin(), known.end(), [&](const agents::AgentInfo& i) { return i.name == a.agent; }))
    throw UsageError("unknown agent '" + a.agent + "' (`pwab agents` lists them)");

  Stopwatch setup;
  data::Dataset ds = load_data(a.data);
  auto tasks = runner::select_tasks(ds, a.split, range, shard_index, shard_count);

  // The embedder shared by rewards and memory retrieval.
  LlmSetup models = make_llm_setup(a.llm, /*need_agent=*/true, /*need_user=*/user_sim == "llm");
  llm::Ledger& ledger = *models.ledger;
  auto embedder = a.embedder.rfind("openai:", 0) == 0 ? make_openai_embedder(a.llm, a.embedder.substr(7), &ledger)
                                                      : make_run_embedder(a.embedder, ds, a.data);

  agents::AgentOptions agent_options;
  agent_options.memory = a.memory;
  if (a.memory_length > 0) agent_options.memory_length = a.memory_length;
  agent_options.extra = parse_agent_opts(a.agent_opts);
  if (!a.agent_url.empty()) {
    if (a.agent != "remote") throw UsageError("--agent-url is for --agent remote");
    agent_options.extra["url"] = a.agent_url;
  }
  agents::AgentContext context;
  context.ds = &ds;
  context.embedder = embedder.get();
  context.cache_dir = std::filesystem::path(a.data) / ".pwab-agents";
  context.seed = a.seed;
  context.run_dir = a.out;
  context.max_steps = a.max_steps > 0 ? a.max_steps : 10;
  context.log = [](const std::string& line) { std::cerr << "pwab: " << line << "\n"; };
  if (models.agent_model) {
    context.llm.model = models.agent_model_name;
    context.llm.temperature = a.llm.temperature.value_or(0.0);
    context.llm.seed = a.llm.llm_seed;
    llm::ChatModel& agent_model = *models.agent_model;
    context.llm.open = [&agent_model, &ledger](const std::string& task_key, llm::Role role) {
      return std::make_unique<llm::MeteredChatModel>(agent_model, ledger, role, task_key);
    };
  }
  const int trials = trials_to_run(a.trials, a.out, a.resume);
  TrialFactories factories(a.agent, agent_options, context, trials);
  agents::AgentFactory* factory = &factories.first();

  // Services: BM25 index and SASRec, after the agent, so that its usage errors come before a first-run training.
  EnvServices services = open_env_services(ds, a.data, a.index_dir, a.checkpoint, !a.quiet);
  env::IndexSearch search_backend(*services.index);
  env::SasrecRecommend recommend_backend(*services.recommender);
  env::Environment environment(ds, &search_backend, &recommend_backend, *embedder, {a.top_k});

  int max_steps = a.max_steps > 0 ? a.max_steps
                                  : runner::loop_bound(track == runner::Track::kMultiTurn ? 10 : -1, factory->react_style());

  // Everything that changes what the run computes goes into the manifest; --resume refuses any difference.
  Json config = {{"split", a.split},
                 {"track", a.track},
                 {"tasks", range.to_string()},
                 {"agent", factory->name()},
                 {"agent_config", Json::parse(factory->config_json())},
                 {"user_sim", user_sim},
                 {runner::kTrialsKey, trials},
                 {"max_steps", max_steps},
                 {"top_k", a.top_k},
                 {"embedder", embedder->name()},
                 {"search_index", services.index->fingerprint()},
                 {"recommender", to_hex(hash_file(services.checkpoint))}};
  if (auto llm_config = Json::parse(models.config_json); !llm_config.empty()) config["llm"] = llm_config;
  runner::RunManifest manifest;
  manifest.config_json = config.dump();
  manifest.seed = a.seed;
  manifest.dataset_fingerprint = runner::dataset_fingerprint(a.data);
  manifest.pwab_version = kVersion;
  manifest.shard_index = shard_index;
  manifest.shard_count = shard_count;
  auto dir = runner::RunDirectory::open(a.out, manifest, a.resume);
  if (dir.n_truncated() && !a.quiet)
    std::cerr << "pwab: dropped an unfinished last line left by an interrupted run\n";

  const uint64_t seed = a.seed;
  runner::UserMaker make_user;
  if (user_sim == "scripted")
    make_user = [&ds, seed](const data::Task& t, int trial) {
      return std::make_unique<sim::ScriptedUser>(ds, t, runner::trial_seed(seed, trial));
    };
  if (user_sim == "llm") {
    llm::ChatModel& user_model = *models.user_model;
    std::string name = models.user_model_name;
    make_user = [&ds, &user_model, &ledger, name](const data::Task& t, int trial) -> std::unique_ptr<env::UserChannel> {
      auto metered = std::make_unique<llm::MeteredChatModel>(user_model, ledger, llm::Role::kUser,
                                                             runner::RecordId{runner::task_key(t), trial}.to_string());
      sim::LlmUserOptions user_options;
      user_options.sample = trial;  // each trial's dialogue is its own cache entry
      return std::make_unique<sim::LlmUser>(ds, t, std::move(metered), name, user_options);
    };
  }
  runner::AgentMaker make_agent = factories.maker();

  // Spending of an earlier session of this run counts toward the budget.
  if (a.resume)
    for (const auto& r : runner::read_records(a.out))
      if (!r.usage_json.empty()) {
        auto u = Json::parse(r.usage_json, nullptr, false);
        for (auto role : {llm::Role::kAgent, llm::Role::kUser, llm::Role::kOther})
          if (u.is_object() && u.contains(std::string(llm::to_string(role))))
            ledger.add_prior(role, llm::Usage::from_json(u[std::string(llm::to_string(role))].dump()));
      }
  const bool uses_llm = models.agent_model || models.user_model;
  std::atomic<bool> over_budget{false};

  // The units this invocation runs, in hand-out order (what run_tasks will skip as done is left out).
  factories.prepare(runner::pending_units(tasks, trials, dir.done()));
  ProgressPrinter printer(!a.quiet);
  runner::RunOptions options;
  options.episode = {track, max_steps};
  options.trials = trials;
  options.concurrency = a.concurrency;
  options.cancel = &g_interrupted;
  options.on_progress = [&](const runner::RunProgress& p) {
    if (ledger.budget_reached() && !over_budget.exchange(true)) g_interrupted = true;
    printer(p, uses_llm ? ledger.run_total().cost_text() : std::string());
  };
  if (uses_llm)
    options.on_record = [&ledger](runner::TaskRecord& r) { r.usage_json = ledger.to_json(r.id().to_string()); };
  if (!a.quiet)
    std::cerr << fmt::format("pwab: {} {} tasks{} of {} ({}-turn, agent {}, user {}); setup {:.1f} s\n", tasks.size(),
                             a.split, trials > 1 ? fmt::format(" x {} trials", trials) : "", a.data, a.track,
                             factory->name(), user_sim, setup.seconds());
  g_interrupted = false;
  auto previous = std::signal(SIGINT, on_sigint);
  runner::RunReport report;
  try {
    report = runner::run_tasks(environment, tasks, dir, make_agent, make_user, options);
  } catch (...) {
    std::signal(SIGINT, previous);
    printer.end();
    throw;
  }
  std::signal(SIGINT, previous);
  printer.end();

  const auto& p = report.progress;
  if (!a.quiet)
    std::cerr << fmt::format("pwab: ran {} tasks in {:.1f} s ({:.1f} tasks/s), {} errored, {} already done; {}\n",
                             p.finished, p.seconds, p.seconds > 0 ? static_cast<double>(p.finished) / p.seconds : 0.0,
                             p.errored, p.skipped, (std::filesystem::path(a.out) / runner::kResultsFile).string());
  if (uses_llm && !a.quiet)
    std::cerr << fmt::format("pwab: model usage this session: {}\n", ledger.to_json());
  if (report.cancelled && over_budget)
    throw Error(fmt::format("budget of ${:.2f} reached after {} of {} tasks ({}); raise --budget-usd and add --resume",
                            *a.llm.budget_usd, p.finished, p.total, ledger.run_total().cost_text()));
  if (report.cancelled)
    throw Error(fmt::format("interrupted after {} of {} tasks; continue with the same command plus --resume",
                            p.finished, p.total));
  std::cout << write_summaries(a.out, {});
  if (p.errored)
    throw Error(fmt::format("{} tasks errored (see `error` in results.jsonl); rerun with --resume to retry them",
                            p.errored));
}

}  // namespace

void add_run_commands(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "Run an agent on a split's tasks and score it (resumable)");
  run->add_option("--data", a->data, "Dataset directory")->required();
  run->add_option("--split", a->split, "Task split: test or train")->capture_default_str();
  run->add_option("--track", a->track, "single or multi (turn)")->capture_default_str();
  run->add_option("--agent", a->agent, "Agent name (see `pwab agents`)")->capture_default_str();
  run->add_option("--memory", a->memory, "Memory strategy of the agent (default: the agent's own)");
  run->add_option("--memory-length", a->memory_length, "Behaviours in memory (default: the agent's, 10; puma 100)")
      ->check(CLI::Range(1, 100000));
  run->add_option("--agent-opt", a->agent_opts, "Agent option KEY=VALUE (repeatable)");
  run->add_option("--agent-url", a->agent_url, "URL of the external agent (--agent remote, docs/agents/remote.md)");
  run->add_option("--user-sim", a->user_sim, "none, scripted or llm (default: scripted in multi-turn, none in single)");
  run->add_option("--max-steps", a->max_steps,
                  "Agent calls per task (default: 10 multi-turn; single-turn 10, or 3 for ReAct-style agents)")
      ->check(CLI::Range(1, 1000));
  run->add_option("--concurrency", a->concurrency, "Episodes in parallel (0 = one per core)")->check(CLI::Range(0, 4096));
  run->add_option("--out", a->out, "Run directory (manifest.json, results.jsonl, summary.*)")->required();
  run->add_option("--seed", a->seed, "Seed of the run (user simulator, agents)")->capture_default_str();
  run->add_option("--tasks", a->tasks, "Task positions A:B within the split (B exclusive)")->capture_default_str();
  run->add_option("--shard", a->shard, "Run shard K of N (tasks with position % N == K)")->capture_default_str();
  run->add_flag("--resume", a->resume, "Continue RUN_DIR: skip finished tasks, retry errored ones");
  run->add_option("--trials", a->trials,
                  "Runs per task, for pass^k and flip rates (default 1; on --resume the run's, which may be raised)")
      ->check(CLI::Range(1, 1000));
  run->add_option("--embedder", a->embedder,
                  "Text embedder: fasttext (trained on DATA, cached), minilm:MODEL_DIR, openai:MODEL or hashing")
      ->capture_default_str();
  run->add_option("--checkpoint", a->checkpoint, "SASRec checkpoint (default: DATA/.pwab-rec/sasrec.pwab)");
  run->add_option("--index-dir", a->index_dir, "Search index root (default: DATA/.pwab-index)");
  run->add_option("--top-k", a->top_k, "Results per search/recommendation call")->capture_default_str()->check(CLI::Range(1, 1000));
  run->add_flag("--quiet", a->quiet, "No progress or status lines on stderr");
  add_llm_flags(*run, a->llm);
  run->callback([a] { run_benchmark(*a); });

  struct ScoreArgs {
    std::string dir, format = "table", pass_threshold;
    int resamples = 1000;
    double confidence = 0.95;
    uint64_t seed = 1;
  };
  auto s = std::make_shared<ScoreArgs>();
  auto* score = app.add_subcommand("score", "Recompute a run's summary from its records alone");
  score->add_option("run_dir", s->dir, "Run directory")->required();
  score->add_option("--format", s->format, "table, md, csv or json")->capture_default_str();
  score->add_option("--bootstrap", s->resamples, "Bootstrap resamples (0 = no intervals)")->capture_default_str();
  score->add_option("--confidence", s->confidence, "Interval level")->capture_default_str()->check(CLI::Range(0.5, 0.999));
  score->add_option("--seed", s->seed, "Bootstrap seed")->capture_default_str();
  score->add_option("--pass-threshold", s->pass_threshold,
                    "With trials: a trial passes at F = 1, R > 0 and R >= T; T or TYPE=T,... (default " +
                        metrics::PassRule{}.to_string() + ")");
  score->callback([s] {
    auto run = report::read_run(s->dir);
    auto rule = s->pass_threshold.empty() ? metrics::PassRule{} : metrics::PassRule::parse(s->pass_threshold);
    auto summary = metrics::summarize(run.outcomes, {s->resamples, s->confidence, s->seed}, rule);
    std::cout << render(summary, run, s->format);
    if (run.n_errored)
      std::cerr << fmt::format("pwab: {} errored tasks are not scored; `pwab run ... --resume` retries them\n",
                               run.n_errored);
  });

  struct CompareArgs {
    std::string a, b;
    int resamples = 1000;
    uint64_t seed = 1;
  };
  auto c = std::make_shared<CompareArgs>();
  auto* compare = app.add_subcommand("compare", "Paired per-task difference B − A of two runs, with intervals");
  compare->add_option("run_a", c->a, "Run directory A")->required();
  compare->add_option("run_b", c->b, "Run directory B")->required();
  compare->add_option("--bootstrap", c->resamples, "Bootstrap resamples")->capture_default_str();
  compare->add_option("--seed", c->seed, "Bootstrap seed")->capture_default_str();
  compare->callback([c] {
    auto ra = report::read_run(c->a), rb = report::read_run(c->b);
    if (ra.manifest.dataset_fingerprint != rb.manifest.dataset_fingerprint)
      std::cerr << "pwab: warning: the runs used different datasets; only tasks with the same key are paired\n";
    if (ra.embedder != rb.embedder)
      std::cerr << "pwab: warning: the runs used different embedders, so review R. Acc is not comparable\n";
    auto cmp = metrics::compare(ra.outcomes, rb.outcomes, {c->resamples, 0.95, c->seed});
    std::cout << metrics::format_comparison(cmp, ra.title + " [A]", rb.title + " [B]");
  });

  struct MergeArgs {
    std::string out;
    std::vector<std::string> shards;
  };
  auto m = std::make_shared<MergeArgs>();
  auto* merge = app.add_subcommand("merge", "Combine the shard run directories of one run into OUT");
  merge->add_option("--out", m->out, "Merged run directory")->required();
  merge->add_option("shards", m->shards, "Shard run directories (all N of them)")->required();
  merge->callback([m] {
    std::vector<std::filesystem::path> dirs(m->shards.begin(), m->shards.end());
    runner::merge_runs(dirs, m->out);
    std::cout << write_summaries(m->out, {});
  });

  auto* list = app.add_subcommand("agents", "List the agents and the paper row each reproduces");
  list->callback([] {
    std::string out;
    for (const auto& info : agents::list_agents())
      out += fmt::format("{:<14} {:<28} {}\n", info.name, info.paper_row, info.description);
    std::cout << out;
  });
}

}  // namespace pwab::cli
