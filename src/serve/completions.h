// src/serve/completions.h: a model behind OpenAI's /v1/completions and /v1/chat/completions, as `pwab lm serve`
// serves a local model (a PUMA model, or any Hugging Face LLaMA directory).
//
// The puma agent of another process, an evaluation harness (Inspect AI, verifiers), the official `openai` client,
// or an RL engine that samples elsewhere can ask a pwab model for completions over the wire vLLM speaks, and check
// the token ids it sampled against its own: with "logprobs" the answer carries OpenAI's logprobs object (the
// sampled token of each position with its log-probability under the sampling distribution, and the k most likely
// tokens of that distribution when asked; tokens written "token_id:<id>" as vLLM's --return-tokens-as-token-ids
// writes them), and with "return_token_ids" (vLLM's field)
// the choice carries "token_ids" and "prompt_token_ids". Routes:
//   GET  /health, GET /v1/models
//   POST /v1/completions
//   {"model", "prompt": "<text>", "max_tokens"? (16), "temperature"? (1.0), "n"? (1), "seed"?, "logprobs"? (0-5),
//    "return_token_ids"?, "prompt_words_only"? (pwab's own: continue with the prompt's words only, the copy-
//    constrained search queries of docs/puma.md), "top_k"? (50; 0 or -1 = every token, as vLLM), "stream"? (false
//    only), "echo"? (false only), "user"?}
//   POST /v1/chat/completions
//   {"model", "messages", "tools"?, "tool_choice"? ("auto"|"none"), "parallel_tool_calls"?, "max_tokens"? or
//    "max_completion_tokens"? (512), "temperature"? (1.0), "n"? (1), "seed"?, "logprobs"? (bool),
//    "top_logprobs"? (0-20, with "logprobs": true), "stop"? (text or up to 4 texts), "return_token_ids"?, "top_k"? (as
//    above), "stream"? (false only), "user"?}
// A chat is rendered as one ChatML prompt (render_chat_prompt, docs/llama.md "Chat format") and the model continues
// it as a raw text; <tool_call> blocks in the reply come back as OpenAI "tool_calls" (parse_tool_calls).
// Refusals as OpenAI answers them: a 4xx with {"error": {"message", "type": "invalid_request_error", "code"}}.
// The access rules of docs/serve.md (loopback, token, Host, Origin) hold. The model answers one request at a time.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"
#include "serve/access.h"

namespace pwab::serve {

struct CompletionsOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  AccessPolicy access;
  std::size_t max_body_bytes = 4 << 20;
  int max_tokens_limit = 4096;  //!< the largest max_tokens a request may ask for
  int max_n = 64;               //!< the most choices one request may ask for
  int chat_max_tokens = 512;    //!< a chat request's max_tokens when it gives none
};

//! The ChatML prompt of an OpenAI chat (`messages_json`: the request's "messages" array; `tools_json`: its
//! "tools" array or ""), ending with the assistant's header, character for character what the chat template of
//! test/ecosystem/tiny_models.py (ChatML, tools listed in the system turn, Hermes <tool_call> blocks) renders
//! with transformers' apply_chat_template(add_generation_prompt=True). Throws UsageError saying what is wrong
//! with a message (an unknown role, a system message after the first, a non-text content part, ...).
std::string render_chat_prompt(std::string_view messages_json, std::string_view tools_json);

//! A reply split into its text and the tool calls written as <tool_call>{"name": ..., "arguments": {...}}
//! </tool_call> blocks (Hermes). A block whose inside is not such an object stays in the text, as written.
struct ParsedReply {
  std::string content;  //!< the text outside the parsed blocks (whitespace-trimmed when there are calls)
  std::vector<llm::ToolCall> tool_calls;  //!< ids left empty; arguments as compact JSON object text
};
ParsedReply parse_tool_calls(std::string_view text);

class CompletionsServer {
 public:
  //! `model` answers raw-text requests (ChatRequest::prompt) with their TokenTrace when asked; it must outlive
  //! the server. `name` is the model id the server answers to ("model" must match it, or be absent).
  CompletionsServer(llm::ChatModel& model, std::string name, CompletionsOptions options);
  ~CompletionsServer();
  CompletionsServer(const CompletionsServer&) = delete;
  CompletionsServer& operator=(const CompletionsServer&) = delete;

  int port() const;
  std::string url() const;
  void start();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::serve
