// src/serve/http_server.h: the HTTP/JSON front end of an EpisodeService (`pwab serve`; routes in docs/serve.md).
//
//   GET  /health                       {"status": "ok", "sessions": N}
//   GET  /v1/info                      EpisodeService::info()
//   GET  /v1/tasks?split=&offset=&limit=
//   POST /v1/episodes                  start an episode (201)
//   GET  /v1/episodes/{id}             its state
//   POST /v1/episodes/{id}/step        one action
//   POST /v1/episodes/{id}/end         (or DELETE /v1/episodes/{id}) its record and score; the episode is gone
//   POST /v1/reward                    the reward of finished single-turn rollouts (reward.h), when configured
//   POST /reset, POST /step, GET /state, GET /schema, GET /metadata, GET /ws (WebSocket): OpenEnv (openenv.h)
//
// Every answer is JSON; every refusal is {"error": {"code", "message"}} with a 4xx status (400 malformed JSON or
// a wrong field, 401 no or a wrong bearer token, 403 a Host or Origin refused, 404 unknown route/task/episode,
// 405 wrong method, 408 a request not read whole in time, 409 finished episode or recorded task, 411 a chunked
// body, 413 body too large, 415 a body not declared JSON, 429 too many sessions, 431 headers too large); a failure
// of the server itself is a 500 with the same shape. A janitor thread drops idle episodes. The network layer
// (net_server.h) serves every connection from a few I/O threads; requests that may wait (an LLM user, a record
// to fsync) run on its blocking pool.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/access.h"
#include "serve/episode_service.h"
#include "serve/http_types.h"
#include "serve/reward.h"

namespace pwab::serve {

struct HttpOptions {
  //! Loopback unless asked. Any other address needs access.token (the constructor refuses it without one).
  std::string host = "127.0.0.1";
  int port = 8765;                 //!< 0 = a free port chosen by the system (see HttpServer::port())
  std::size_t max_body_bytes = 1 << 20;
  //! Threads for requests that may wait (an LLM user's reply, a record's fsync): the most such requests served
  //! at once. Every other request runs on the I/O threads.
  int threads = 512;
  //! I/O threads, which serve every connection; 0 = one per hardware thread.
  int io_threads = 0;
  int keep_alive_timeout_s = 5;
  //! The most seconds from a request's first byte to its last (a slower one gets 408): a client trickling its
  //! bytes cannot hold the server's attention longer.
  double request_timeout_s = 10;
  //! How often the janitor looks for idle episodes.
  double janitor_interval_s = 5;
  //! The largest WebSocket message; a larger one closes its connection with 1009.
  std::size_t max_ws_message_bytes = 1 << 20;
  //! A WebSocket whose peer answers no ping for this long is dropped (and its unfinished episode with it).
  double ws_idle_timeout_s = 900;
  //! OpenEnv's WebSocket sessions open at once (CAPACITY_REACHED beyond).
  std::size_t max_ws_sessions = 1000;
  //! Who may call (access.h): checked before any route, /mcp and the WebSocket upgrade included.
  AccessPolicy access;
  //! Routes of another front end on the same server (MCP at /mcp: mcp_http.h), matched by exact path; they
  //! answer their own requests and run on the blocking pool.
  std::vector<HttpRoute> extra_routes;
  //! What /v1/reward scores with (reward.h); without it the route answers 404.
  RewardFunctions reward;
};

class HttpServer {
 public:
  //! Binds the address at once (an Error naming it when that fails, e.g. the port is taken); serving starts with
  //! start(). `service` must outlive the server.
  HttpServer(EpisodeService& service, HttpOptions options);
  //! Stops (see stop()).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  //! The bound port (the chosen one when the options said 0).
  int port() const;
  //! "http://HOST:PORT".
  std::string url() const;
  //! Serves on background threads; returns at once.
  void start();
  //! Stops accepting, finishes the requests in flight, stops the janitor; idempotent.
  void stop();
  //! Open connections and WebSocket sessions.
  std::size_t n_connections() const;
  std::size_t n_websockets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::serve
