// The access checks in front of every route of `pwab serve` (access.h).
#include "serve/access.h"

#include "serve/http_types.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace pwab::serve {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool listed(const std::vector<std::string>& names, const std::string& host) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return lower(n) == host; });
}

// 127.a.b.c with every part a number up to 255.
bool is_ipv4_loopback(std::string_view h) {
  int parts = 0;
  std::size_t i = 0;
  while (i <= h.size()) {
    std::size_t end = h.find('.', i);
    if (end == std::string_view::npos) end = h.size();
    std::string_view part = h.substr(i, end - i);
    if (part.empty() || part.size() > 3 || !std::all_of(part.begin(), part.end(), ::isdigit)) return false;
    if (std::stoi(std::string(part)) > 255) return false;
    if (parts == 0 && part != "127") return false;
    ++parts;
    i = end + 1;
  }
  return parts == 4;
}

bool is_json_type(std::string_view content_type) {
  std::string t = lower(content_type);
  t = t.substr(0, t.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t == "application/json";
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  std::string h = lower(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" || is_ipv4_loopback(h);
}

std::string host_of_host_header(std::string_view value) {
  std::string v = lower(value);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  if (!v.empty() && v.front() == '[') return v.substr(0, v.find(']') + 1);
  return v.substr(0, v.find(':'));
}

std::string host_of_origin(std::string_view origin) {
  auto scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return {};
  std::string_view rest = origin.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find('/'));
  return host_of_host_header(rest);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // The loop runs over the longer length whatever the contents; only the lengths can show in the time taken.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::optional<AccessRefusal> check_access(const AccessPolicy& policy, const RequestFacts& r) {
  // A browser on another site: its Origin (sent with every cross-origin request and every POST) or its
  // Sec-Fetch-Site says so. Pages on this machine's loopback origins, and the listed ones, may call.
  if (r.has_origin) {
    const std::string host = host_of_origin(r.origin);
    if (host.empty() || !(is_loopback_host(host) || listed(policy.allowed_origins, host)))
      return AccessRefusal{403, "forbidden_origin",
                           fmt::format("requests from the web origin '{}' are refused (allowed: loopback origins{})",
                                       r.origin, policy.allowed_origins.empty() ? "" : " and --allowed-origin")};
  } else if (lower(r.sec_fetch_site) == "cross-site") {
    return AccessRefusal{403, "forbidden_origin", "cross-site requests from a browser are refused"};
  }
  // DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 reaches this server with
  // Host: evil.example. Without a token, only this server's own names are answered.
  if (policy.token.empty() && !r.host.empty()) {
    const std::string host = host_of_host_header(r.host);
    if (!is_loopback_host(host) && !listed(policy.allowed_hosts, host))
      return AccessRefusal{403, "forbidden_host",
                           fmt::format("Host '{}' is not a name of this server: a server on a loopback address "
                                       "answers localhost, 127.0.0.1 and [::1] (more with --allowed-host)",
                                       r.host)};
  }
  if (!policy.token.empty()) {
    constexpr std::string_view kBearer = "bearer ";
    const bool bearer = r.authorization.size() > kBearer.size() && lower(r.authorization.substr(0, kBearer.size())) == kBearer;
    if (!bearer || !constant_time_equal(std::string_view(r.authorization).substr(kBearer.size()), policy.token))
      return AccessRefusal{401, "unauthorized",
                           "this server requires a bearer token: send 'Authorization: Bearer TOKEN' (the token "
                           "`pwab serve` was started with, --token or PWAB_SERVE_TOKEN)"};
  }
  // A body must be declared JSON: an HTML form or a no-CORS fetch can only send text/plain, form or multipart
  // bodies, so this refuses every body a page on another site could send without the browser asking first.
  const bool writes = r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
  if (writes && (r.has_body || !r.content_type.empty()) && !is_json_type(r.content_type))
    return AccessRefusal{415, "unsupported_media_type",
                         fmt::format("{} {}: the body must be sent as Content-Type: application/json{}", r.method,
                                     r.path, r.content_type.empty() ? " (none was given)" : ", not " + r.content_type)};
  return std::nullopt;
}

RequestFacts request_facts(const HttpRequest& req) {
  RequestFacts f;
  f.method = req.method;
  f.path = req.path;
  f.host = req.header("Host");
  f.has_origin = req.has_header("Origin");
  f.origin = req.header("Origin");
  f.sec_fetch_site = req.header("Sec-Fetch-Site");
  f.content_type = req.header("Content-Type");
  f.authorization = req.header("Authorization");
  const std::string length = req.header("Content-Length");
  f.has_body = req.has_header("Transfer-Encoding") || (!length.empty() && length.find_first_not_of("0") != std::string::npos);
  return f;
}

}  // namespace pwab::serve
