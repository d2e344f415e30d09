// `pwab run`, `pwab score`, `pwab compare`, `pwab merge` and `pwab agents`: flags bound to assemble::RunConfig and
// run by assemble::run_benchmark (assemble/benchmark.h); the reading commands print report/ and metrics/ tables.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <tuple>

#include "agents/agent.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "cli/llm_setup.h"
#include "core/error.h"
#include "core/sys.h"
#include "metrics/metrics.h"
#include "report/diagnosis.h"
#include "runner/read_run.h"
#include "report/summaries.h"
#include "assemble/benchmark.h"
#include "assemble/rescore.h"
#include "runner/results.h"
#include "runner/run.h"

namespace pwab::cli {
namespace {

// Ctrl-C asks the workers to stop taking tasks; the episodes in flight finish and are recorded. A second
// Ctrl-C kills the process (results stay consistent: each record is one fsynced line).
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);
}

//! The flags of `pwab run` as typed; to_config() turns them into the runner's RunConfig.
struct RunArgs {
  assemble::RunConfig config;
  std::string data, out, checkpoint, index_dir, track = "single", tasks = "0:", shard = "0/1", agent_url, agent_token;
  std::vector<std::string> agent_opts;
  int memory_length = 0;  // 0: the agent's default
  bool quiet = false;
  LlmFlags llm;
};

data::Track parse_track(const std::string& s) {
  if (auto track = data::parse_track(s)) return *track;
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

assemble::RunConfig to_config(const RunArgs& a) {
  assemble::RunConfig c = a.config;
  c.data = a.data;
  c.out = a.out;
  c.checkpoint = a.checkpoint;
  c.index_dir = a.index_dir;
  c.track = parse_track(a.track);
  std::tie(c.shard_index, c.shard_count) = runner::parse_shard(a.shard);
  c.tasks = runner::TaskRange::parse(a.tasks);
  if (a.memory_length > 0) c.agent_options.memory_length = a.memory_length;
  c.agent_options.extra = parse_agent_opts(a.agent_opts);
  if (!a.agent_url.empty()) {
    if (c.agent != "remote") throw UsageError("--agent-url is for --agent remote");
    c.agent_options.extra["url"] = a.agent_url;
  }
  // The remote agent's bearer token: --agent-token, else PWAB_AGENT_TOKEN (the environment keeps it out of `ps`).
  std::string token = a.agent_token;
  if (const char* env = std::getenv("PWAB_AGENT_TOKEN"); token.empty() && env && c.agent == "remote") token = env;
  if (!token.empty()) {
    if (c.agent != "remote") throw UsageError("--agent-token is for --agent remote");
    c.agent_options.extra["token"] = token;
  }
  return c;
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

void run_command(const RunArgs& a) {
  assemble::RunConfig config = to_config(a);
  const std::string user_sim = assemble::effective_user_sim(config);
  assemble::RunModels models = make_llm_setup(a.llm, /*need_agent=*/true, /*need_user=*/user_sim == "llm");
  if (config.embedder.rfind("openai:", 0) == 0)
    models.embedder = make_openai_embedder(a.llm, config.embedder.substr(7), models.ledger.get());

  // A person answering at the terminal (--user-sim human) shares stderr with the progress line: keep it quiet.
  ProgressPrinter printer(!a.quiet && user_sim != "human");
  assemble::RunHooks hooks;
  if (!a.quiet) hooks.status = stderr_status();
  hooks.progress = [&printer](const runner::RunProgress& p, const std::string& cost) { printer(p, cost); };
  hooks.interrupt = &g_interrupted;
  void (*previous)(int) = SIG_DFL;
  hooks.units_start = [&previous] {
    g_interrupted = false;
    previous = std::signal(SIGINT, on_sigint);
  };
  hooks.units_end = [&previous, &printer] {
    std::signal(SIGINT, previous);
    printer.end();
  };
  assemble::BenchmarkResult r = assemble::run_benchmark(config, models, hooks);
  // The summary files beside the records, with the diagnosis on the run's dataset (`pwab score` rebuilds them).
  std::string summary_table;
  if (r.finished)
    summary_table = r.records ? report::write_summaries(runner::make_run(config.out, runner::read_manifest(config.out),
                                                                         std::move(*r.records)),
                                                        {}, r.dataset.get())
                              : report::write_summaries(config.out, {}, r.dataset.get());

  const auto& p = r.progress;
  if (!a.quiet) {
    std::cerr << fmt::format("pwab: ran {} tasks in {:.1f} s ({:.1f} tasks/s), {} errored, {} already done; {}\n",
                             p.finished, p.seconds, p.seconds > 0 ? static_cast<double>(p.finished) / p.seconds : 0.0,
                             p.errored, p.skipped, r.results_file.string());
    if (!r.usage_json.empty()) std::cerr << "pwab: model usage this session: " << r.usage_json << "\n";
  }
  if (r.over_budget)
    throw Error(fmt::format("budget of ${:.2f} reached after {} of {} tasks ({}); raise --budget-usd and add --resume",
                            models.budget_usd.value_or(0.0), p.finished, p.total, r.cost_text));
  if (r.interrupted)
    throw Error(fmt::format("interrupted after {} of {} tasks; continue with the same command plus --resume",
                            p.finished, p.total));
  std::cout << summary_table;
  if (p.errored)
    throw Error(fmt::format("{} tasks errored (see `error` in results.jsonl); rerun with --resume to retry them",
                            p.errored));
}

}  // namespace

void add_run_commands(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "Run an agent on a split's tasks and score it (resumable)");
  add_shared_option(*run, "--data", a->data)->required();
  add_shared_option(*run, "--split", a->config.split)->capture_default_str();
  run->add_option("--track", a->track, "single or multi (turn)")->capture_default_str();
  run->add_option("--agent", a->config.agent, "Agent name (see `pwab agents`)")->capture_default_str();
  run->add_option("--memory", a->config.agent_options.memory, "Memory strategy of the agent (default: the agent's own)");
  run->add_option("--memory-length", a->memory_length, "Behaviours in memory (default: the agent's, 10; puma 100)")
      ->check(CLI::Range(1, 100000));
  run->add_option("--agent-opt", a->agent_opts, "Agent option KEY=VALUE (repeatable)");
  run->add_option("--agent-url", a->agent_url, "URL of the external agent (--agent remote, docs/agents/remote.md)");
  run->add_option("--agent-token", a->agent_token,
                  "Bearer token for the external agent (--agent remote; default: PWAB_AGENT_TOKEN)");
  run->add_option("--user-sim", a->config.user_sim,
                  "none, scripted, llm or human (a person at this terminal; default: scripted in multi-turn, none "
                  "in single)");
  add_shared_option(*run, "--user-guard", a->config.user_guard)
      ->capture_default_str();
  run->add_option("--max-steps", a->config.max_steps,
                  "Agent calls per task (default: 10 multi-turn; single-turn 10, or 3 for ReAct-style agents)")
      ->check(CLI::Range(1, 1000));
  run->add_option("--concurrency", a->config.concurrency, "Episodes in parallel (0 = one per core)")->check(CLI::Range(0, 4096));
  add_shared_option(*run, "--out", a->out, "run")->required();
  add_shared_option(*run, "--seed", a->config.seed, "run")->capture_default_str();
  run->add_option("--tasks", a->tasks, "Task positions A:B within the split (B exclusive)")->capture_default_str();
  run->add_option("--shard", a->shard, "Run shard K of N (tasks with position % N == K)")->capture_default_str();
  add_shared_flag(*run, "--resume", a->config.resume, "run");
  run->add_option("--trials", a->config.trials,
                  "Runs per task, for pass^k and flip rates (default 1; on --resume the run's, which may be raised)")
      ->check(CLI::Range(1, 1000));
  add_shared_option(*run, "--embedder", a->config.embedder)
      ->capture_default_str();
  add_shared_option(*run, "--checkpoint", a->checkpoint);
  add_shared_option(*run, "--index-dir", a->index_dir);
  add_shared_option(*run, "--top-k", a->config.top_k, "results")->capture_default_str()->check(CLI::Range(1, 1000));
  add_shared_flag(*run, "--quiet", a->quiet);
  add_llm_flags(*run, a->llm);
  run->callback([a] { run_command(*a); });

  struct ScoreArgs {
    std::string dir, format = "table", pass_threshold, data, records_out;
    int resamples = 1000;
    double confidence = 0.95;
    uint64_t seed = 1;
  };
  auto s = std::make_shared<ScoreArgs>();
  auto* score = app.add_subcommand("score", "Recompute a run's summary from its records alone; with --data, also the "
                                            "diagnosis (failure categories, user leaks, personalization)");
  score->add_option("run_dir", s->dir, "Run directory")->required();
  add_shared_option(*score, "--format", s->format, "summary")->capture_default_str();
  add_shared_option(*score, "--bootstrap", s->resamples)->capture_default_str();
  add_shared_option(*score, "--confidence", s->confidence)->capture_default_str()->check(CLI::Range(0.5, 0.999));
  add_shared_option(*score, "--seed", s->seed, "bootstrap")->capture_default_str();
  score->add_option("--pass-threshold", s->pass_threshold,
                    "A trial passes at F = 1, R > 0 and R >= T (pass^k, and 'solved' in the diagnosis); T or "
                    "TYPE=T,... (default " + metrics::PassRule{}.to_string() + ")");
  add_shared_option(*score, "--data", s->data);
  score->add_option("--records-out", s->records_out, "With --data: write each record's diagnosis here (JSONL)");
  score->callback([s] {
    auto run = runner::read_run(s->dir);
    auto rule = s->pass_threshold.empty() ? metrics::PassRule{} : metrics::PassRule::parse(s->pass_threshold);
    const metrics::BootstrapOptions bootstrap{s->resamples, s->confidence, s->seed};
    auto summary = metrics::summarize(run.outcomes, bootstrap, rule);
    std::optional<report::Diagnosis> diagnosis;
    if (!s->data.empty()) {
      diagnosis = diagnose_run(run, load_data(s->data), s->data, rule, bootstrap);
      if (!s->records_out.empty()) write_file_atomic(s->records_out, report::diagnosis_records_jsonl(*diagnosis));
    } else if (!s->records_out.empty()) {
      throw UsageError("--records-out needs --data (the diagnosis reads the dataset)");
    }
    std::cout << report::render_summary(summary, run, s->format, diagnosis ? &*diagnosis : nullptr);
    if (run.n_errored)
      std::cerr << fmt::format("pwab: {} errored tasks are not scored; `pwab run ... --resume` retries them\n",
                               run.n_errored);
  });

  struct CompareArgs {
    std::string a, b, data;
    int resamples = 1000;
    uint64_t seed = 1;
  };
  auto c = std::make_shared<CompareArgs>();
  auto* compare = app.add_subcommand("compare", "Paired per-task difference B − A of two runs, with intervals; with --data, "
                                                "also how tasks moved between failure categories and the "
                                                "personalization difference");
  compare->add_option("run_a", c->a, "Run directory A")->required();
  compare->add_option("run_b", c->b, "Run directory B")->required();
  add_shared_option(*compare, "--bootstrap", c->resamples)->capture_default_str();
  add_shared_option(*compare, "--seed", c->seed, "bootstrap")->capture_default_str();
  add_shared_option(*compare, "--data", c->data);
  compare->callback([c] {
    auto ra = runner::read_run(c->a), rb = runner::read_run(c->b);
    if (ra.manifest.dataset_fingerprint != rb.manifest.dataset_fingerprint)
      std::cerr << "pwab: warning: the runs used different datasets; only tasks with the same key are paired\n";
    if (ra.embedder != rb.embedder)
      std::cerr << "pwab: warning: the runs used different embedders, so review R. Acc is not comparable\n";
    const metrics::BootstrapOptions bootstrap{c->resamples, 0.95, c->seed};
    auto cmp = metrics::compare(ra.outcomes, rb.outcomes, bootstrap);
    std::cout << metrics::format_comparison(cmp, ra.title + " [A]", rb.title + " [B]");
    if (!c->data.empty()) {
      const data::Dataset ds = load_data(c->data);
      auto da = diagnose_run(ra, ds, c->data, {}, bootstrap);
      auto db = diagnose_run(rb, ds, c->data, {}, bootstrap);
      std::cout << report::format_diagnosis_comparison(report::compare_diagnoses(da, db, bootstrap), ra.title + " [A]",
                                                       rb.title + " [B]");
    }
  });

  struct MergeArgs {
    std::string out;
    std::vector<std::string> shards;
  };
  auto m = std::make_shared<MergeArgs>();
  auto* merge = app.add_subcommand("merge", "Combine the shard run directories of one run into OUT");
  add_shared_option(*merge, "--out", m->out, "run")->required();
  merge->add_option("shards", m->shards, "Shard run directories (all N of them)")->required();
  merge->callback([m] {
    std::vector<std::filesystem::path> dirs(m->shards.begin(), m->shards.end());
    runner::merge_runs(dirs, m->out);
    std::cout << report::write_summaries(m->out);
  });

  struct RescoreArgs {
    std::string run, out;
    assemble::RescoreOptions options;
    std::string data;
  };
  auto rs = std::make_shared<RescoreArgs>();
  auto* rescore = app.add_subcommand("rescore", "Re-grade a run from its stored trajectories (no agent is called): "
                                                "the actions replayed against DATA's tools and scorers (e.g. a fixed version of "
                                                "the dataset), into a new run directory");
  rescore->add_option("run", rs->run, "The run directory to re-grade")->required();
  add_shared_option(*rescore, "--data", rs->data)->required();
  add_shared_option(*rescore, "--out", rs->out, "run")->required();
  add_shared_option(*rescore, "--embedder", rs->options.embedder)->default_str("the run's own");
  add_shared_option(*rescore, "--index-dir", rs->options.index_dir);
  add_shared_option(*rescore, "--checkpoint", rs->options.checkpoint);
  add_shared_option(*rescore, "--top-k", rs->options.top_k, "results")->default_str("the run's own");
  rescore->callback([rs] {
    rs->options.data = rs->data;
    rs->options.status = stderr_status();
    assemble::RescoreReport r = assemble::rescore_run(rs->run, rs->out, rs->options);
    std::cerr << fmt::format("pwab: re-graded {} records into {} ({} copied as errored); {} changed score, {} saw "
                             "different observations\n",
                             r.rescored, rs->out, r.copied_errors, r.changed_scores, r.changed_observations);
    const data::Dataset ds = load_data(rs->data);
    std::cout << report::write_summaries(rs->out, {}, &ds);
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
