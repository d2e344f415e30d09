// src/agents/registry.cpp: the table of agents `pwab run` can build (docs/decisions.md, code practices §5: registries
// are tables).
#include <functional>

#include "agents/agent.h"
#include "agents/fc_agent.h"
#include "agents/heuristic_agent.h"
#include "agents/interec_agent.h"
#include "agents/puma_agent.h"
#include "agents/react_agent.h"
#include "agents/recmind_agent.h"
#include "agents/remote_agent.h"
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
         return std::make_unique<HeuristicAgentFactory>(parse_heuristic_options(o, c.max_steps), c);
       }},
      {{"fc",
        "GPT function-calling agent (needs --model): tools search, recommend, review, stop; --memory none (default), "
        "random, last or relevant (the memory baselines), or taskspec (task-specific memory with a predicted "
        "function, --agent-opt function_model=fasttext|keywords or function_file=PATH)",
        "No / Random / Last / Relevant Memory (GPT function calling); PUMA (gpt) with --memory taskspec"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<FcAgentFactory>(parse_fc_options(o, c.max_steps), c);
       }},
      {{"react",
        "ReAct (needs --model): Thought / Action / Arguments text replies, the tools listed in the prompt, respond "
        "to talk to the user; 3 steps in single-turn; --memory none (default), random, last, relevant or taskspec",
        "ReAct"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<ReactAgentFactory>(parse_react_options(o, /*reflection=*/false, c.max_steps), c);
       }},
      {{"reflection",
        "ReAct plus a reflection on each user reply (an extra LLM call under role other, not a step); meant for "
        "multi-turn (in single-turn it is the same as react); memory as react",
        "Reflection (multi-turn)"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<ReactAgentFactory>(parse_react_options(o, /*reflection=*/true, c.max_steps), c);
       }},
      {{"recmind",
        "RecMind (needs --model): function calling with all five tools, get_product_details_by_asin included, "
        "its own prompts and the user's 10 most recent purchases and reviews as memory",
        "RecMind"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<RecMindAgentFactory>(parse_recmind_options(o, c.max_steps), c);
       }},
      {{"interecagent",
        "InteRecAgent (needs --model): function calling with a like/dislike/expect profile per user, initialized "
        "from the history (--agent-opt interec_init=llm|heuristic) and updated by the LLM after each task, in task "
        "order per user (--agent-opt interec_memory=PATH saves and resumes it)",
        "InteRecAgent"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<InterecAgentFactory>(parse_interec_options(o, c.max_steps), c);
       }},
      {{"puma",
        "PUMA (needs --model: a /v1/completions server with the fine-tuned model): function prediction "
        "(--agent-opt function_model=puma|fasttext|keywords|llm or function_file=PATH), task-specific memory of the "
        "100 most relevant behaviours cut to 768 tokens (--memory taskspec|none, memory_tokens=N), one raw-text "
        "prompt per step; Say: / stop outputs map to respond / stop",
        "PUMA (LLaMA-7B); PUMA (gpt) is fc --memory taskspec"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<PumaAgentFactory>(parse_puma_options(o), c);
       }},
      {{"remote",
        "an external agent over HTTP (needs --agent-url URL): pwab POSTs each step (task, tools, the user's visible "
        "history, the conversation so far; protocol pwab-agent/1, docs/agents/remote.md) and runs the action it "
        "answers; --agent-opt name=LABEL, product_details=true, timeout=S, retries=N",
        "none (your own agent, any language)"},
       [](const AgentOptions& o, const AgentContext& c) -> std::unique_ptr<AgentFactory> {
         return std::make_unique<RemoteAgentFactory>(parse_remote_options(o, c.max_steps), c);
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
