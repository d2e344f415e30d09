// src/agents/registry.cpp: the table of agents `pwab run` can build (style.md §5: registries are tables).
#include <functional>

#include "agents/agent.h"
#include "agents/fc_agent.h"
#include "agents/heuristic_agent.h"
#include "core/error.h"

namespace pwab::agents {
namespace {

struct Entry {
  AgentInfo info;
  std::function<std::unique_ptr<AgentFactory>(const AgentOptions&, const AgentContext&)> make;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {{"heuristic",
        "offline PUMA pseudo-label policy: fastText function classifier, task-specific memory (--memory taskspec, "
        "or none for the no-memory variant), rule-built parameters; folds the user's hints in multi-turn",
        "none (an offline stand-in for PUMA; no LLM)"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         HeuristicOptions h = parse_heuristic_options(o);
         if (!o.extra.count("max_steps")) h.max_steps = c.max_steps;  // the run's cap unless overridden
         return std::make_unique<HeuristicAgentFactory>(std::move(h), c);
       }},
      {{"fc",
        "GPT function-calling agent (needs --model): tools search, recommend, review, stop; --memory none (default), "
        "random, last or relevant (the memory baselines), or taskspec (task-specific memory with a predicted "
        "function, --agent-opt function_model=fasttext|keywords or function_file=PATH)",
        "No / Random / Last / Relevant Memory (GPT function calling); PUMA (gpt) with --memory taskspec"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         FcOptions f = parse_fc_options(o);
         if (!o.extra.count("max_steps")) f.max_steps = c.max_steps;  // the run's cap unless overridden
         return std::make_unique<FcAgentFactory>(std::move(f), c);
       }},
  };
  return entries;
}

}  // namespace

std::vector<AgentInfo> list_agents() {
  std::vector<AgentInfo> out;
  for (const auto& e : registry()) out.push_back(e.info);
  return out;
}

std::unique_ptr<AgentFactory> make_agent_factory(const std::string& name, const AgentOptions& options,
                                                 const AgentContext& context) {
  for (const auto& e : registry())
    if (e.info.name == name) return e.make(options, context);
  std::string names;
  for (const auto& e : registry()) names += (names.empty() ? "" : ", ") + e.info.name;
  throw UsageError("unknown agent '" + name + "' (available: " + names + ")");
}

}  // namespace pwab::agents
