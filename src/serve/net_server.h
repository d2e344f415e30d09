// src/serve/net_server.h: the network layer of `pwab serve`: HTTP/1.1 and WebSocket on Boost.Beast (asio).
//
// A few I/O threads (one per core) serve every connection, keep-alive HTTP and WebSocket alike, with no thread
// per client: a thousand sessions stepping at once cost a thousand sockets, not a thousand threads. The layer
// reads each request whole and within its deadline, and owns every transport rule of docs/serve.md:
//   - a deadline on the whole request from its first byte (408), and on an idle keep-alive connection;
//   - the request head at most max_head_bytes (431); a body at most max_body_bytes, judged from the head (413);
//     a body without a length (chunked) refused (411); a Content-Length that is not one decimal number (400);
//   - `Expect: 100-continue` answered; pipelined requests; clients that shut their sending side once their
//     request is out (half-closed) still get their answer;
//   - WebSocket messages at most max_ws_message_bytes (the connection is closed with 1009), a ping when a socket
//     has been quiet for half its idle time and the connection dropped when the peer stays silent.
// What a request means is the RequestHandler's: it screens the head before the body is read (the access rules),
// answers whole requests, and turns a WebSocket upgrade into a WsSession. A handler's work runs on the I/O
// thread when it is quick, or on a pool of blocking threads when the handler says it may wait (an LLM call, an
// fsync), so a slow request never holds up the others. Boost lives in net_server.cpp only.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "serve/http_types.h"

namespace pwab::serve {

//! What a WebSocket session answers to one message.
struct WsReply {
  std::string text;    //!< a text message to send; none when empty
  bool close = false;  //!< close the connection (normally) after sending it
};

//! One WebSocket connection, as the handler made it at the upgrade. Its calls never overlap: messages are read
//! one at a time, each answered before the next is read.
class WsSession {
 public:
  virtual ~WsSession() = default;
  //! Right after the handshake: a first message to send (e.g. a refusal followed by close), or nothing.
  virtual std::optional<WsReply> on_open() { return std::nullopt; }
  //! Whether answering `message` may wait (then it runs on the blocking pool).
  virtual bool blocks(std::string_view message) const { (void)message; return false; }
  //! One whole text (or binary) message. Refusals are answers in the session's own protocol; an exception closes
  //! the connection with 1011 (internal error).
  virtual WsReply on_message(std::string_view message) = 0;
  //! The connection is over, however it ended (a close, the peer gone, a protocol error, the server stopping).
  //! Called once, after the last on_message.
  virtual void on_end() = 0;
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  //! The head of a request, before its body is read: an answer that refuses it (the connection closes after
  //! it), or nothing to go on.
  virtual std::optional<HttpResponse> screen(const HttpRequest& head) = 0;
  //! Whether answering `request` may wait (then it runs on the blocking pool).
  virtual bool blocks(const HttpRequest& request) const { (void)request; return false; }
  virtual HttpResponse handle(const HttpRequest& request) = 0;
  //! A WebSocket upgrade of `request` (already screened): the session, or an answer that refuses it.
  virtual std::unique_ptr<WsSession> upgrade(const HttpRequest& request, HttpResponse& refusal) = 0;
  //! The answer to a request the network layer refuses itself (408, 411, 413, 431, 400).
  virtual HttpResponse transport_error(int status, std::string_view code, std::string_view message);
};

struct NetOptions {
  std::string host = "127.0.0.1";
  int port = 0;  //!< 0 = a free port chosen by the system
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_head_bytes = 64 * 1024;
  double request_timeout_s = 10;     //!< from a request's first byte to its last
  double keep_alive_timeout_s = 5;   //!< an idle keep-alive connection is closed after this
  double write_timeout_s = 30;       //!< a client that stops reading its answer for this long is dropped
  int io_threads = 0;                //!< 0 = one per hardware thread
  int blocking_threads = 512;        //!< the most handler calls that may wait at once
  std::size_t max_ws_message_bytes = 1 << 20;
  double ws_idle_timeout_s = 900;    //!< a WebSocket whose peer answers no ping for this long is dropped
  int listen_backlog = 4096;
};

//! One request parsed from bytes as a connection parses it (Beast's parser, the same limits and refusals), for
//! tests and fuzzing: the request, or the status and code of the transport refusal, or neither while the bytes
//! end before the request does.
struct ParsedRequest {
  std::optional<HttpRequest> request;
  int status = 0;  //!< 400, 411, 413 or 431 when refused
  std::string code;
  std::string message;
  bool upgrade = false;  //!< a WebSocket upgrade request
};
ParsedRequest parse_request_bytes(std::string_view bytes, const NetOptions& limits);

class NetServer {
 public:
  //! Binds at once (an Error naming the address when that fails); serving starts with start(). The handler must
  //! outlive the server.
  NetServer(RequestHandler& handler, NetOptions options);
  ~NetServer();
  NetServer(const NetServer&) = delete;
  NetServer& operator=(const NetServer&) = delete;

  int port() const;
  //! Serves on background threads; returns at once.
  void start();
  //! Stops accepting, closes every connection (WebSocket sessions get on_end), waits for handler calls in flight,
  //! joins the threads; idempotent.
  void stop();
  //! Open connections (HTTP and WebSocket) and open WebSocket sessions now.
  std::size_t n_connections() const;
  std::size_t n_websockets() const;

  struct Impl;  // net_server.cpp's, shared with its connections

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace pwab::serve
