// src/agents/agent.h: how `pwab run` finds and builds agents (docs/decisions.md, code practices §5: tau-bench's
// agents/ split).
//
// An agent is registered by name. Its factory is built once per run from the shared, read-only context (the
// dataset, the embedder, a cache directory for trained artifacts) and then makes one env::Agent per
// episode, from any worker thread. Everything that changes an agent's behaviour is in its options and is
// echoed by config_json(), which the run manifest stores so `--resume` can refuse a different agent.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/agent.h"
#include "llm/chat.h"
#include "llm/ledger.h"

namespace pwab::agents {

//! How an LLM agent reaches its model. The run sets it up once (endpoint, cache, ledger); `open` gives each
//! episode its own handle, which books the tokens and dollars of its calls under that task and role.
struct LlmAccess {
  std::string model;                  //!< the model name sent in requests (`--model`)
  std::optional<double> temperature;  //!< `--temperature` (the original's default is 0.0)
  std::optional<int> max_tokens;
  std::optional<int64_t> seed;
  //! A chat model for one episode: calls are metered under (task key, role). Thread-safe; null when the run
  //! has no LLM (offline agents only).
  std::function<std::unique_ptr<llm::ChatModel>(const std::string& task_key, llm::Role role)> open;
};

//! What every agent may read. All members outlive the factory.
struct AgentContext {
  const data::Dataset* ds = nullptr;
  //! The run's embedder (relevant-memory retrieval; the environment uses the same one for review rewards).
  const embed::Embedder* embedder = nullptr;
  //! Where an agent caches what it trains from the dataset (e.g. DATA/.pwab-agents); created on demand.
  std::filesystem::path cache_dir{};
  uint64_t seed = 0;
  //! The agent's LLM (empty `open` for offline runs: an LLM agent's factory then throws UsageError).
  LlmAccess llm{};
  //! The run directory (`pwab run --out`), where agents with state across tasks keep it; empty outside a run.
  std::filesystem::path run_dir{};
  //! The run's step cap (runner::EpisodeOptions::max_steps), so a multi-turn agent can plan to finish within it.
  int max_steps = 10;
  //! Where an agent reports transient trouble it recovers from (a retried request), one line each; null = silent.
  std::function<void(const std::string&)> log{};
};

//! The options `pwab run` passes through (agent-specific flags). Unknown keys are a UsageError of the factory.
struct AgentOptions {
  //! Memory strategy; "" = the agent's default. The heuristic agent takes "taskspec" (default) or "none".
  std::string memory;
  //! Behaviours of memory (`--memory-length`); unset = the agent's default (docs/decisions.md D1: 10; PUMA: 100).
  std::optional<int> memory_length;
  //! Further agent-specific options as key → value text (e.g. from repeated `--agent-opt key=value`).
  std::map<std::string, std::string> extra;
};

class AgentFactory {
 public:
  virtual ~AgentFactory() = default;
  virtual std::string name() const = 0;
  //! The effective options as a JSON object text (stored in the run manifest).
  virtual std::string config_json() const = 0;
  //! ReAct-style agents get the single-turn loop bound 3 instead of 10 (runner::loop_bound).
  virtual bool react_style() const { return false; }
  //! Called once before the run with the tasks this invocation will run, in the order they are handed out
  //! (agents with per-user state, like InteRecAgent, plan their ordering from it). Default: nothing.
  virtual void prepare(const std::vector<const data::Task*>& tasks) { (void)tasks; }
  //! A fresh agent for one episode. Thread-safe.
  virtual std::unique_ptr<env::Agent> make(const data::Task& task) const = 0;
};

//! One line per registered agent: its name, a description and the paper row it reproduces.
struct AgentInfo {
  std::string name;
  std::string description;
  std::string paper_row;
};
std::vector<AgentInfo> list_agents();

//! Builds the named agent's factory (training or loading its cached artifacts as needed). UsageError for an
//! unknown name or option.
std::unique_ptr<AgentFactory> make_agent_factory(const std::string& name, const AgentOptions& options,
                                                 const AgentContext& context);

}  // namespace pwab::agents
