// src/agents/tool_chat_agent.h: the function-calling conversation the fc, recmind and interecagent agents share
// (docs/decisions.md §3.3, §4.1).
//
// One episode is one conversation: a system message (built by the agent, possibly after an LLM call of its own,
// e.g. a function prediction) and the first observation as the user message. Every next() sends the conversation
// with the agent's tools, tool_choice "auto" and the run's sampling settings, and turns the reply into one action:
// tool_calls[0] (the only call acted on and kept in the history) or, for a text reply, `respond` with the text.
// A tool call's result comes back as a tool message, a user's answer as a user message. llm::InfraError passes
// through, so the runner records the task as errored.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"
#include "llm/chat.h"

namespace pwab::agents {

//! The `respond` action carrying `text` ({"content": text}).
env::Action respond_action(std::string_view text);

//! A system message and the tokens of any LLM call made to build it (counted with the first step).
struct SystemPrompt {
  std::string text;
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

class ToolChatAgent : public env::Agent {
 public:
  //! Builds the episode's system message; may call the episode's model.
  using SystemMessage = std::function<SystemPrompt(const data::Task&, data::Track, llm::ChatModel&)>;
  ToolChatAgent(SystemMessage system_message, const LlmAccess& access, std::string tools_json,
                std::unique_ptr<llm::ChatModel> model);

  void begin(const data::Task& task, const std::string& first_observation, data::Track track) override;
  env::AgentStep next(const std::string& observation) override;

  //! The conversation so far: the system message, the first observation, then the turns. The observation of
  //! the last action is not in it (it only arrives with a next() call that never comes after the last step).
  const std::vector<llm::Message>& messages() const { return messages_; }

 private:
  enum class Pending { kNothing, kToolResult, kUserReply };

  SystemMessage system_message_;
  const LlmAccess& access_;
  std::string tools_json_;
  std::unique_ptr<llm::ChatModel> model_;
  std::vector<llm::Message> messages_;
  Pending pending_ = Pending::kNothing;
  std::string pending_call_id_, pending_call_name_;
  int prior_prompt_tokens_ = 0, prior_completion_tokens_ = 0;
};

}  // namespace pwab::agents
