#include "agents/tool_chat_agent.h"

#include <utility>

#include "core/json_writer.h"
#include "env/tools.h"

namespace pwab::agents {

env::Action respond_action(std::string_view text) {
  std::string args;
  JsonWriter(args).begin_object().key("content").value(text).end_object();
  return {std::string(env::kRespond), std::move(args)};
}

ToolChatAgent::ToolChatAgent(SystemMessage system_message, const LlmAccess& access, std::string tools_json,
                             std::unique_ptr<llm::ChatModel> model)
    : system_message_(std::move(system_message)),
      access_(access),
      tools_json_(std::move(tools_json)),
      model_(std::move(model)) {}

void ToolChatAgent::begin(const data::Task& task, const std::string& first_observation, data::Track track) {
  SystemPrompt system = system_message_(task, track, *model_);
  prior_prompt_tokens_ = system.prompt_tokens;
  prior_completion_tokens_ = system.completion_tokens;
  messages_ = {llm::Message::system(std::move(system.text)), llm::Message::user(first_observation)};
  pending_ = Pending::kNothing;
}

env::AgentStep ToolChatAgent::next(const std::string& observation) {
  // docs/decisions.md §3.3: a tool call's result comes back as a tool message; a text reply's answer (the user's, or
  // the environment's "Error: ..." without a user) as a user message.
  if (pending_ == Pending::kToolResult) {
    llm::Message m = llm::Message::tool(pending_call_id_, observation);
    m.name = pending_call_name_;
    messages_.push_back(std::move(m));
  } else if (pending_ == Pending::kUserReply) {
    messages_.push_back(llm::Message::user(observation));
  }
  pending_ = Pending::kNothing;

  llm::ChatRequest req;
  req.model = access_.model;
  req.messages = messages_;
  req.tools_json = tools_json_;
  req.tool_choice = "auto";
  req.temperature = access_.temperature.value_or(0.0);  // the original's --temperature default
  req.max_tokens = access_.max_tokens;
  req.seed = access_.seed;
  llm::ChatResponse r = model_->chat(req);

  env::AgentStep step;
  step.prompt_tokens = static_cast<int>(r.prompt_tokens) + std::exchange(prior_prompt_tokens_, 0);
  step.completion_tokens = static_cast<int>(r.completion_tokens) + std::exchange(prior_completion_tokens_, 0);
  llm::Message reply = std::move(r.message);
  reply.role = "assistant";
  if (!reply.tool_calls.empty()) {
    // docs/decisions.md §4.1: only the first call is acted on and kept. With ReplyStatus::kInvalidToolArguments its
    // arguments go to the environment as written, which answers with an Error observation: the model's failure.
    reply.tool_calls.resize(1);
    const llm::ToolCall& call = reply.tool_calls[0];
    step.action = {call.name, call.arguments_json};
    pending_ = Pending::kToolResult;
    pending_call_id_ = call.id;
    pending_call_name_ = call.name;
  } else {
    step.action = respond_action(reply.content);
    pending_ = Pending::kUserReply;
  }
  messages_.push_back(std::move(reply));
  return step;
}

}  // namespace pwab::agents
