// src/serve/openenv.h: OpenEnv's contract over the episode service: `POST /reset`, `POST /step`, `GET /state`,
// `GET /schema`, `GET /metadata`, `GET /health`, the persistent WebSocket session at `/ws`, and OpenEnv's MCP side.
//
// OpenEnv (huggingface/OpenEnv, package `openenv`, read at 0.10.0: openenv/core/env_server/types.py,
// http_server.py, mcp_types.py and the clients in openenv/core) is how RL engines that use its clients (TRL's
// OpenEnv guide) drive remote environments: a rollout worker resets an episode, steps it with actions, and
// reads back {observation, reward, done}. Here an OpenEnv episode is an episode of EpisodeService (same rules,
// same records with --out), and:
//   - reset's fields are OpenEnv's (seed, episode_id) plus pwab's: task ("test/17"; or split and index; or none,
//     then a task of the split, train by default, drawn from the seed), track, user_sim, max_steps, trial
//     ("next" by default: every rollout of a task with --out is a trial of its own), history;
//   - an action is {"name", "arguments"} (or an OpenAI tool call), as the service takes it;
//   - the observation is a JSON object whose "text" is what the environment said (the tool's output, the user's
//     reply); reward is 0 until the episode finishes, then the benchmark's score of the episode (result
//     accuracy of its best attempt with the right function, metrics::score_task), and done says it finished.
//     A finished episode is ended at once (its record is written then); the observation carries its score;
//   - over HTTP the episode is named by the episode_id that reset returned (a field of /step's body, a query
//     parameter of /state); over the WebSocket, one connection is one session playing one episode at a time:
//     a reset ends the session's open episode (recorded as ended by the client), `close` does the same, and a
//     connection that drops drops its unfinished episode without a record.
// OpenEnv's MCP side (huggingface/OpenEnv 0.10, http_server.py and mcp_client.py) is here too:
//   - plain JSON-RPC at POST /mcp (no Mcp-Session-Id, no MCP-Protocol-Version header: what OpenEnv's clients and
//     `openenv validate` send), always answered 200 with a JSON-RPC reply: `openenv/session/create` makes a session
//     (a server-side slot for one episode at a time), `openenv/session/close` ends it, and `tools/list` /
//     `tools/call` with params.session_id list the environment's functions and play them as steps of that
//     session's episode; without a session_id they are pwab's MCP tools (mcp.h), episode_id in the arguments;
//   - `GET /ws?session_id=` attaches the WebSocket to such a session (MCPToolClient's production mode), so its
//     reset and the HTTP tool calls act on the same episode; a WebSocket message {"type": "mcp", "data":
//     <JSON-RPC>} is answered {"type": "mcp", "data": <reply>} with the connection's own session;
//   - a step's action may be OpenEnv's MCP actions: {"type": "list_tools"} (the session's tools, no episode needed)
//     and {"type": "call_tool", "tool_name", "arguments"} (one step, the observation adds tool_name and result);
//   - a WebSocket upgrade at /mcp carries the plain JSON-RPC above, one message per request.
// Refusals keep OpenEnv's shapes: over HTTP a 4xx with {"detail": message, "error": {code, message}} (422 for an
// invalid request, as FastAPI answers); over the WebSocket {"type": "error", "data": {"message", "code"}} with
// OpenEnv's codes (INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR, EXECUTION_ERROR, CAPACITY_REACHED,
// SESSION_ERROR) plus pwab's own code and HTTP status.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>

#include "serve/episode_service.h"
#include "serve/http_types.h"
#include "serve/mcp.h"
#include "serve/net_server.h"

namespace pwab::serve {

struct OpenEnvOptions {
  //! Sessions open at once: WebSocket connections plus sessions made by openenv/session/create; one more gets
  //! CAPACITY_REACHED (a JSON-RPC -32000 with active_sessions and max_sessions over /mcp), as OpenEnv's
  //! max_concurrent_envs.
  std::size_t max_sessions = 1000;
  //! The split a reset without a task draws from.
  data::Split default_split = data::Split::kTrain;
  //! A session made over /mcp and left without a WebSocket attached and without a call for this long is closed
  //! (its unfinished episode dropped without a record), as OpenEnv's idle reaper does.
  double session_idle_s = 900;
};

class OpenEnvFrontEnd {
 public:
  //! `service` (and its environment) must outlive this.
  OpenEnvFrontEnd(EpisodeService& service, const data::Dataset& dataset, OpenEnvOptions options);
  ~OpenEnvFrontEnd();

  //! POST /reset: a ResetRequest -> {"observation", "reward": null, "done": false}.
  nlohmann::json reset(const nlohmann::json& request);
  //! POST /step: {"action", "episode_id", "timeout_s"?, "request_id"?} -> {"observation", "reward", "done"}.
  nlohmann::json step(const nlohmann::json& request);
  //! GET /state?episode_id=: OpenEnv's State (episode_id, step_count) with the episode's fields.
  nlohmann::json state(std::string_view episode_id) const;
  //! GET /schema: JSON Schemas of the action, the observation and the state.
  static nlohmann::json schema();
  //! GET /metadata: OpenEnv's EnvironmentMetadata.
  nlohmann::json metadata() const;
  //! Whether a /step (or a WebSocket step) on this episode may wait (EpisodeService::may_block).
  bool may_block(std::string_view episode_id) const { return service_.may_block(episode_id); }

  //! A WebSocket session at /ws (one per connection; `session_id` in the upgrade's query attaches it to a session
  //! made over /mcp); over the cap, or for an unknown or busy session, its first message is the refusal.
  std::unique_ptr<WsSession> open_session(const HttpRequest& upgrade);
  //! A WebSocket at /mcp: plain JSON-RPC messages, each answered as mcp() answers it.
  std::unique_ptr<WsSession> open_mcp_socket();
  //! WebSocket connections open now (attached ones included).
  std::size_t n_ws_sessions() const { return ws_connections_; }
  //! Sessions made over /mcp and not closed.
  std::size_t n_mcp_sessions() const;

  //! True for a POST /mcp that is OpenEnv's plain JSON-RPC rather than an MCP transport's: one JSON object that
  //! carries neither Mcp-Session-Id nor MCP-Protocol-Version and is not an `initialize` (mcp_http.h answers those,
  //! and refuses malformed bodies and batches).
  static bool is_plain_mcp(const HttpRequest& request);
  //! One plain JSON-RPC message (the body of such a POST, as text) -> the JSON-RPC reply (always one).
  nlohmann::json mcp(std::string_view body);
  //! Closes /mcp-made sessions idle past the timeout; returns how many.
  std::size_t expire_idle();

  //! Thrown for an invalid request (a 422 over HTTP, VALIDATION_ERROR over the WebSocket).
  struct Invalid : RequestError {
    using RequestError::RequestError;
  };

 private:
  class Session;
  class McpSocket;
  struct EnvSession;
  //! The service's start request for a ResetRequest.
  nlohmann::json start_request(const nlohmann::json& reset) const;
  //! {"observation", "reward", "done"} for a start answer.
  nlohmann::json reset_answer(nlohmann::json started) const;
  //! One step of an open episode; ends it when it finishes.
  nlohmann::json step_episode(const std::string& episode_id, const nlohmann::json& action);
  //! The environment's functions (respond, the tools, stop) as MCP tools acting on a session's episode.
  const nlohmann::json& session_tools() const { return session_tools_; }
  //! {"observation": {"tools": [...]}, "reward": null, "done": false}: OpenEnv's ListToolsObservation.
  nlohmann::json list_tools_answer() const;
  //! OpenEnv's MCP action {"type": "call_tool", "tool_name", "arguments"} as pwab's {"name", "arguments"}.
  static nlohmann::json call_tool_action(const nlohmann::json& action);

  // A session's operations (EnvSession holds its own lock).
  nlohmann::json session_reset(EnvSession& s, const nlohmann::json& data);
  nlohmann::json session_step(EnvSession& s, const nlohmann::json& data);
  nlohmann::json session_state(EnvSession& s) const;
  nlohmann::json session_call_tool(EnvSession& s, const nlohmann::json& params);
  void session_end(EnvSession& s);   // an unfinished episode is recorded as ended by the client
  void session_drop(EnvSession& s);  // an unfinished episode is dropped without a record
  //! One plain JSON-RPC request, with the session it is bound to (a WebSocket's) or none (then params.session_id).
  nlohmann::json mcp_request(const nlohmann::json& message, EnvSession* bound);
  std::shared_ptr<EnvSession> find_mcp_session(const std::string& id);
  std::size_t active_sessions() const;

  EpisodeService& service_;
  const data::Dataset& dataset_;
  OpenEnvOptions options_;
  McpServer tools_;  // pwab's MCP tools, for plain calls without a session
  nlohmann::json session_tools_;
  std::atomic<std::size_t> ws_connections_{0};
  std::atomic<std::size_t> own_ws_sessions_{0};  // WebSocket connections with a session of their own
  std::atomic<uint64_t> draws_{0};
  mutable std::mutex mu_;  // guards mcp_sessions_ and each entry's attached/closing
  std::unordered_map<std::string, std::shared_ptr<EnvSession>> mcp_sessions_;
};

}  // namespace pwab::serve
