#include "llm/http_chat_model.h"

#include "llm/wire.h"

namespace pwab::llm {

HttpChatModel::HttpChatModel(std::shared_ptr<const Endpoint> endpoint) : endpoint_(std::move(endpoint)) {
  if (!endpoint_) throw UsageError("HttpChatModel needs an endpoint");
}

std::string HttpChatModel::describe() const { return "openai-compatible " + endpoint_->display_url(); }

ChatResponse HttpChatModel::chat(const ChatRequest& request) {
  if (request.model.empty()) throw UsageError("ChatRequest.model is empty");
  const std::string body = request_body_json(request);
  const int max_invalid = endpoint_->config().retry.invalid_reply_attempts;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int attempts = 0;
  for (int asked = 1;; ++asked) {
    ChatResponse reply;
    const bool raw = request.prompt.has_value();
    Endpoint::BodyCheck check = [&reply, raw](const std::string& text) {
      reply = ChatResponse{};
      return raw ? parse_completion_reply(text, reply) : parse_chat_reply(text, reply);
    };
    PostResult posted;
    try {
      posted = endpoint_->post_json(std::string(request_path(request)), body, check);
    } catch (const InfraError& e) {
      throw InfraError("chat model '" + request.model + "': " + e.what(), e.http_status(), attempts + e.attempts());
    }
    attempts += posted.attempts;
    prompt_tokens += reply.prompt_tokens;
    completion_tokens += reply.completion_tokens;
    reply.model = request.model;
    reply.prompt_tokens = prompt_tokens;
    reply.completion_tokens = completion_tokens;
    reply.attempts = attempts;
    std::string problem = check_tool_arguments(reply.message);
    if (problem.empty()) return reply;
    if (asked >= max_invalid) {
      reply.status = ReplyStatus::kInvalidToolArguments;
      reply.problem = problem + " (asked " + std::to_string(asked) + " time" + (asked == 1 ? "" : "s") + ")";
      return reply;
    }
    if (const auto& log = endpoint_->config().log)
      log("chat model '" + request.model + "': " + problem + "; asking again (" + std::to_string(asked + 1) + " of " +
          std::to_string(max_invalid) + ")");
  }
}

}  // namespace pwab::llm
