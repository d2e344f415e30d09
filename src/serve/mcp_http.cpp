#include "serve/mcp_http.h"
#include "core/json_depth.h"
#include "serve/access.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

namespace pwab::serve {

using nlohmann::json;

namespace {

constexpr const char* kSessionHeader = "Mcp-Session-Id";
constexpr const char* kVersionHeader = "MCP-Protocol-Version";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

constexpr const char* kMethodHeader = "Mcp-Method";
constexpr const char* kNameHeader = "Mcp-Name";

// A transport-level refusal: the HTTP status plus a JSON-RPC error body, so SDK clients can show the message.
void refuse(HttpResponse& res, int status, int code, const std::string& message, const json& id = nullptr,
            const json& data = nullptr) {
  json body = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
  if (!data.is_null()) body["error"]["data"] = data;
  res.status = status;
  res.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Standard base64 (RFC 4648, padded), strictly: nothing on a bad character, bad padding or non-zero spare bits.
std::optional<std::string> base64_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else if (pad > 0 || (v[k] = value(c)) < 0) {
        return std::nullopt;
      }
    }
    const uint32_t word = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    if ((pad == 1 && (word & 0xFF)) || (pad == 2 && (word & 0xFFFF))) return std::nullopt;  // non-canonical
    out.push_back(char(word >> 16));
    if (pad < 2) out.push_back(char((word >> 8) & 0xFF));
    if (pad < 1) out.push_back(char(word & 0xFF));
  }
  return out;
}

// A header value as the stateless revision encodes it: verbatim, or "=?base64?...?=" for a value that would not
// survive as a header (non-ASCII, edge whitespace). Nothing for a malformed sentinel, which then matches no body value.
std::optional<std::string> header_value(const std::string& raw) {
  constexpr std::string_view open = "=?base64?", close = "?=";
  if (raw.size() >= open.size() + close.size() && raw.compare(0, open.size(), open) == 0 &&
      raw.compare(raw.size() - close.size(), close.size(), close) == 0)
    return base64_decode(std::string_view(raw).substr(open.size(), raw.size() - open.size() - close.size()));
  return raw;
}

// A routing header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) sent twice: readers of the first and of the last
// copy would disagree about the request, so it is refused.
std::optional<std::string> duplicated_routing_header(const HttpRequest& req) {
  for (const char* name : {kVersionHeader, kMethodHeader, kNameHeader}) {
    int n = 0;
    for (const auto& [key, value] : req.headers)
      if (lower(key) == lower(name)) ++n;
    if (n > 1) return std::string(name);
  }
  return std::nullopt;
}

// 128 random bits as hex: session ids must not be guessable (the spec asks for a secure random id).
std::string random_session_id() {
  static thread_local std::random_device device;
  std::string id;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t word = device();
    for (int j = 0; j < 8; ++j, word >>= 4) id.push_back(hex[word & 0xF]);
  }
  return id;
}

// The spec asks clients to accept both application/json and text/event-stream; we answer JSON, so a client that
// says it cannot take JSON is refused (406). No Accept header means anything.
bool accepts_json(const HttpRequest& req) {
  if (!req.has_header("Accept")) return true;
  std::string accept = lower(req.header("Accept"));
  return accept.find("application/json") != std::string::npos || accept.find("*/*") != std::string::npos ||
         accept.find("application/*") != std::string::npos;
}

bool is_json_content(const HttpRequest& req) {
  return lower(req.header("Content-Type")).rfind("application/json", 0) == 0;
}

bool is_initialize(const json& message) {
  return message.is_object() && message.value("method", json()) == "initialize" && McpServer::is_request(message);
}

bool is_success_reply(const json& reply) { return reply.is_object() && reply.contains("result"); }

}  // namespace

McpHttpEndpoint::McpHttpEndpoint(McpServer& server, McpHttpOptions options)
    : server_(server), options_(std::move(options)) {
  if (!options_.clock)
    options_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
}

std::vector<HttpRoute> McpHttpEndpoint::routes() {
  return {{"POST", options_.path, [this](const HttpRequest& req, HttpResponse& res) { post(req, res); }},
          {"DELETE", options_.path, [this](const HttpRequest& req, HttpResponse& res) { remove(req, res); }},
          {"GET", options_.path, [](const HttpRequest&, HttpResponse& res) {
             res.set_header("Allow", "POST, DELETE");
             refuse(res, 405, jsonrpc::kInvalidRequest, "this server sends no server-initiated messages: use POST");
           }}};
}

std::size_t McpHttpEndpoint::n_sessions() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

bool McpHttpEndpoint::origin_allowed(const HttpRequest& req) const {
  if (!req.has_header("Origin")) return true;
  const std::string host = host_of_origin(req.header("Origin"));  // access.h
  const auto& allowed = options_.allowed_origin_hosts;
  return std::find(allowed.begin(), allowed.end(), host) != allowed.end();
}

std::string McpHttpEndpoint::open_session(const McpSession& session) {
  std::lock_guard lock(mu_);
  const double now = options_.clock();
  if (sessions_.size() >= std::max<std::size_t>(options_.max_sessions, 1)) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(),
                                   [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
    if (now - oldest->second.last_used < options_.session_idle_s) return {};  // every session is in use
    sessions_.erase(oldest);
  }
  std::string id = random_session_id();
  sessions_[id] = Entry{session, now};
  return id;
}

bool McpHttpEndpoint::find_session(const std::string& id, McpSession& out) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  it->second.last_used = options_.clock();
  out = it->second.session;
  return true;
}

void McpHttpEndpoint::update_session(const std::string& id, const McpSession& session) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  // Only `initialized` changes after initialize; a session ended meanwhile stays ended.
  if (it != sessions_.end()) it->second.session.initialized |= session.initialized;
}

void McpHttpEndpoint::post(const HttpRequest& req, HttpResponse& res) {
  if (!origin_allowed(req)) return refuse(res, 403, jsonrpc::kInvalidRequest, "requests from this Origin are refused");
  if (!accepts_json(req))
    return refuse(res, 406, jsonrpc::kInvalidRequest, "the client must accept application/json replies");
  if (!is_json_content(req))
    return refuse(res, 415, jsonrpc::kInvalidRequest, "the body must be JSON (Content-Type: application/json)");
  if (json_nests_deeper_than(req.body)) return refuse(res, 400, jsonrpc::kParseError, json_depth_message());
  json message = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return refuse(res, 400, jsonrpc::kParseError, "the body is not valid JSON");

  // Which revision the request speaks: the version header of the stateless one (2026-07-28) makes it a request
  // of its own; otherwise the handshake's session rules hold.
  const bool has_version = req.has_header(kVersionHeader);
  const std::string version = req.header(kVersionHeader);
  if (has_version && is_stateless_version(version)) return post_stateless(req, message, res);
  if (has_version && std::find(mcp_protocol_versions().begin(), mcp_protocol_versions().end(), version) ==
                         mcp_protocol_versions().end())
    return refuse(res, 400, jsonrpc::kUnsupportedProtocolVersion,
                  "unsupported MCP-Protocol-Version '" + version + "' (this server speaks " +
                      fmt::format("{}", fmt::join(mcp_all_versions(), ", ")) + ")",
                  nullptr, json{{"supported", mcp_all_versions()}, {"requested", version}});

  McpSession session;
  std::string session_id;
  if (is_initialize(message)) {
    json reply = server_.handle(message, session);
    if (is_success_reply(reply)) {
      const std::string id = open_session(session);
      if (id.empty())
        return refuse(res, 429, jsonrpc::kInvalidRequest,
                      "too many MCP sessions are open and none has been idle long enough to close: end one (DELETE "
                      "/mcp with its Mcp-Session-Id) or try again later");
      res.set_header(kSessionHeader, id);
    }
    res.body = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  if (!req.has_header(kSessionHeader)) {
    if (McpServer::is_stateless(message))
      return refuse(res, 400, jsonrpc::kHeaderMismatch,
                    "a request of the stateless revision (its envelope in params._meta) needs the MCP-Protocol-Version "
                    "header naming the same version",
                    message.is_object() ? message.value("id", json()) : json());
    return refuse(res, 400, jsonrpc::kInvalidRequest,
                  "the Mcp-Session-Id header is required (from initialize); or speak the stateless revision 2026-07-28 "
                  "(MCP-Protocol-Version: 2026-07-28 and the envelope in params._meta, no session)");
  }
  session_id = req.header(kSessionHeader);
  if (!find_session(session_id, session))
    return refuse(res, 404, jsonrpc::kInvalidRequest, "unknown or ended MCP session: initialize again");

  json reply = server_.handle(message, session);
  update_session(session_id, session);
  if (reply.is_discarded()) {
    res.status = 202;  // notifications and responses only
    return;
  }
  res.body = reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

// MCP 2026-07-28 over streamable HTTP: one JSON-RPC request (or notification) per POST, no session; the
// MCP-Protocol-Version, Mcp-Method and (for tools/call) Mcp-Name headers must repeat what the body says, so that
// an intermediary routing on the headers routes what the server executes. A refused request's status follows
// its error code (stateless_http_status).
void McpHttpEndpoint::post_stateless(const HttpRequest& req, const json& message, HttpResponse& res) {
  if (!message.is_object() || (message.contains("result") || message.contains("error")) || !message.contains("method"))
    return refuse(res, 400, jsonrpc::kInvalidRequest,
                  "the body must be a single JSON-RPC request or notification object (no batches at 2026-07-28)");
  if (!McpServer::is_request(message)) {  // a notification: acknowledged; nothing in this revision acts on one
    res.status = 202;
    return;
  }
  const json id = message["id"];
  auto fail = [&](int code, const std::string& text, const json& data = nullptr) {
    refuse(res, stateless_http_status(code), code, text, id.is_string() || id.is_number() ? id : json(), data);
  };
  if (auto twice = duplicated_routing_header(req)) return fail(jsonrpc::kHeaderMismatch, *twice + " header appears more than once");
  const json params = message.value("params", json::object());
  std::string version;
  try {
    version = McpServer::envelope_version(params);
  } catch (const JsonRpcError& e) {
    return fail(e.code, e.what());
  }
  if (req.header(kVersionHeader) != version)
    return fail(jsonrpc::kHeaderMismatch, fmt::format("the MCP-Protocol-Version header ('{}') is not the request "
                                                      "envelope's protocol version ('{}')",
                                                      req.header(kVersionHeader), version));
  const json method = message["method"];
  if (!req.has_header(kMethodHeader) || !method.is_string() || req.header(kMethodHeader) != method.get<std::string>())
    return fail(jsonrpc::kHeaderMismatch, "the Mcp-Method header must name the request's method");
  if (method == "tools/call" && params.contains("name") && !params["name"].is_null()) {
    auto named = req.has_header(kNameHeader) ? header_value(req.header(kNameHeader)) : std::nullopt;
    if (!named || !params["name"].is_string() || *named != params["name"].get<std::string>())
      return fail(jsonrpc::kHeaderMismatch, "the Mcp-Name header must name the tool the request calls");
  }
  McpSession none;  // nothing of a session is read or kept at this revision
  json reply = server_.handle(message, none);
  if (reply.is_object() && reply.contains("error")) res.status = stateless_http_status(reply["error"].value("code", 0));
  res.body = reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

void McpHttpEndpoint::remove(const HttpRequest& req, HttpResponse& res) {
  if (!origin_allowed(req)) return refuse(res, 403, jsonrpc::kInvalidRequest, "requests from this Origin are refused");
  if (!req.has_header(kSessionHeader)) return refuse(res, 400, jsonrpc::kInvalidRequest, "the Mcp-Session-Id header is required");
  std::lock_guard lock(mu_);
  if (sessions_.erase(req.header(kSessionHeader)) == 0)
    return refuse(res, 404, jsonrpc::kInvalidRequest, "unknown or ended MCP session");
  res.status = 204;
}

}  // namespace pwab::serve
