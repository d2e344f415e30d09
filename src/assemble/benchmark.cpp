// src/assemble/benchmark.cpp: assembling and running one benchmark run (benchmark.h).
#include "assemble/benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/sys.h"
#include "core/version.h"
#include "data/loader.h"
#include "runner/run_settings.h"
#include "assemble/services.h"
#include "assemble/trials.h"
#include "assemble/user_simulators.h"

namespace pwab::assemble {
namespace {

using Json = nlohmann::json;

void say(const RunHooks& hooks, const std::string& line) {
  if (hooks.status) hooks.status(line);
}

void check_agent_name(const std::string& agent) {
  auto known = agents::list_agents();
  if (std::none_of(known.begin(), known.end(), [&](const agents::AgentInfo& i) { return i.name == agent; }))
    throw UsageError("unknown agent '" + agent + "' (`pwab agents` lists them)");
}

std::unique_ptr<embed::Embedder> take_embedder(const RunConfig& config, RunModels& models, const data::Dataset& ds) {
  if (config.embedder.rfind("openai:", 0) != 0) return assemble::open_embedder(config.embedder, ds, config.data);
  if (!models.embedder) throw UsageError("--embedder " + config.embedder + " needs its endpoint (RunModels::embedder)");
  return std::move(models.embedder);
}

//! The context every trial's agents are built on (trial_context derives the others).
agents::AgentContext agent_context(const RunConfig& config, const RunModels& models, const data::Dataset& ds,
                                   const embed::Embedder& embedder) {
  agents::AgentContext context;
  context.ds = &ds;
  context.embedder = &embedder;
  context.cache_dir = config.data / ".pwab-agents";
  context.seed = config.seed;
  context.run_dir = config.out;
  context.max_steps = episode_step_cap(config, /*react_style=*/false);
  context.log = [](const std::string& line) { fmt::print(stderr, "pwab: {}\n", line); };
  if (models.agent_model) {
    context.llm.model = models.agent_model_name;
    context.llm.temperature = models.agent_temperature;
    context.llm.seed = models.llm_seed;
    llm::ChatModel& agent_model = *models.agent_model;
    llm::Ledger& ledger = *models.ledger;
    context.llm.open = [&agent_model, &ledger](const std::string& task_key, llm::Role role) {
      return std::make_unique<llm::MeteredChatModel>(agent_model, ledger, role, task_key);
    };
  }
  return context;
}

//! The manifest: everything that changes what the run computes (--resume refuses any difference).
runner::RunManifest make_manifest(const RunConfig& config, const RunModels& models, const agents::AgentFactory& agent,
                          const std::string& user_sim, int trials, int max_steps, const embed::Embedder& embedder,
                          const assemble::Services& services, std::string data_fingerprint) {
  runner::RunSettings settings;
  settings.split = config.split;
  settings.track = config.track;
  settings.tasks = config.tasks.to_string();
  settings.agent = agent.name();
  settings.agent_config = agent.config_json();
  settings.user_sim = user_sim;
  settings.trials = trials;
  settings.max_steps = max_steps;
  settings.top_k = config.top_k;
  settings.embedder = embedder.name();
  settings.search_index = services.index->fingerprint();
  settings.recommender = to_hex(hash_file(services.checkpoint));
  if (!Json::parse(models.config_json).empty()) settings.llm = models.config_json;
  // Only when on: manifests of runs without the guard (and --resume of runs made before it existed) are unchanged.
  if (config.user_guard > 0) settings.user_guard = config.user_guard;
  runner::RunManifest manifest;
  manifest.config_json = settings.to_json();
  manifest.seed = config.seed;
  manifest.dataset_fingerprint = std::move(data_fingerprint);
  manifest.pwab_version = kVersion;
  manifest.shard_index = config.shard_index;
  manifest.shard_count = config.shard_count;
  return manifest;
}

//! Spending of an earlier session of this run counts toward the budget.
void carry_prior_usage(const std::filesystem::path& out, llm::Ledger& ledger) {
  for (const auto& r : runner::read_records(out)) {
    if (r.usage_json.empty()) continue;
    auto u = Json::parse(r.usage_json, nullptr, false);
    if (!u.is_object()) continue;
    for (auto role : {llm::Role::kAgent, llm::Role::kUser, llm::Role::kOther})
      if (u.contains(std::string(llm::to_string(role))))
        ledger.add_prior(role, llm::Usage::from_json(u[std::string(llm::to_string(role))].dump()));
  }
}

}  // namespace

int episode_step_cap(const RunConfig& config, bool react_style) {
  if (config.max_steps > 0) return config.max_steps;
  return runner::loop_bound(config.track == data::Track::kMultiTurn ? 10 : -1, react_style);
}

std::string effective_user_sim(const RunConfig& config) {
  std::string user_sim =
      config.user_sim.empty() ? (config.track == data::Track::kMultiTurn ? "scripted" : "none") : config.user_sim;
  if (user_sim != "none" && user_sim != "scripted" && user_sim != "llm" && user_sim != "human")
    throw UsageError("--user-sim must be none, scripted, llm or human, got '" + user_sim + "'");
  if (user_sim == "human" && config.concurrency > 1)
    throw UsageError("--user-sim human plays one episode at a time: drop --concurrency (or give 1)");
  if (config.track == data::Track::kSingleTurn && user_sim != "none")
    throw UsageError("the single-turn track has no user simulator (drop --user-sim or use --track multi)");
  if (config.user_guard < 0)
    throw UsageError("--user-guard must be 0 (off) or more, got " + std::to_string(config.user_guard));
  if (config.user_guard > 0 && user_sim != "llm") throw UsageError("--user-guard needs --user-sim llm");
  return user_sim;
}

BenchmarkResult run_benchmark(const RunConfig& config, RunModels& models, const RunHooks& hooks) {
  const std::string user_sim = effective_user_sim(config);
  check_agent_name(config.agent);  // before anything is loaded
  if (!models.ledger) throw UsageError("run_benchmark needs a ledger (RunModels::ledger)");
  if (user_sim == "llm" && !models.user_model) throw UsageError("--user-sim llm needs a user model");
  llm::Ledger& ledger = *models.ledger;

  Stopwatch setup;
  // Shared with the result: the caller writes the run's summaries (with its diagnosis) on the same dataset.
  auto dataset = std::make_shared<const data::Dataset>(data::load_dataset(config.data));
  const data::Dataset& ds = *dataset;
  auto tasks = runner::select_tasks(ds, config.split, config.tasks, config.shard_index, config.shard_count);
  // The search index opens from its cache on a second core while the embedder and the agents load (a missing or
  // stale index is built later by open_environment, after the agent's usage errors, as before).
  std::future<std::unique_ptr<search::Index>> cached_index = std::async(std::launch::async, [&ds, &config] {
    return search::Index::open_cached(
        ds, config.index_dir.empty() ? std::nullopt : std::optional<std::filesystem::path>(config.index_dir));
  });
  std::unique_ptr<embed::Embedder> embedder = take_embedder(config, models, ds);
  const embed::Embedder& embedder_ref = *embedder;

  BenchmarkResult result;
  result.trials = trials_to_run(config.trials, config.out, config.resume);
  TrialFactories factories(config.agent, config.agent_options, agent_context(config, models, ds, embedder_ref),
                           result.trials);
  agents::AgentFactory& agent = factories.first();

  // The services come after the agent, so that its usage errors come before a first-run SASRec training.
  std::string data_fingerprint = runner::dataset_fingerprint(config.data);  // while the index opens
  assemble::ServiceOptions service_options;
  service_options.index_dir = config.index_dir;
  service_options.checkpoint = config.checkpoint;
  service_options.announce = hooks.status;
  service_options.opened_index = [&cached_index] { return cached_index.get(); };
  assemble::DatasetEnvironment world = assemble::open_environment(ds, config.data, service_options, std::move(embedder), config.top_k);

  const int max_steps = episode_step_cap(config, agent.react_style());
  auto dir = runner::RunDirectory::open(config.out, make_manifest(config, models, agent, user_sim, result.trials, max_steps,
                                                          embedder_ref, world.services, std::move(data_fingerprint)),
                                config.resume);
  if (dir.n_truncated()) say(hooks, "dropped an unfinished last line left by an interrupted run");
  if (config.resume) carry_prior_usage(config.out, ledger);

  // The units this invocation runs, in hand-out order: the agents prepare for exactly these.
  const std::vector<runner::Unit> todo = runner::pending_units(tasks, result.trials, dir.done());
  factories.prepare(todo);

  const bool uses_llm = models.agent_model || models.user_model;
  std::atomic<bool> over_budget{false};
  runner::RunOptions options;
  options.episode = {config.track, max_steps};
  options.trials = result.trials;
  options.concurrency = user_sim == "human" ? 1 : config.concurrency;
  options.cancel = hooks.interrupt;
  options.should_stop = [&] {
    if (ledger.budget_reached()) over_budget = true;
    return over_budget.load();
  };
  options.on_progress = [&](const runner::RunProgress& p) {
    if (hooks.progress) hooks.progress(p, uses_llm ? ledger.run_total().cost_text() : std::string());
  };
  if (uses_llm) options.on_record = [&ledger](runner::TaskRecord& r) { r.usage_json = ledger.to_json(r.id().to_string()); };
  // A fresh run's records are kept for its summaries (BenchmarkResult::records).
  options.keep_records = !config.resume;
  say(hooks, fmt::format("{} {} tasks{} of {} ({}-turn, agent {}, user {}); setup {:.1f} s", tasks.size(),
                         config.split, result.trials > 1 ? fmt::format(" x {} trials", result.trials) : "",
                         config.data.string(), data::to_string(config.track), agent.name(),
                         user_sim, setup.seconds()));

  const std::size_t skipped = tasks.size() * static_cast<std::size_t>(result.trials) - todo.size();
  runner::RunReport report;
  {
    struct UnitsEnd {  // units_end runs however run_units leaves
      const RunHooks& hooks;
      ~UnitsEnd() {
        if (hooks.units_end) hooks.units_end();
      }
    } units_end{hooks};
    if (hooks.units_start) hooks.units_start();
    report = runner::run_units(*world.environment, todo, skipped, dir, factories.maker(),
                       user_maker(user_sim, ds, models, config.seed, config.user_guard), options);
  }

  result.progress = report.progress;
  result.results_file = config.out / runner::kResultsFile;
  result.over_budget = report.cancelled && over_budget;
  result.interrupted = report.cancelled && !result.over_budget;
  if (uses_llm) {
    result.usage_json = ledger.to_json();
    result.cost_text = ledger.run_total().cost_text();
  }
  if (!report.cancelled) {
    result.finished = true;
    // A fresh run's summaries can come from the records it wrote, kept in memory, instead of reading them back (a
    // resumed run's file holds earlier sessions' records too).
    if (options.keep_records && report.records_exact && report.records.size() == todo.size())
      result.records = std::move(report.records);
  }
  result.dataset = dataset;
  return result;
}

}  // namespace pwab::assemble
