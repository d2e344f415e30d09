#include "serve/mcp_http.h"
#include "core/json_depth.h"
#include "serve/access.h"

#include <algorithm>
#include <cctype>
#include <chrono>
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

// A transport-level refusal: the HTTP status plus a JSON-RPC error body, so SDK clients can show the message.
void refuse(HttpResponse& res, int status, int code, const std::string& message) {
  json body = {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", message}}}};
  res.status = status;
  res.body = body.dump();
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
  if (!req.has_header(kSessionHeader))
    return refuse(res, 400, jsonrpc::kInvalidRequest, "the Mcp-Session-Id header is required (from initialize)");
  session_id = req.header(kSessionHeader);
  if (!find_session(session_id, session))
    return refuse(res, 404, jsonrpc::kInvalidRequest, "unknown or ended MCP session: initialize again");
  if (req.has_header(kVersionHeader)) {
    const auto& ours = mcp_protocol_versions();
    if (std::find(ours.begin(), ours.end(), req.header(kVersionHeader)) == ours.end())
      return refuse(res, 400, jsonrpc::kInvalidRequest,
                    "unsupported MCP-Protocol-Version '" + req.header(kVersionHeader) + "'");
  }

  json reply = server_.handle(message, session);
  update_session(session_id, session);
  if (reply.is_discarded()) {
    res.status = 202;  // notifications and responses only
    return;
  }
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
