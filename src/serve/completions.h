// src/serve/completions.h: a model behind OpenAI's /v1/completions, as `pwab lm serve` serves a local PUMA model.
//
// The puma agent of another process, an evaluation harness, or an RL engine that samples elsewhere can ask a
// pwab model for raw-text completions over the wire vLLM speaks, and check the token ids it sampled against its
// own: with "logprobs" the answer carries OpenAI's logprobs object (the sampled token of each position with its
// log-probability under the sampling distribution; tokens written "token_id:<id>" as vLLM's
// --return-tokens-as-token-ids writes them), and with "return_token_ids" (vLLM's field) the choice carries
// "token_ids" and "prompt_token_ids". Routes:
//   GET  /health, GET /v1/models, POST /v1/completions
//   {"model", "prompt": "<text>", "max_tokens"? (16), "temperature"? (1.0), "n"? (1), "seed"?, "logprobs"? (0-5),
//    "return_token_ids"?, "top_k"?, "stream"? (false only), "echo"? (false only), "user"?}
// Refusals as OpenAI answers them: a 4xx with {"error": {"message", "type": "invalid_request_error", "code"}}.
// The access rules of docs/serve.md (loopback, token, Host, Origin) hold. The model answers one request at a time.
#pragma once
#include <memory>
#include <string>

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
};

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
