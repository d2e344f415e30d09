// src/serve/guarded_server.h: httplib's server, reading each request off the socket itself.
//
// Two things cpp-httplib 0.11.4 does not do, and a public-facing server must:
//  - a deadline on reading a whole request. httplib's read timeout applies to each recv, so a client that trickles
//    its headers a byte at a time holds a worker thread for as long as it likes;
//  - answering a client that has shut its sending side once the request is out (`nc -N`, a half-closed
//    connection). httplib checks that the peer is alive by peeking before every write, sees the end of the stream
//    and drops the answer.
// GuardedServer reads each request whole (head, then body by Content-Length) within `request_timeout_s` of its
// first byte, answering 408 when the deadline passes, 411 for a body without a length (chunked), 431 for a head
// over kMaxRequestHeadBytes (request_head.h). It then hands the bytes to httplib's own request processing through
// a stream that writes the answer to the socket without that liveness check. Routing, handlers, limits and the
// writing of responses stay httplib's. Keep-alive and pipelined requests work as before.
#pragma once
#include <httplib.h>

namespace pwab::serve {

class GuardedServer : public httplib::Server {
 public:
  //! `request_timeout_s`: the most seconds from a request's first byte to its last.
  explicit GuardedServer(double request_timeout_s);

 private:
  bool process_and_close_socket(socket_t sock) override;

  double request_timeout_s_;
};

}  // namespace pwab::serve
