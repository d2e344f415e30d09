// src/serve/mcp_http.h: MCP's streamable HTTP transport for McpServer, as routes at /mcp of `pwab serve`.
//
// POST /mcp carries JSON-RPC messages and is answered with application/json (the spec lets a server answer without
// an SSE stream): 200 with the reply for requests, 202 for notifications and responses. Two eras of the protocol:
//   - stateless (2026-07-28): a request whose MCP-Protocol-Version header names a stateless revision stands alone:
//     no initialize, no session id; its envelope (params._meta) must name the same version and the Mcp-Method /
//     Mcp-Name headers repeat its method and tool (else -32020, 400); one request per POST; an error's HTTP
//     status follows its code (400, 404 for an unknown method);
//   - handshake (2025-11-25 and earlier): `initialize` opens an MCP session and its reply carries the
//     Mcp-Session-Id header; every later request must send it back (400 without it, 404 for an unknown or ended
//     one: the client then initializes again).
// An MCP-Protocol-Version this server does not speak is -32022 (400) with the versions it does. DELETE /mcp ends the session; GET /mcp
// answers 405, as there are no server-initiated messages. A request with an Origin header from anywhere but this
// machine (localhost, 127.0.0.1, [::1]) gets 403, against DNS rebinding. Thread-safe: requests of one session may
// run concurrently, since each tool call is its own episode step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "serve/http_types.h"
#include "serve/mcp.h"

namespace pwab::serve {

struct McpHttpOptions {
  std::string path = "/mcp";
  //! MCP sessions kept at once. When the table is full, opening one more drops the least recently used session
  //! if it has been idle for session_idle_s (its client gets 404 and initializes again, as the spec says);
  //! otherwise the initialize is refused (429), so a flood of initialize requests cannot push out sessions in
  //! use. Episodes are not tied to MCP sessions and survive it.
  std::size_t max_sessions = 1000;
  double session_idle_s = 600;
  //! Monotonic seconds; the steady clock when empty (tests pass a hand-moved one).
  std::function<double()> clock;
  //! Hosts an Origin header may name (browsers send it; other clients usually do not).
  std::vector<std::string> allowed_origin_hosts = {"localhost", "127.0.0.1", "[::1]"};
};

class McpHttpEndpoint {
 public:
  //! `server` must outlive the endpoint, and the endpoint the HTTP server its routes are on.
  explicit McpHttpEndpoint(McpServer& server, McpHttpOptions options = {});

  //! The POST, GET and DELETE routes of options.path (HttpOptions::extra_routes).
  std::vector<HttpRoute> routes();

  //! MCP sessions open now.
  std::size_t n_sessions() const;

 private:
  struct Entry {
    McpSession session;
    double last_used = 0;
  };

  void post(const HttpRequest& req, HttpResponse& res);
  void post_stateless(const HttpRequest& req, const nlohmann::json& message, HttpResponse& res);
  void remove(const HttpRequest& req, HttpResponse& res);
  bool origin_allowed(const HttpRequest& req) const;
  //! The new session's id, or "" when the table is full and no session has been idle long enough to drop.
  std::string open_session(const McpSession& session);
  bool find_session(const std::string& id, McpSession& out);
  void update_session(const std::string& id, const McpSession& session);

  McpServer& server_;
  McpHttpOptions options_;
  mutable std::mutex mu_;  // guards sessions_
  std::unordered_map<std::string, Entry> sessions_;
};

}  // namespace pwab::serve
