// test/support/openai_test_server.h: a real HTTP server on loopback that speaks the OpenAI protocol with
// scripted replies, for tests of the LLM client, agents, the user simulator and the CLI end to end.
//
//   pwab::test::OpenAITestServer server;                      // listening on 127.0.0.1:<ephemeral>
//   server.push(ScriptedReply::rate_limited("1"));            // 429 with Retry-After: 1, then ...
//   server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "red shoes"})"));
//   ... point the client at server.base_url() ...
//   server.requests()[0].body  /  server.requests()[0].header("authorization")  /  server.max_in_flight()
//
// Chat requests (POST /v1/chat/completions, and raw-text POST /v1/completions: one queue for both) take the next scripted chat reply, or the chat handler's answer
// when the queue is empty; with neither, the server answers 400 "no scripted reply" (not retried, so a test
// that asks more than it scripted fails at once). Embedding requests (POST /v1/embeddings) likewise, with a
// default handler that returns default_embedding(text) for each input.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pwab::test {

//! One scripted answer.
struct ScriptedReply {
  int status = 200;
  std::string body;  //!< sent as is, Content-Type application/json
  std::vector<std::pair<std::string, std::string>> headers;
  //! Wait this long before answering: a stall past the client's timeout when longer. Cut short when the
  //! server stops.
  double delay_s = 0;

  //! A chat reply with text content.
  static ScriptedReply text(std::string_view content, int prompt_tokens = 11, int completion_tokens = 7);
  //! A raw-text completions reply (POST /v1/completions) with this text.
  static ScriptedReply completion(std::string_view text, int prompt_tokens = 17, int completion_tokens = 5);
  //! A chat reply with one tool call; `arguments` is sent verbatim (malformed JSON and unknown names too).
  static ScriptedReply tool_call(std::string_view name, std::string_view arguments, std::string_view id = "call_1",
                                 int prompt_tokens = 13, int completion_tokens = 9);
  //! An OpenAI-style error object {"error": {"message": ..., "type": ...}} with this status.
  static ScriptedReply error(int status, std::string_view message);
  //! 429 with a Retry-After header ("1", or an HTTP date).
  static ScriptedReply rate_limited(std::string_view retry_after);
  //! An embeddings reply with these vectors (index order) and usage.
  static ScriptedReply embeddings(const std::vector<std::vector<float>>& vectors, int prompt_tokens = 5);
  //! The same reply, answered after `seconds`.
  ScriptedReply after(double seconds) const;
};

//! One request as the server received it.
struct ReceivedRequest {
  std::string path;  //!< e.g. "/v1/chat/completions"
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  //!< names lower-cased
  //! The value of a header (name case-insensitive), "" when absent.
  std::string header(std::string_view name) const;
};

class OpenAITestServer {
 public:
  using Handler = std::function<ScriptedReply(const ReceivedRequest&)>;

  //! Starts listening on 127.0.0.1 on an ephemeral port; returns once the server accepts connections.
  OpenAITestServer();
  //! Stops (see stop()).
  ~OpenAITestServer();
  OpenAITestServer(const OpenAITestServer&) = delete;
  OpenAITestServer& operator=(const OpenAITestServer&) = delete;

  int port() const;
  //! "http://127.0.0.1:<port>/v1": the base URL to give the client.
  std::string base_url() const;

  //! Queues the next reply to /v1/chat/completions.
  void push(ScriptedReply reply);
  //! Queues the next reply to /v1/embeddings.
  void push_embeddings(ScriptedReply reply);
  //! Answers chat requests once the queue is empty (null = 400 "no scripted reply").
  void set_chat_handler(Handler handler);
  //! Answers embedding requests once the queue is empty (default: default_embedding of each input).
  void set_embeddings_handler(Handler handler);

  //! Every request received so far, in arrival order.
  std::vector<ReceivedRequest> requests() const;
  std::size_t n_requests() const;
  //! Scripted replies not used yet (both queues).
  std::size_t n_pending() const;
  //! The most requests that were being answered at the same moment.
  int max_in_flight() const;

  //! Stops listening and cuts pending stalls short; idempotent. Later requests fail to connect.
  void stop();

  //! The vector the default embeddings handler returns for `text`: 8 deterministic values (not normalized).
  static std::vector<float> default_embedding(std::string_view text);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::test
