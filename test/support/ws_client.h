// test/support/ws_client.h: a blocking WebSocket client for tests and benchmarks (Boost.Beast behind this header),
// to talk to `pwab serve`'s /ws as an RL rollout worker would, and to send it what a broken client sends.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pwab::test {

//! The server closed the connection (or it broke); `code` is the close code (1000 normal, 1009 too big, ...),
//! 0 when the connection ended without a close frame.
struct WsClosed : std::runtime_error {
  WsClosed(int code, const std::string& what) : std::runtime_error(what), code(code) {}
  int code;
};

class WsClient {
 public:
  //! Connects to 127.0.0.1:port and upgrades `path`, sending `headers` with the handshake. Throws
  //! std::runtime_error when the server refuses the upgrade (its HTTP status in the message) or does not answer.
  explicit WsClient(int port, const std::string& path = "/ws", const std::map<std::string, std::string>& headers = {},
                    double timeout_s = 30);
  ~WsClient();
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  void send(std::string_view text);
  void send_binary(std::string_view bytes);
  //! The next message; throws WsClosed once the server has closed.
  std::string receive();
  //! send then receive.
  std::string call(std::string_view text) {
    send(text);
    return receive();
  }
  //! A normal close (1000), waiting for the server's close frame.
  void close();
  //! Bytes straight onto the socket, below WebSocket framing (to send malformed frames).
  void send_raw(std::string_view bytes);
  //! Ends the TCP connection without a close frame, as a crashed client does.
  void drop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! The HTTP status a WebSocket upgrade of `path` is answered with (101 when accepted), and the body of a refusal.
std::pair<int, std::string> ws_upgrade_status(int port, const std::string& path,
                                              const std::map<std::string, std::string>& headers = {});

}  // namespace pwab::test
