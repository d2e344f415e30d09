// src/serve/http_server.h: the HTTP/JSON front end of an EpisodeService (`pwab serve`; routes in docs/serve.md).
//
//   GET  /health                       {"status": "ok", "sessions": N}
//   GET  /v1/info                      EpisodeService::info()
//   GET  /v1/tasks?split=&offset=&limit=
//   POST /v1/episodes                  start an episode (201)
//   GET  /v1/episodes/{id}             its state
//   POST /v1/episodes/{id}/step        one action
//   POST /v1/episodes/{id}/end         (or DELETE /v1/episodes/{id}) its record and score; the episode is gone
//
// Every answer is JSON; every refusal is {"error": {"code", "message"}} with a 4xx status (400 malformed JSON or
// a wrong field, 401 no or a wrong bearer token, 403 a Host or Origin refused, 404 unknown route/task/episode,
// 405 wrong method, 408 a request not read whole in time, 409 finished episode or recorded task, 411 a chunked
// body, 413 body too large, 415 a body not declared JSON, 429 too many sessions, 431 headers too large); a failure
// of the server itself is a 500 with the same shape. A janitor thread drops idle episodes. The worker pool is sized
// so that every client can hold a keep-alive connection at once.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/access.h"
#include "serve/episode_service.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace pwab::serve {

struct HttpOptions {
  //! Loopback unless asked. Any other address needs access.token (the constructor refuses it without one).
  std::string host = "127.0.0.1";
  int port = 8765;                 //!< 0 = a free port chosen by the system (see HttpServer::port())
  std::size_t max_body_bytes = 1 << 20;
  //! Worker threads. Each open keep-alive connection holds one, so this bounds the clients served at once.
  int threads = 512;
  int keep_alive_timeout_s = 5;
  //! The most seconds from a request's first byte to its last (a slower one gets 408): a client trickling its
  //! bytes cannot hold a worker longer (guarded_server.h).
  double request_timeout_s = 10;
  //! How often the janitor looks for idle episodes.
  double janitor_interval_s = 5;
  //! Who may call (access.h): checked before any route, /mcp included.
  AccessPolicy access;
  //! Routes of another front end on the same server (MCP at /mcp: mcp_http.h), added before the API's own.
  std::function<void(httplib::Server&)> extra_routes;
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::serve
