#include "llm/endpoint.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <semaphore>
#include <thread>
#include <vector>

#include "core/rng.h"
#include "core/text.h"
#include "core/version.h"
#include "llm/chat.h"
#include "llm/wire.h"

namespace pwab::llm {
namespace {

void global_init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && ascii_lower(s.substr(0, prefix.size())) == prefix;
}

// The authority part of an http(s) URL ("user:pw@host:port"), as [begin, end) offsets; npos when none.
std::pair<std::size_t, std::size_t> authority_range(std::string_view url) {
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return {std::string_view::npos, std::string_view::npos};
  std::size_t begin = scheme_end + 3;
  std::size_t end = url.find_first_of("/?#", begin);
  if (end == std::string_view::npos) end = url.size();
  return {begin, end};
}

std::string host_of(std::string_view url) {
  auto [begin, end] = authority_range(url);
  if (begin == std::string_view::npos) return {};
  std::string_view authority = url.substr(begin, end - begin);
  if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  if (std::size_t colon = authority.find(':'); colon != std::string_view::npos) authority = authority.substr(0, colon);
  return ascii_lower(authority);
}

bool retryable_status(long status) {
  return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

// Transport failures worth another attempt; the rest are configuration errors that will fail again.
bool retryable_curl(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_FAILED_INIT:
      return false;
    default:
      return true;
  }
}

// One HTTP exchange, as received.
struct Exchange {
  CURLcode code = CURLE_OK;
  std::string curl_error;
  long status = 0;
  std::string body;
  std::optional<double> retry_after_s;  // from retry-after-ms or Retry-After
};

std::optional<double> parse_seconds(std::string_view value) {
  std::string v(trim(value));
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && *end == '\0' && std::isfinite(s)) return std::max(0.0, s);
  // An HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT").
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<Exchange*>(user)->body.append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue or a redirect): forget the old headers
    ex->retry_after_s.reset();
    return size * n;
  }
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name = ascii_lower(trim(line.substr(0, colon)));
  std::string_view value = trim(line.substr(colon + 1));
  if (name == "retry-after-ms") {
    if (auto ms = parse_seconds(value)) ex->retry_after_s = *ms / 1000.0;
  } else if (name == "retry-after" && !ex->retry_after_s) {
    ex->retry_after_s = parse_seconds(value);
  }
  return size * n;
}

}  // namespace

std::string redact_url(std::string_view url) {
  auto [begin, end] = authority_range(url);
  if (begin == std::string_view::npos) return std::string(url);
  std::string_view authority = url.substr(begin, end - begin);
  std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, begin)) + std::string(authority.substr(at + 1)) + std::string(url.substr(end));
}

std::string EndpointConfig::describe_json() const {
  nlohmann::json j;
  j["base_url"] = redact_url(base_url);
  j["api_key_set"] = !api_key.empty();
  j["timeout_s"] = timeout_s;
  j["connect_timeout_s"] = connect_timeout_s;
  j["max_in_flight"] = max_in_flight;
  j["retry"] = {{"max_attempts", retry.max_attempts},
                {"base_delay_s", retry.base_delay_s},
                {"max_delay_s", retry.max_delay_s},
                {"max_retry_after_s", retry.max_retry_after_s},
                {"invalid_reply_attempts", retry.invalid_reply_attempts}};
  return j.dump();
}

EndpointConfig resolve_endpoint(const EndpointFlags& flags, const EndpointEnv& env, EndpointConfig defaults) {
  EndpointConfig c = std::move(defaults);
  if (!flags.base_url.empty()) {
    c.base_url = flags.base_url;
  } else if (!env.base_url.empty()) {
    c.base_url = env.base_url;
  }
  if (!flags.api_key.empty()) {
    c.api_key = ApiKey(flags.api_key);
  } else if (!env.api_key.empty()) {
    c.api_key = ApiKey(env.api_key);
  }
  std::string url(trim(c.base_url));
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!starts_with_ci(url, "http://") && !starts_with_ci(url, "https://"))
    throw UsageError("LLM base URL '" + redact_url(url) + "' is not an http:// or https:// URL");
  if (host_of(url).empty()) throw UsageError("LLM base URL '" + redact_url(url) + "' has no host");
  c.base_url = url;
  return c;
}

void check_endpoint_usable(const EndpointConfig& config) {
  if (config.api_key.empty() && host_of(config.base_url) == "api.openai.com")
    throw UsageError("no API key for " + redact_url(config.base_url) +
                     ": set OPENAI_API_KEY or pass the API key option");
}

namespace {

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string percent_decoded(std::string_view in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size() && std::isxdigit(uint8_t(in[i + 1])) && std::isxdigit(uint8_t(in[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> endpoint_secrets(const EndpointConfig& c) {
  std::vector<std::string> out;
  if (!c.api_key.empty()) out.push_back(c.api_key.reveal());
  auto [begin, end] = authority_range(c.base_url);
  if (begin == std::string_view::npos) return out;
  std::string_view authority = std::string_view(c.base_url).substr(begin, end - begin);
  const std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return out;
  // user:password as written, decoded, and as curl sends it (Basic base64(user:password)); a server that echoes
  // the request's headers in an error would otherwise put the credentials in the record.
  const std::string userinfo(authority.substr(0, at)), decoded = percent_decoded(userinfo);
  for (const std::string& v : {userinfo, decoded, base64(decoded)})
    if (!v.empty()) out.push_back(v);
  const std::size_t colon = decoded.find(':');
  if (colon != std::string::npos && decoded.size() - colon - 1 >= 4) {  // the password alone, unless trivially short
    out.push_back(decoded.substr(colon + 1));
    const std::size_t raw_colon = userinfo.find(':');
    if (raw_colon != std::string::npos) out.push_back(userinfo.substr(raw_colon + 1));
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string redact_secrets(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) text = redact_secret(text, secret);  // longest first
  return text;
}

struct Endpoint::State {
  EndpointConfig config;
  std::string display_url;
  std::vector<std::string> secrets;  // what no message may show (the key, a URL's credentials)
  std::counting_semaphore<> slots;
  std::mutex pool_mutex;
  std::vector<CURL*> pool;  // idle easy handles; each keeps its connection cache
  std::mutex rng_mutex;
  Rng rng;

  explicit State(EndpointConfig c)
      : config(std::move(c)), display_url(redact_url(config.base_url)), secrets(endpoint_secrets(config)),
        slots(config.max_in_flight),
        rng(config.retry.jitter_seed) {}

  CURL* acquire() {
    {
      std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        CURL* h = pool.back();
        pool.pop_back();
        curl_easy_reset(h);
        return h;
      }
    }
    CURL* h = curl_easy_init();
    if (!h) throw InfraError("cannot create an HTTP handle (libcurl)", 0, 0);
    return h;
  }
  void release(CURL* h) {
    std::lock_guard lock(pool_mutex);
    pool.push_back(h);
  }

  double backoff_s(int retry_index) {
    const RetryPolicy& p = config.retry;
    double d = std::min(p.max_delay_s, p.base_delay_s * std::ldexp(1.0, std::min(retry_index - 1, 60)));
    std::lock_guard lock(rng_mutex);
    return d * (0.5 + 0.5 * rng.uniform());
  }

  // Sends once, holding one in-flight slot for the duration of the exchange.
  Exchange send(const std::string& url, const std::string& body) {
    Exchange ex;
    slots.acquire();
    CURL* h = nullptr;
    try {
      h = acquire();
    } catch (...) {
      slots.release();
      throw;
    }
    std::string auth;
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip for long prompts
    if (!config.api_key.empty()) {
      auth = "Authorization: Bearer " + config.api_key.reveal();
      headers = curl_slist_append(headers, auth.c_str());
    }
    char errbuf[CURL_ERROR_SIZE] = {0};
    std::string agent = std::string("pwab/") + kVersion;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, agent.c_str());
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::ceil(config.timeout_s * 1000)));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::ceil(config.connect_timeout_s * 1000)));
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
    ex.code = curl_easy_perform(h);
    if (ex.code == CURLE_OK) {
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ex.status);
    } else {
      ex.curl_error = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(ex.code));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
    curl_slist_free_all(headers);
    std::fill(auth.begin(), auth.end(), '\0');
    if (ex.code == CURLE_OK) {
      release(h);
    } else {
      curl_easy_cleanup(h);  // a broken connection is not worth keeping
    }
    slots.release();
    return ex;
  }
};

Endpoint::Endpoint(EndpointConfig config) {
  if (config.max_in_flight < 1) throw UsageError("LLM endpoint: max_in_flight must be at least 1");
  if (config.retry.max_attempts < 1) throw UsageError("LLM endpoint: retry.max_attempts must be at least 1");
  if (config.retry.invalid_reply_attempts < 1)
    throw UsageError("LLM endpoint: retry.invalid_reply_attempts must be at least 1");
  if (!(config.timeout_s > 0) || !(config.connect_timeout_s > 0))
    throw UsageError("LLM endpoint: timeouts must be positive");
  global_init_curl();
  state_ = std::make_unique<State>(std::move(config));
}

Endpoint::~Endpoint() {
  for (CURL* h : state_->pool) curl_easy_cleanup(h);
}

const EndpointConfig& Endpoint::config() const { return state_->config; }
std::string Endpoint::display_url() const { return state_->display_url; }

PostResult Endpoint::post_json(std::string_view path, const std::string& body, const BodyCheck& check) const {
  State& s = *state_;
  const RetryPolicy& policy = s.config.retry;
  const std::string url = s.config.base_url + std::string(path);
  const std::string shown = "POST " + s.display_url + std::string(path);
  const auto hide = [&s](std::string text) { return redact_secrets(std::move(text), s.secrets); };
  for (int attempt = 1;; ++attempt) {
    Exchange ex = s.send(url, body);
    std::string problem;
    bool retry = true;
    int status = static_cast<int>(ex.status);
    if (ex.code != CURLE_OK) {
      problem = ex.code == CURLE_OPERATION_TIMEDOUT ? "timed out (" + hide(ex.curl_error) + ")" : hide(ex.curl_error);
      retry = retryable_curl(ex.code);
    } else if (ex.status >= 200 && ex.status < 300) {
      problem = check ? check(ex.body) : std::string();
      if (problem.empty()) return PostResult{std::move(ex.body), attempt};
      problem = "unusable reply: " + hide(problem);
    } else {
      problem = "HTTP " + std::to_string(ex.status) + ": " + body_excerpt(hide(ex.body), "");
      retry = retryable_status(ex.status);
    }
    if (!retry) throw InfraError(shown + " failed: " + problem, status, attempt);
    if (attempt >= policy.max_attempts)
      throw InfraError(shown + " failed after " + std::to_string(attempt) + " attempt" + (attempt == 1 ? "" : "s") +
                           "; last: " + problem,
                       status, attempt);
    double wait = ex.retry_after_s ? std::min(*ex.retry_after_s, policy.max_retry_after_s) : s.backoff_s(attempt);
    if (s.config.log) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.2f", wait);
      s.config.log(shown + ": " + problem + "; retrying in " + secs + " s (attempt " + std::to_string(attempt + 1) +
                   " of " + std::to_string(policy.max_attempts) + ")");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

}  // namespace pwab::llm
