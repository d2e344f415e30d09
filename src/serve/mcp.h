// src/serve/mcp.h: the PersonalWAB environment as an MCP server (Model Context Protocol over JSON-RPC 2.0).
//
// McpServer answers MCP messages with the tools of an EpisodeService: episode management (list_tasks,
// start_episode, episode_state, end_episode, environment_info) and the environment's own functions (respond,
// search_product_by_query, get_recommendations_by_history, add_product_review, get_product_details_by_asin, stop),
// each taking the episode_id plus the function's arguments. It knows nothing of transports: serve_mcp_stdio() below
// is the stdio transport (`pwab mcp`), mcp_http.h the streamable HTTP one (`/mcp` on `pwab serve`). It only
// answers requests (tools, no resources, prompts or server-initiated messages). docs/mcp.md describes the tools.
#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "serve/episode_service.h"

namespace pwab::serve {

//! JSON-RPC 2.0 error codes MCP uses.
namespace jsonrpc {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
}  // namespace jsonrpc

//! The MCP protocol versions this server speaks, newest first (the tools-only subset is the same in each).
const std::vector<std::string>& mcp_protocol_versions();

//! What one client connection has negotiated (one per stdio process, one per Mcp-Session-Id over HTTP).
struct McpSession {
  std::string protocol_version;  //!< empty until `initialize`
  bool initialized = false;      //!< the client sent notifications/initialized
};

class McpServer {
 public:
  //! `service` must outlive the server; `server_version` is reported as serverInfo.version.
  McpServer(EpisodeService& service, std::string server_version);

  //! One JSON-RPC message or batch as text. Returns the reply as text, or "" when there is nothing to answer
  //! (notifications and client responses). Malformed JSON gets a -32700 error reply, never an exception.
  std::string handle_text(std::string_view text, McpSession& session);
  //! One parsed message (object) or batch (array). Returns the reply, or a discarded value when there is none.
  nlohmann::json handle(const nlohmann::json& message, McpSession& session);

  //! The `tools/list` result: every tool with its JSON Schema inputSchema.
  const nlohmann::json& tool_list() const { return tools_; }
  //! One `tools/call`: a CallToolResult ({content, structuredContent, isError}). Failures of the call itself (an
  //! unknown episode, bad arguments, a finished episode) are results with isError, as MCP asks, so a model sees
  //! them. InvalidParams for an unknown tool name.
  nlohmann::json call_tool(std::string_view name, const nlohmann::json& arguments);

  //! True when a message (object) is a request: it has a method and an id, so it is owed a reply.
  static bool is_request(const nlohmann::json& message);

 private:
  nlohmann::json handle_one(const nlohmann::json& message, McpSession& session);
  nlohmann::json dispatch(const std::string& method, const nlohmann::json& params, McpSession& session);
  nlohmann::json initialize(const nlohmann::json& params, McpSession& session) const;

  EpisodeService& service_;
  std::string version_;
  nlohmann::json tools_;
};

//! A JSON-RPC error thrown by a method handler; McpServer turns it into the error reply.
struct JsonRpcError : Error {
  JsonRpcError(int code, const std::string& message) : Error(message), code(code) {}
  int code;
};

//! The stdio transport: reads newline-delimited JSON-RPC messages from `in` and writes each reply as one line on
//! `out` (flushed), until end of input. Blank lines are skipped. Nothing else is written to `out`.
void serve_mcp_stdio(McpServer& server, std::istream& in, std::ostream& out);

}  // namespace pwab::serve
