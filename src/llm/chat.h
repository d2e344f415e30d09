// src/llm/chat.h: chat completions as plain records, and the ChatModel interface every LLM user calls.
//
// Agents, the user simulator and any judge build a ChatRequest and call ChatModel::chat(); which model answers
// (an OpenAI-compatible endpoint, a record/replay cache in front of it, a local LLaMA later) is decided once,
// when the run is set up. No JSON library type appears here: tool schemas and extra request fields travel as
// JSON text. The wire format is OpenAI's chat completions API (docs/llm.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace pwab::llm {

//! One function call requested by the model.
struct ToolCall {
  std::string id;              //!< assigned by the server, echoed back in the tool result message
  std::string name;            //!< the function name, as the model wrote it (may name no real tool)
  std::string arguments_json;  //!< the arguments as the model wrote them: JSON object text, not re-serialized
};

//! One chat message. Roles: "system", "user", "assistant", "tool".
struct Message {
  std::string role;
  //! The text. An assistant message with tool calls and empty content is sent as `"content": null`.
  std::string content;
  std::vector<ToolCall> tool_calls;  //!< assistant messages only
  std::string tool_call_id;          //!< tool messages only: the ToolCall::id this result answers
  std::string name;                  //!< optional participant / function name; omitted when empty

  static Message system(std::string text) { return {"system", std::move(text), {}, {}, {}}; }
  static Message user(std::string text) { return {"user", std::move(text), {}, {}, {}}; }
  static Message assistant(std::string text) { return {"assistant", std::move(text), {}, {}, {}}; }
  static Message tool(std::string call_id, std::string text) {
    return {"tool", std::move(text), {}, std::move(call_id), {}};
  }
};

//! A chat completions request. Unset optionals are left out of the request, so the API's defaults apply (the
//! original's Reflection call relies on the default temperature, docs/decisions.md §4.1).
struct ChatRequest {
  std::string model;
  std::vector<Message> messages;
  //! Set for a raw-text completion (OpenAI's /completions API) instead of a chat: the model continues this text
  //! exactly, with no chat template. A fine-tuned PUMA model is trained on raw prompts, so it must be served
  //! this way (vLLM and the local LLaMA backend both answer /completions). `messages` and `tools_json` must be
  //! empty then; the reply's text comes back as the assistant message's content.
  std::optional<std::string> prompt;
  //! Stop sequences (sent as "stop" when not empty).
  std::vector<std::string> stop;
  //! The JSON array text of the tool schemas offered (env::tools_json()); empty = a plain text request.
  std::string tools_json;
  //! Sent only with tools: "auto" (the original's choice), "none", "required", or a JSON object text.
  std::string tool_choice = "auto";
  std::optional<double> temperature;
  //! Sampling from the k most likely tokens only; unset = the server's default (vLLM: every token; `pwab lm serve`
  //! and the local model: 50). Sent as "top_k", which vLLM, llama.cpp's server and `pwab lm serve` read (-1 = every
  //! token for all three) and OpenAI's API does not: leave it unset for OpenAI.
  std::optional<int> top_k;
  std::optional<int> max_tokens;
  std::optional<int64_t> seed;
  //! Further body fields as a JSON object text (e.g. {"response_format": {"type": "json_object"}}); "" = none.
  std::string extra_body_json;
  //! Raw-text completions: ask for the token ids and sampling log-probabilities of the completion
  //! (ChatResponse::tokens), what an RL engine trains on. An OpenAI-compatible server is sent "logprobs": 0 and
  //! "return_token_ids": true (vLLM >= 0.10.2 and `pwab lm serve` answer them); a local model always knows them.
  bool return_tokens = false;
  //! With return_tokens: also the this-many most likely tokens at each completion position (TokenTrace::
  //! top_logprobs), OpenAI's top_logprobs. Answered by a local model (`pwab lm serve`); not sent to a server.
  int top_logprobs = 0;
  //! Not sent: a sample index that is part of the cache key, so that several samples of one request at
  //! temperature > 0 (trials) are cached side by side. 0 for ordinary calls.
  int sample = 0;
  //! Raw-text completions: continue with the prompt's own words only (lexically constrained decoding, the copy-
  //! constrained search queries of docs/puma.md). The local PUMA model honours it; to a server it is sent as
  //! "prompt_words_only": true, which `pwab lm serve` honours on /v1/completions and other servers may ignore.
  bool prompt_words_only = false;
};

//! The tokens behind a raw-text completion, as the model read and sampled them.
struct TokenTrace {
  std::vector<int32_t> prompt_ids;      //!< the prompt as the model read it (BOS included); empty if not reported
  std::vector<int32_t> completion_ids;  //!< the sampled tokens, a final end-of-sequence token included
  std::vector<float> logprobs;          //!< one per completion id: its log-probability when it was sampled
  //! When asked (ChatRequest::top_logprobs = k): one per completion id, the k most likely tokens of the
  //! distribution it was drawn from, with their log-probabilities, most likely first. Empty otherwise.
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
};

//! How a reply ended up.
enum class ReplyStatus {
  kOk,
  //! A tool call's arguments were not a JSON object after every retry (RetryPolicy::invalid_reply_attempts).
  //! The model's fault, not the infrastructure's: the agent records it as its own failure. `message` holds the
  //! last reply as received.
  kInvalidToolArguments,
};
std::string_view to_string(ReplyStatus s);
//! "ok" / "invalid_tool_arguments"; DataError otherwise.
ReplyStatus parse_reply_status(std::string_view s);

struct ChatResponse {
  Message message;            //!< role "assistant"
  std::string finish_reason;  //!< "stop", "tool_calls", "length", ...
  std::string model;          //!< the requested model name (what the ledger prices)
  //! Tokens over every attempt that returned a reply (a re-asked invalid reply is billed too).
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  ReplyStatus status = ReplyStatus::kOk;
  //! Why status is not kOk, e.g. "tool call 'search_product_by_query': arguments are not valid JSON: ...".
  std::string problem;
  bool from_cache = false;  //!< replayed from the record/replay cache (cost $0)
  int attempts = 0;         //!< HTTP requests sent for this call (0 when replayed)
  //! Raw-text completions asked for several samples ("n" in extra_body_json): the texts of the choices after the
  //! first, in index order (the first is `message`).
  std::vector<std::string> more_choices;
  //! The first choice's tokens, when the request asked for them and the model reported them.
  std::optional<TokenTrace> tokens;
};

//! The model did not answer: the endpoint failed after the retries, refused the request (4xx), or answered
//! with something unusable. Not the agent's fault: the runner marks the task as errored so `--resume` runs it
//! again. The message says what happened (URL without credentials, HTTP status, an excerpt of the body,
//! attempts) and never contains the API key.
class InfraError : public Error {
 public:
  InfraError(const std::string& message, int http_status, int attempts)
      : Error(message), http_status_(http_status), attempts_(attempts) {}
  //! The last HTTP status seen; 0 when no HTTP response arrived (connection failure, timeout).
  int http_status() const { return http_status_; }
  int attempts() const { return attempts_; }

 private:
  int http_status_;
  int attempts_;
};

//! `--replay` met a request that the cache does not hold. Deliberately not an InfraError: a replay must
//! reproduce the recorded run exactly, so a miss stops the run instead of marking one task as errored.
class ReplayMissError : public RunAbortError {
 public:
  using RunAbortError::RunAbortError;
};

//! Anything that answers chat requests. Implementations are thread-safe: one instance serves every worker.
class ChatModel {
 public:
  virtual ~ChatModel() = default;
  //! Answers one request. Throws InfraError (infrastructure) or ReplayMissError (replay mode); a model that
  //! misbehaves (invalid tool arguments) is a normal return with status != kOk.
  virtual ChatResponse chat(const ChatRequest& request) = 0;
  //! What answers, for manifests and logs, e.g. "openai-compatible https://api.openai.com/v1". No secrets.
  virtual std::string describe() const = 0;
};

//! The request as its JSON wire body (keys sorted, compact). Throws UsageError when tools_json,
//! tool_choice or extra_body_json is not valid JSON of the right kind, or a raw-text request has messages.
std::string request_body_json(const ChatRequest& request);
//! The API path a request goes to, relative to the base URL: "/chat/completions" or "/completions".
std::string_view request_path(const ChatRequest& request);

//! The canonical form a cache keys on: kind, wire body and sample index, keys sorted, compact. The endpoint
//! (base URL) and the API key are not part of it (docs/llm.md "Cache key").
std::string canonical_request_json(const ChatRequest& request);

//! The problem with the tool calls' arguments ("" when every call has a JSON object as arguments).
std::string check_tool_arguments(const Message& message);

}  // namespace pwab::llm
