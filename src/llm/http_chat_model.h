// src/llm/http_chat_model.h: chat completions over HTTP from an OpenAI-compatible endpoint.
#pragma once
#include <memory>
#include <string>

#include "llm/chat.h"
#include "llm/endpoint.h"

namespace pwab::llm {

//! POSTs each request to ENDPOINT/chat/completions. Transport failures are retried by the endpoint's policy
//! (InfraError at the end); a reply whose tool-call arguments are not a JSON object is asked again up to
//! RetryPolicy::invalid_reply_attempts times in all, as the original does, and then returned with
//! ReplyStatus::kInvalidToolArguments (the agent's failure, not an InfraError). Thread-safe.
class HttpChatModel final : public ChatModel {
 public:
  explicit HttpChatModel(std::shared_ptr<const Endpoint> endpoint);

  ChatResponse chat(const ChatRequest& request) override;
  //! "openai-compatible <base URL without credentials>"
  std::string describe() const override;

  const Endpoint& endpoint() const { return *endpoint_; }

 private:
  std::shared_ptr<const Endpoint> endpoint_;
};

}  // namespace pwab::llm
