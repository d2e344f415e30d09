// src/agents/recmind_agent.h: the RecMind agent `recmind` (docs/decisions.md §4.4): the function-calling agent of §4.2
// offered all five tools (the details tool `get_product_details_by_asin` too), with its own prompts and a compact
// memory of the user's 10 most recent purchases and reviews.
//
// It also declares ToolChatAgent, the function-calling conversation that recmind and interecagent share: the
// same turn handling as the fc agent (fc_agent.h; only tool_calls[0] is acted on and kept, a text reply is
// `respond`, a tool result comes back as a tool message and a user answer as a user message), with the system
// message and the tool list supplied by the agent. docs/agents/recmind.md has the prompts and renderings.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"
#include "agents/tool_chat_agent.h"
#include "llm/chat.h"

namespace pwab::agents {

//! Changes whenever a RecMind prompt's or memory header's wording changes (echoed by config_json()).
inline constexpr std::string_view kRecMindPromptsVersion = "pwab-recmind-prompts/1";

//! RecMind's system prompt (docs/decisions.md §4.4, our own words): the fc opening line, "Rules:", then 7 rules
//! (single-turn) or 12 rules stating the step budget `max_steps` (multi-turn); ends with a newline.
std::string recmind_system_prompt(data::Track track, int max_steps);

//! One memory item in RecMind's compact layout (docs/decisions.md §4.4, exact):
//! "\nMEMORY <i>:\nProduct:\n- Title: …\n- Parent Asin: …\n- Main Category: …\nReview:\n- Rating: …\n- Text: …\n- Timestamp: …\n".
std::string recmind_memory_item(const data::Product& product, const data::Review& review, std::size_t i);

//! The header line of RecMind's memory: "\n", one sentence claiming every purchase and review, ":\n\n".
std::string_view recmind_memory_header();

//! RecMind's memory for a task: the header, then the k most recent visible-history items (newest first, as
//! last_memory), numbered 0.., joined with "\n". The header alone on an empty history.
std::string recmind_memory(const data::Dataset& ds, const data::Task& task, int k);

struct RecMindOptions {
  int memory_length = 10;  //!< docs/decisions.md D1
  int max_steps = 10;      //!< the step budget the multi-turn prompt states
};

//! Reads AgentOptions: memory "" or "recmind" (its only memory), memory_length ≥ 1, extra key `max_steps`
//! (default `run_max_steps`, the run's cap). UsageError for anything else.
RecMindOptions parse_recmind_options(const AgentOptions& options, int run_max_steps = 10);

class RecMindAgentFactory final : public AgentFactory {
 public:
  //! UsageError when the context has no LLM or no dataset.
  RecMindAgentFactory(RecMindOptions options, const AgentContext& context);
  RecMindAgentFactory(const RecMindAgentFactory&) = delete;  // its agents point into it
  RecMindAgentFactory& operator=(const RecMindAgentFactory&) = delete;

  std::string name() const override { return "recmind"; }
  //! {"agent": "recmind", "model", "temperature", "max_tokens", "seed", "memory": "recmind", "memory_length",
  //! "prompts", "max_steps"}.
  std::string config_json() const override;
  //! Opens the episode's model under (task key, agent role).
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  //! The episode's system message: recmind_system_prompt + recmind_memory.
  std::string system_message(const data::Task& task, data::Track track) const;
  const RecMindOptions& options() const { return options_; }

 private:
  RecMindOptions options_;
  AgentContext context_;
  std::string tools_json_;
};

}  // namespace pwab::agents
