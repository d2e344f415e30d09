// src/assemble/benchmark.h: one benchmark run assembled in one place -- what `pwab run` does after reading its flags.
//
// run_benchmark takes a typed RunConfig (every setting, with the command line's defaults), the models the front
// end built from its model flags, and hooks for what it shows. It loads the dataset, builds the agent factories
// (one per trial), opens the services and the environment, makes the user simulator, writes or checks the run
// manifest, carries an earlier session's spending into the ledger and runs the pending (task, trial) units. It
// returns how the run ended with its records and dataset; the front end binds flags to a RunConfig, writes the
// summary files (report/summaries.h) and prints what comes back.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "embed/embedder.h"
#include "env/agent.h"
#include "llm/llm.h"
#include "data/dataset.h"
#include "runner/results.h"
#include "runner/run.h"

namespace pwab::assemble {

//! Everything that decides what a run computes, with `pwab run`'s defaults.
struct RunConfig {
  std::filesystem::path data;  //!< dataset directory (required)
  std::filesystem::path out;   //!< run directory (required)
  std::string split = "test";
  data::Track track = data::Track::kSingleTurn;
  runner::TaskRange tasks;                    //!< positions within the split ("0:" = all)
  int shard_index = 0, shard_count = 1;
  std::string agent = "heuristic";    //!< a name of agents::list_agents()
  agents::AgentOptions agent_options;  //!< memory, memory length, agent-specific options (a remote agent's url)
  //! "none", "scripted" or "llm"; empty = scripted in the multi-turn track, none in the single-turn one.
  std::string user_sim;
  //! The LLM user's leak guard (sim::LlmUserOptions::leak_guard): rewrites of a reply that gives the target
  //! away, 0 = off. Only with user_sim "llm"; in the manifest as "user_guard" only when > 0.
  int user_guard = 0;
  //! Agent calls per task; 0 = the track's default (episode_step_cap).
  int max_steps = 0;
  //! Runs per task; unset = 1, or on resume the stored run's count (trials_to_run).
  std::optional<int> trials;
  int concurrency = 0;  //!< episodes in parallel; 0 = one per hardware thread
  int top_k = 10;       //!< results per search or recommendation call
  uint64_t seed = 0;
  //! fasttext | minilm:DIR | hashing[:DIM] (assemble::open_embedder), or openai:MODEL (RunModels::embedder).
  std::string embedder = "fasttext";
  std::filesystem::path checkpoint;  //!< SASRec checkpoint; empty = DATA's default (trained when missing)
  std::filesystem::path index_dir;   //!< search index root; empty = DATA's default
  bool resume = false;               //!< continue `out`: skip finished units, retry errored ones
};

//! The step cap of an episode: `max_steps` when set; otherwise 10 in the multi-turn track, and in the
//! single-turn track 10 for function-calling agents, 3 for ReAct-style ones (loop_bound). Agents are told the
//! cap of a function-calling agent (react_style false) before they exist, so they can plan within it.
int episode_step_cap(const RunConfig& config, bool react_style);
//! The user simulator a run uses: config.user_sim or the track's default. UsageError for an unknown one, a
//! user simulator in the single-turn track, or a user_guard that is negative or not for the LLM user.
std::string effective_user_sim(const RunConfig& config);

//! The models a run talks to, built by the front end from its model flags. Members are null when not needed.
struct RunModels {
  std::shared_ptr<llm::ChatModel> agent_model;  //!< HTTP, local or replay-only, behind the cache if any
  std::shared_ptr<llm::ChatModel> user_model;
  std::string agent_model_name, user_model_name;
  double agent_temperature = 0.0;       //!< sent with the agent's requests (the original's default: 0.0)
  std::optional<int64_t> llm_seed;      //!< sent as the request seed
  std::optional<double> budget_usd;     //!< the ledger's budget, for the message when it stops the run
  std::unique_ptr<llm::Ledger> ledger;  //!< always set by the front end (prices, budget)
  //! What changes results, for the manifest: {"model", "temperature", "seed", "user_model", ...} (set ones).
  std::string config_json = "{}";
  //! The embedder when config.embedder is "openai:MODEL" (it needs the endpoint; booked in the ledger).
  std::unique_ptr<embed::Embedder> embedder;
};

//! What run_benchmark reports to while it runs. Every member may be empty.
struct RunHooks {
  //! Status lines: setup, first-run training, resume notes, the session's usage (no newline).
  std::function<void(const std::string&)> status;
  //! After every finished unit, with the run's cost so far ("" for offline runs): for a progress line.
  std::function<void(const runner::RunProgress&, const std::string& cost)> progress;
  //! Set by the front end (Ctrl-C) to stop handing out units; those in flight finish and are recorded.
  const std::atomic<bool>* interrupt = nullptr;
  //! Called just before the units start and after they end (also on an exception): the front end's Ctrl-C
  //! handler belongs in between, so that an interrupt during setup (a first-run training) still stops at once.
  std::function<void()> units_start, units_end;
};

//! How a run ended.
struct BenchmarkResult {
  runner::RunProgress progress;
  int trials = 1;
  bool interrupted = false;     //!< stopped by RunHooks::interrupt before every unit ran
  bool over_budget = false;     //!< stopped by the ledger's budget before every unit ran
  bool finished = false;        //!< every unit ran (not stopped by interrupt or budget): the summaries are due
  //! When the records of this session are the run's whole set (a fresh run that finished): them, so that the
  //! summaries need not read them back (runner::make_run); otherwise the caller reads the run (runner::read_run).
  std::optional<std::vector<runner::TaskRecord>> records;
  std::shared_ptr<const data::Dataset> dataset;  //!< the dataset the run was scored on (for the diagnosis)
  std::string usage_json;       //!< this session's model usage ("" for offline runs)
  std::string cost_text;        //!< the run's total cost so far ("" for offline runs)
  std::filesystem::path results_file;
};

//! Runs config's tasks (see the file comment). UsageError for a bad setting, before anything slow happens where
//! it can be known then (unknown agent or user simulator, a remote agent without a url); Error for data, service
//! and I/O failures. Episodes that fail (a model service that keeps failing) are recorded as errored and counted
//! in progress.errored; a stop by interrupt or budget is reported, not thrown.
BenchmarkResult run_benchmark(const RunConfig& config, RunModels& models, const RunHooks& hooks = {});

}  // namespace pwab::assemble
