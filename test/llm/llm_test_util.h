// test/llm/llm_test_util.h: what the llm tests share: an endpoint configuration for the loopback server with
// tiny retry delays, and sample requests.
#pragma once
#include <memory>

#include "llm/chat.h"
#include "llm/endpoint.h"
#include "support/openai_test_server.h"

namespace pwab::llm::testing {

inline constexpr const char* kKey = "sk-test-SECRET-0123456789abcdef";

inline constexpr const char* kSearchTool =
    R"([{"type": "function", "function": {"name": "search_product_by_query", "description": "Search products.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])";

inline EndpointConfig fast_config(const test::OpenAITestServer& server) {
  EndpointConfig c;
  c.base_url = server.base_url();
  c.api_key = ApiKey(kKey);
  c.timeout_s = 10;
  c.connect_timeout_s = 2;
  c.retry.max_attempts = 3;
  c.retry.base_delay_s = 0.001;
  c.retry.max_delay_s = 0.01;
  return c;
}

inline std::shared_ptr<Endpoint> make_endpoint(EndpointConfig c) { return std::make_shared<Endpoint>(std::move(c)); }

//! A function-calling request as the GPT agent makes it (docs/decisions.md §4.1).
inline ChatRequest tool_request(std::string user_text = "Find red running shoes for me.") {
  ChatRequest r;
  r.model = "gpt-4o-mini";
  r.messages = {Message::system("You are a personalized shopping assistant."), Message::user(std::move(user_text))};
  r.tools_json = kSearchTool;
  r.temperature = 0.0;
  r.max_tokens = 256;
  r.seed = 2024;
  return r;
}

//! A plain text request as the user simulator makes it (docs/decisions.md §3.4).
inline ChatRequest text_request(std::string user_text = "Hello! What can I do for you today?") {
  ChatRequest r;
  r.model = "gpt-4o-mini";
  r.messages = {Message::system("Act the part of a customer."), Message::user(std::move(user_text))};
  r.temperature = 1.0;
  r.max_tokens = 150;
  return r;
}

}  // namespace pwab::llm::testing
