// src/llm/endpoint.h: one OpenAI-compatible HTTP endpoint: where requests go, how they are retried, how many
// may be in flight.
//
// An Endpoint is shared by every model that talks to the same server (the agent's chat model, an embedder),
// so its cap on requests in flight holds for all of them together. Each POST is retried on timeouts,
// connection failures, 408/409/425/429 and 5xx, with exponential backoff and jitter, honouring Retry-After;
// any other 4xx fails at once. The API key is held in an ApiKey, sent only as the Authorization header, and
// never appears in a message, a log line or a file (docs/llm.md "Security").
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "core/error.h"

namespace pwab::llm {

inline constexpr const char* kDefaultBaseUrl = "https://api.openai.com/v1";

//! A secret that does not print: reading it takes an explicit reveal().
class ApiKey {
 public:
  ApiKey() = default;
  explicit ApiKey(std::string value) : value_(std::move(value)) {}
  bool empty() const { return value_.empty(); }
  const std::string& reveal() const { return value_; }

 private:
  std::string value_;
};

struct RetryPolicy {
  //! HTTP attempts per request, the first included (the original: 10 with tenacity; 6 here, see docs/llm.md).
  int max_attempts = 6;
  //! Backoff before retry n (n = 1, 2, ...): d = min(max_delay_s, base_delay_s * 2^(n-1)), then a uniform draw
  //! in [d/2, d] (jitter, so that workers that failed together do not retry together).
  double base_delay_s = 1.0;
  double max_delay_s = 40.0;
  //! A Retry-After / retry-after-ms header replaces the backoff, up to this many seconds.
  double max_retry_after_s = 120.0;
  //! Seed of the jitter generator.
  uint64_t jitter_seed = 0x5EEDull;
  //! Replies whose tool-call arguments are not a JSON object are asked again (same request) this many times
  //! in all before the call returns ReplyStatus::kInvalidToolArguments. No backoff between them.
  int invalid_reply_attempts = 3;
};

//! Where and how requests are sent. The model name is not here: it belongs to each request.
struct EndpointConfig {
  std::string base_url = kDefaultBaseUrl;  //!< ".../v1"; a trailing '/' is ignored
  ApiKey api_key;                          //!< sent as "Authorization: Bearer <key>" when not empty
  double timeout_s = 120;                  //!< whole request, per attempt
  double connect_timeout_s = 10;
  int max_in_flight = 8;  //!< requests in flight at once over this endpoint (all threads, all models)
  RetryPolicy retry;
  //! Receives one line per retry ("... HTTP 429 ..., retrying in 2.1 s (attempt 2 of 6)"); lines never hold
  //! the key. Null = silent.
  std::function<void(const std::string&)> log;

  //! The settings as a JSON object text for run manifests: base URL without credentials, timeouts, in-flight
  //! cap, retry policy, and "api_key_set": true/false (never the key).
  std::string describe_json() const;
};

//! The values given on the command line ("" = not given), for one model role (agent or user simulator).
struct EndpointFlags {
  std::string base_url;
  std::string api_key;
};
//! OPENAI_BASE_URL and OPENAI_API_KEY as the CLI read them ("" = unset). The library never reads the
//! environment itself (docs/decisions.md, code practices §7).
struct EndpointEnv {
  std::string base_url;
  std::string api_key;
};

//! Each of base URL and key comes from the flag when given, else the environment, else `defaults`. The other
//! fields are those of `defaults`. Throws UsageError when the base URL is not an http:// or https:// URL.
EndpointConfig resolve_endpoint(const EndpointFlags& flags, const EndpointEnv& env, EndpointConfig defaults = {});

//! UsageError when a request to this endpoint cannot succeed: no API key for api.openai.com. Call it before
//! a run that sends requests (not before a replay, which sends none).
void check_endpoint_usable(const EndpointConfig& config);

//! `url` with any "user:password@" removed, for messages.
std::string redact_url(std::string_view url);
//! What no message, log line or record may show for this endpoint, longest first: the API key, and a base URL's
//! userinfo as written, percent-decoded and base64-encoded (curl's Basic Authorization), and its password.
std::vector<std::string> endpoint_secrets(const EndpointConfig& config);
//! `text` with every one of `secrets` replaced by "[redacted]".
std::string redact_secrets(std::string text, const std::vector<std::string>& secrets);

//! A successful POST.
struct PostResult {
  std::string body;
  int attempts = 0;  //!< HTTP requests sent, this one included
};

class Endpoint {
 public:
  //! Checks `body` of a 2xx reply: returns "" to accept it, or a problem, which is retried like a 5xx.
  using BodyCheck = std::function<std::string(const std::string& body)>;

  explicit Endpoint(EndpointConfig config);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  //! POSTs JSON `body` to base_url + `path` (e.g. "/chat/completions") with the retry policy and returns the
  //! accepted 2xx body. Waits for a free slot first (max_in_flight); backoff waits do not hold a slot.
  //! Throws InfraError after the last attempt, or at once on a non-retryable status (400, 401, 403, 404, ...).
  //! Thread-safe.
  PostResult post_json(std::string_view path, const std::string& body, const BodyCheck& check = {}) const;

  const EndpointConfig& config() const;
  //! base URL without credentials.
  std::string display_url() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pwab::llm
