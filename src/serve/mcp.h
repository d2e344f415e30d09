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
// MCP's own codes (revision 2026-07-28, allocated from -32020).
inline constexpr int kHeaderMismatch = -32020;             //!< HTTP headers disagree with the body, or are missing
inline constexpr int kMissingClientCapability = -32021;    //!< unused: this server needs no client capability
inline constexpr int kUnsupportedProtocolVersion = -32022;  //!< data: {"supported": [...], "requested": "..."}
}  // namespace jsonrpc

//! The MCP protocol versions reached by the `initialize` handshake, newest first (the tools-only subset is the
//! same in each).
const std::vector<std::string>& mcp_protocol_versions();
//! The stateless revisions, newest first ("2026-07-28"): no initialize and no session; every request carries
//! its protocol version and the client's capabilities in params._meta (the "envelope" below), and
//! `server/discover` says what the server speaks.
const std::vector<std::string>& mcp_stateless_versions();
//! Every version spoken, stateless ones first, newest first (server/discover's supportedVersions).
std::vector<std::string> mcp_all_versions();
bool is_stateless_version(std::string_view version);

//! The keys of the stateless revision's per-request envelope in params._meta.
inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

//! What one client connection has negotiated (one per stdio process, one per Mcp-Session-Id over HTTP).
struct McpSession {
  std::string protocol_version;  //!< empty until `initialize`
  bool initialized = false;      //!< the client sent notifications/initialized
  //! OpenEnv's plain JSON-RPC (POST /mcp with neither session nor version header, openenv.h): tools/list and
  //! tools/call are answered without a handshake, as OpenEnv's own servers answer them.
  bool plain = false;
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
  //! True when a request is of the stateless revision: it carries the envelope (params._meta with the protocol
  //! version or the client's capabilities) or is `server/discover`. Such a request is answered on its own,
  //! whatever the session negotiated.
  static bool is_stateless(const nlohmann::json& message);
  //! The protocol version of a stateless request's envelope. Throws JsonRpcError: kInvalidParams when the
  //! envelope or one of its required keys (protocol version, client capabilities) is missing or mistyped.
  static std::string envelope_version(const nlohmann::json& params);

 private:
  nlohmann::json handle_one(const nlohmann::json& message, McpSession& session);
  nlohmann::json dispatch(const std::string& method, const nlohmann::json& params, McpSession& session);
  nlohmann::json dispatch_stateless(const std::string& method, const nlohmann::json& params);
  nlohmann::json initialize(const nlohmann::json& params, McpSession& session) const;
  nlohmann::json call(const nlohmann::json& params);

  EpisodeService& service_;
  std::string version_;
  nlohmann::json tools_;
};

//! A JSON-RPC error thrown by a method handler; McpServer turns it into the error reply.
struct JsonRpcError : Error {
  JsonRpcError(int code, const std::string& message, nlohmann::json data = nullptr)
      : Error(message), code(code), data(std::move(data)) {}
  int code;
  nlohmann::json data;  //!< the error's "data" member when not null
};

//! The HTTP status of a stateless-revision reply carrying this JSON-RPC error code: 400 for a malformed or refused
//! request, 404 for an unknown method, 200 otherwise (MCP 2026-07-28, streamable HTTP).
int stateless_http_status(int code);

//! The stdio transport: reads newline-delimited JSON-RPC messages from `in` and writes each reply as one line on
//! `out` (flushed), until end of input. Blank lines are skipped. Nothing else is written to `out`.
void serve_mcp_stdio(McpServer& server, std::istream& in, std::ostream& out);

}  // namespace pwab::serve
