// src/assemble/trials.h: what makes the trials of `pwab run --trials N` differ from each other, in one place
// (docs/runner.md "Trials", docs/llm.md "Trials and the cache").
//
// Trial t of a run is the whole run again with its own randomness: its own agent factory (so agents with state
// across tasks, like InteRecAgent, keep it per trial: every trial is a full pass over the tasks, as a tau-bench
// trial is), built on an AgentContext whose seed is trial_seed(seed, t), whose --llm-seed is
// seed + t, whose LLM requests carry the record/replay cache's sample index t (so a cache does not replay trial
// 0's answers for trial 1) and are booked in the ledger under RecordId{task, t}, and whose run directory for
// per-run agent state is RUN_DIR/trial-t. Trial 0 is exactly the run without trials.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "runner/run.h"

namespace pwab::assemble {

//! The trials `pwab run` runs: `--trials` when given; otherwise, on --resume of a directory with a manifest, the
//! count stored there; otherwise 1. (RunDirectory::open refuses fewer trials than stored.)
int trials_to_run(std::optional<int> flag, const std::filesystem::path& run_dir, bool resume);

//! The agent context of trial `trial` (see the file comment); trial 0 gets `run` unchanged.
agents::AgentContext trial_context(const agents::AgentContext& run, int trial);

//! One agent factory per trial, each built when first needed.
class TrialFactories {
 public:
  //! Builds trial 0's factory at once (the manifest needs its name and config). UsageError as
  //! agents::make_agent_factory.
  TrialFactories(std::string agent, agents::AgentOptions options, agents::AgentContext context, int trials);

  //! Trial 0's factory: the agent's name, config and loop bound.
  agents::AgentFactory& first() { return *factories_.front(); }
  //! Builds the factories of the trials that have pending units and calls each one's prepare() with its trial's
  //! tasks in hand-out order. Call once before the workers start (building is not thread-safe).
  void prepare(const std::vector<runner::Unit>& pending);
  //! Makes an agent with the factory of the unit's trial; the trial's factory must have been built by prepare().
  runner::AgentMaker maker() const;

 private:
  std::string agent_;
  agents::AgentOptions options_;
  agents::AgentContext context_;
  std::vector<std::unique_ptr<agents::AgentFactory>> factories_;  //!< per trial; null until built
};

}  // namespace pwab::assemble
