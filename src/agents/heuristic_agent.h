// src/agents/heuristic_agent.h: the offline `heuristic` agent, the embedded default of `pwab run` (no LLM).
//
// It plays PUMA's pseudo-label policy (docs/decisions.md §4.6, §5.2): a fastText classifier picks the task function,
// the task-specific memory (the visible history's behaviours most similar to the instruction) supplies the user's
// preferences, and heuristic_policy.h turns both into the call's parameters. Single-turn: one call. Multi-turn:
// call, ask the user for feedback, fold the answer into the next call, and stop once the user is satisfied or
// has nothing more to say. The agent reads only the task's instruction, user and timestamp (for the visible
// history) and the observations, never the task's target. docs/agents/heuristic.md has the measured figures.
#pragma once
#include <memory>
#include <string>

#include "agents/agent.h"
#include "agents/function_classifier.h"
#include "agents/heuristic_policy.h"
#include "agents/task_memory.h"

namespace pwab::agents {

//! Everything that changes the heuristic's behaviour (echoed by config_json()).
struct HeuristicOptions {
  bool memory = true;  //!< --memory taskspec (default) or none (the no-memory variant: no history at all)
  int memory_length = 10;
  RelevanceText relevance = RelevanceText::kCompact;
  //! Multi-turn: the agent plans its dialogue to end within this many calls (make_agent_factory takes the run's
  //! AgentContext::max_steps unless the `max_steps` option overrides it; the runner enforces the cap anyway).
  int max_steps = 10;
  //! Multi-turn recommendation: at most this many questions. The recommender can use a category or brand hint only
  //! by reordering the history, which rarely changes its top 10, so long dialogues mostly cost steps.
  int recommend_questions = 1;
  //! review: the past reviews the phrasing comes from: the memory items only (true) or the whole visible history
  //! with the memory items preferred (false, measured better: more habits are seen).
  bool review_from_memory = false;
  HeuristicPolicy policy;
};

//! Reads AgentOptions: memory "" | "taskspec" | "none", memory_length ≥ 1, and the extra keys `relevance`
//! (compact | full), `max_steps`, `recommend_questions`, `review_from_memory`, and the HeuristicPolicy fields by
//! name (booleans as true/false/1/0); `max_steps` defaults to `run_max_steps`, the run's cap. UsageError for
//! anything else.
HeuristicOptions parse_heuristic_options(const AgentOptions& options, int run_max_steps = 10);

class HeuristicAgentFactory final : public AgentFactory {
 public:
  //! Trains or loads the function classifier under context.cache_dir. UsageError when memory is on and the
  //! context has no embedder, or the context has no dataset.
  HeuristicAgentFactory(HeuristicOptions options, const AgentContext& context);
  ~HeuristicAgentFactory() override;
  HeuristicAgentFactory(const HeuristicAgentFactory&) = delete;  // its agents point into it
  HeuristicAgentFactory& operator=(const HeuristicAgentFactory&) = delete;

  std::string name() const override { return "heuristic"; }
  std::string config_json() const override;
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  const FunctionClassifier& classifier() const { return *classifier_; }
  const HeuristicOptions& options() const { return options_; }

  struct Shared;  //!< what every episode's agent reads (defined in the .cpp)

 private:
  HeuristicOptions options_;
  AgentContext context_;
  std::unique_ptr<FunctionClassifier> classifier_;
  std::unique_ptr<BehaviourVectors> vectors_;
  std::unique_ptr<Shared> shared_;
};

}  // namespace pwab::agents
