// Assembling and running one benchmark run (benchmark.h).
#include "runner/benchmark.h"

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
#include "env/services.h"
#include "report/runs.h"
#include "runner/trials.h"
#include "sim/human_user.h"
#include "sim/llm_user.h"
#include "sim/scripted_user.h"

namespace pwab::runner {
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
  if (config.embedder.rfind("openai:", 0) != 0) return env::open_embedder(config.embedder, ds, config.data);
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
RunManifest make_manifest(const RunConfig& config, const RunModels& models, const agents::AgentFactory& agent,
                          const std::string& user_sim, int trials, int max_steps, const embed::Embedder& embedder,
                          const env::Services& services, std::string data_fingerprint) {
  Json json = {{"split", config.split},
               {"track", config.track == Track::kSingleTurn ? "single" : "multi"},
               {"tasks", config.tasks.to_string()},
               {"agent", agent.name()},
               {"agent_config", Json::parse(agent.config_json())},
               {"user_sim", user_sim},
               {kTrialsKey, trials},
               {"max_steps", max_steps},
               {"top_k", config.top_k},
               {"embedder", embedder.name()},
               {"search_index", services.index->fingerprint()},
               {"recommender", to_hex(hash_file(services.checkpoint))}};
  if (auto llm_config = Json::parse(models.config_json); !llm_config.empty()) json["llm"] = llm_config;
  // Only when on: manifests of runs without the guard (and --resume of runs made before it existed) are unchanged.
  if (config.user_guard > 0) json["user_guard"] = config.user_guard;
  RunManifest manifest;
  manifest.config_json = json.dump();
  manifest.seed = config.seed;
  manifest.dataset_fingerprint = std::move(data_fingerprint);
  manifest.pwab_version = kVersion;
  manifest.shard_index = config.shard_index;
  manifest.shard_count = config.shard_count;
  return manifest;
}

UserMaker user_maker(const std::string& user_sim, const data::Dataset& ds, const RunModels& models, uint64_t seed,
                     int user_guard) {
  if (user_sim == "scripted")
    return [&ds, seed](const data::Task& t, int trial) {
      return std::make_unique<sim::ScriptedUser>(ds, t, trial_seed(seed, trial));
    };
  if (user_sim == "human")  // one episode at a time (run_benchmark sets concurrency 1), so one terminal suffices
    return [&ds](const data::Task& t, int) -> std::unique_ptr<env::UserChannel> {
      return std::make_unique<sim::HumanUser>(ds, t, std::cin, std::cerr);
    };
  if (user_sim == "llm") {
    llm::ChatModel& user_model = *models.user_model;
    llm::Ledger& ledger = *models.ledger;
    std::string name = models.user_model_name;
    return [&ds, &user_model, &ledger, name, user_guard](const data::Task& t,
                                                         int trial) -> std::unique_ptr<env::UserChannel> {
      auto metered = std::make_unique<llm::MeteredChatModel>(user_model, ledger, llm::Role::kUser,
                                                             RecordId{task_key(t), trial}.to_string());
      sim::LlmUserOptions user_options;
      user_options.sample = trial;  // each trial's dialogue is its own cache entry
      user_options.leak_guard = user_guard;
      return std::make_unique<sim::LlmUser>(ds, t, std::move(metered), name, user_options);
    };
  }
  return {};
}

//! Spending of an earlier session of this run counts toward the budget.
void carry_prior_usage(const std::filesystem::path& out, llm::Ledger& ledger) {
  for (const auto& r : read_records(out)) {
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
  return loop_bound(config.track == Track::kMultiTurn ? 10 : -1, react_style);
}

std::string effective_user_sim(const RunConfig& config) {
  std::string user_sim =
      config.user_sim.empty() ? (config.track == Track::kMultiTurn ? "scripted" : "none") : config.user_sim;
  if (user_sim != "none" && user_sim != "scripted" && user_sim != "llm" && user_sim != "human")
    throw UsageError("--user-sim must be none, scripted, llm or human, got '" + user_sim + "'");
  if (user_sim == "human" && config.concurrency > 1)
    throw UsageError("--user-sim human plays one episode at a time: drop --concurrency (or give 1)");
  if (config.track == Track::kSingleTurn && user_sim != "none")
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
  data::Dataset ds = data::load_dataset(config.data);
  auto tasks = select_tasks(ds, config.split, config.tasks, config.shard_index, config.shard_count);
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
  std::string data_fingerprint = dataset_fingerprint(config.data);  // while the index opens
  env::ServiceOptions service_options;
  service_options.index_dir = config.index_dir;
  service_options.checkpoint = config.checkpoint;
  service_options.announce = hooks.status;
  service_options.opened_index = [&cached_index] { return cached_index.get(); };
  env::DatasetEnvironment world = env::open_environment(ds, config.data, service_options, std::move(embedder), config.top_k);

  const int max_steps = episode_step_cap(config, agent.react_style());
  auto dir = RunDirectory::open(config.out, make_manifest(config, models, agent, user_sim, result.trials, max_steps,
                                                          embedder_ref, world.services, std::move(data_fingerprint)),
                                config.resume);
  if (dir.n_truncated()) say(hooks, "dropped an unfinished last line left by an interrupted run");
  if (config.resume) carry_prior_usage(config.out, ledger);

  // The units this invocation runs, in hand-out order: the agents prepare for exactly these.
  const std::vector<Unit> todo = pending_units(tasks, result.trials, dir.done());
  factories.prepare(todo);

  const bool uses_llm = models.agent_model || models.user_model;
  std::atomic<bool> over_budget{false};
  RunOptions options;
  options.episode = {config.track, max_steps};
  options.trials = result.trials;
  options.concurrency = user_sim == "human" ? 1 : config.concurrency;
  options.cancel = hooks.interrupt;
  options.should_stop = [&] {
    if (ledger.budget_reached()) over_budget = true;
    return over_budget.load();
  };
  options.on_progress = [&](const RunProgress& p) {
    if (hooks.progress) hooks.progress(p, uses_llm ? ledger.run_total().cost_text() : std::string());
  };
  if (uses_llm) options.on_record = [&ledger](TaskRecord& r) { r.usage_json = ledger.to_json(r.id().to_string()); };
  // A fresh run's summaries come from the records it wrote, kept in memory, instead of reading them back (a resumed
  // run's file holds earlier sessions' records too).
  options.keep_records = !config.resume;
  say(hooks, fmt::format("{} {} tasks{} of {} ({}-turn, agent {}, user {}); setup {:.1f} s", tasks.size(),
                         config.split, result.trials > 1 ? fmt::format(" x {} trials", result.trials) : "",
                         config.data.string(), config.track == Track::kSingleTurn ? "single" : "multi", agent.name(),
                         user_sim, setup.seconds()));

  const std::size_t skipped = tasks.size() * static_cast<std::size_t>(result.trials) - todo.size();
  RunReport report;
  {
    struct UnitsEnd {  // units_end runs however run_units leaves
      const RunHooks& hooks;
      ~UnitsEnd() {
        if (hooks.units_end) hooks.units_end();
      }
    } units_end{hooks};
    if (hooks.units_start) hooks.units_start();
    report = run_units(*world.environment, todo, skipped, dir, factories.maker(),
                       user_maker(user_sim, ds, models, config.seed, config.user_guard), options);
  }

  result.progress = report.progress;
  result.results_file = config.out / kResultsFile;
  result.over_budget = report.cancelled && over_budget;
  result.interrupted = report.cancelled && !result.over_budget;
  if (uses_llm) {
    result.usage_json = ledger.to_json();
    result.cost_text = ledger.run_total().cost_text();
  }
  if (!report.cancelled) {
    if (options.keep_records && report.records_exact && report.records.size() == todo.size())
      result.summary_table = report::write_summaries(
          report::make_run(config.out, read_manifest(config.out), std::move(report.records)), {}, &ds);
    else
      result.summary_table = report::write_summaries(config.out, {}, &ds);
  }
  return result;
}

}  // namespace pwab::runner
