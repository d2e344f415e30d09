// libFuzzer target: bytes off a socket as `pwab serve` parses a request from them (net_server.h:
// parse_request_bytes: Beast's parser with the server's limits, and the head a front end sees). A parse must give
// a request, "not complete yet", or a transport refusal (400, 411, 413, 431); a request must respect the limits,
// and its path must be its target up to the query.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/net_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pwab::serve::NetOptions limits;
  limits.max_body_bytes = 512;
  limits.max_head_bytes = 2048;
  pwab::serve::ParsedRequest parsed = pwab::serve::parse_request_bytes(bytes, limits);
  if (parsed.status != 0) {
    if (parsed.request) std::abort();  // refused and given at once
    if (parsed.status != 400 && parsed.status != 411 && parsed.status != 413 && parsed.status != 431) std::abort();
    if (parsed.code.empty() || parsed.message.empty()) std::abort();
    return 0;
  }
  if (!parsed.request) return 0;
  const pwab::serve::HttpRequest& r = *parsed.request;
  if (r.body.size() > limits.max_body_bytes) std::abort();
  if (r.target.compare(0, r.path.size(), r.path) != 0) std::abort();
  if (r.path.size() < r.target.size() && r.target[r.path.size()] != '?') std::abort();
  (void)r.header("Content-Type");
  return 0;
}
