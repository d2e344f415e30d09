// Reading requests whole, within a deadline, and answering on the socket (guarded_server.h says why).
#include "serve/guarded_server.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "serve/episode_service.h"
#include "serve/request_head.h"

namespace pwab::serve {
namespace {

using Clock = std::chrono::steady_clock;

// How often a worker waiting for a client looks whether the server is stopping.
constexpr int kWaitSliceMs = 100;

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, kWaitSliceMs));
}

bool poll_for(int sock, short events, int ms) {
  pollfd p{sock, events, 0};
  int n;
  do n = ::poll(&p, 1, ms);
  while (n < 0 && errno == EINTR);
  return n > 0;
}

enum class Received { bytes, end_of_stream, timed_out, failed };

//! Appends what the client has sent to `into`, waiting until `deadline` for at least one byte.
Received receive_before(int sock, std::string& into, Clock::time_point deadline, const httplib::Server& server) {
  for (;;) {
    if (!server.is_running()) return Received::failed;
    if (Clock::now() >= deadline) return Received::timed_out;
    if (!poll_for(sock, POLLIN, ms_until(deadline))) continue;
    char buf[16384];
    ssize_t n = ::recv(sock, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      return Received::bytes;
    }
    if (n == 0) return Received::end_of_stream;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Received::failed;
  }
}

//! Sends all of `data` unless the client stops reading for `timeout`; never blocks past it.
bool send_all(int sock, std::string_view data, std::chrono::microseconds timeout) {
  while (!data.empty()) {
    const auto deadline = Clock::now() + timeout;
    while (!poll_for(sock, POLLOUT, ms_until(deadline)))
      if (Clock::now() >= deadline) return false;
    ssize_t n = ::send(sock, data.data(), data.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) data.remove_prefix(static_cast<std::size_t>(n));
    else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
  }
  return true;
}

void address_of(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

//! One buffered request for httplib to parse, and the socket its answer goes to. Unlike httplib's own socket
//! stream, writing does not first peek at whether the client is still sending.
class AnswerStream final : public httplib::Stream {
 public:
  AnswerStream(int sock, std::string_view request, std::chrono::microseconds write_timeout)
      : sock_(sock), request_(request), write_timeout_(write_timeout) {}

  bool is_readable() const override { return read_ < request_.size(); }
  bool is_writable() const override { return !failed_; }  // each write waits for the socket itself
  ssize_t read(char* ptr, size_t size) override {
    std::size_t n = std::min(size, request_.size() - read_);
    std::copy_n(request_.data() + read_, n, ptr);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (failed_ || !send_all(sock_, {ptr, size}, write_timeout_)) {
      failed_ = true;
      return -1;
    }
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, len, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  int sock_;
  std::string_view request_;
  std::size_t read_ = 0;
  std::chrono::microseconds write_timeout_;
  bool failed_ = false;
};

const char* reason_of(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

//! A refusal the reader makes itself, in the API's error shape; the connection closes after it.
void refuse(int sock, int status, std::string_view code, std::string_view message, std::chrono::microseconds timeout) {
  nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
  std::string text = body.dump() + "\n";
  send_all(sock,
           fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
                       "Connection: close\r\n\r\n{}",
                       status, reason_of(status), text.size(), text),
           timeout);
}

}  // namespace

GuardedServer::GuardedServer(double request_timeout_s) : request_timeout_s_(request_timeout_s) {}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  const auto write_timeout = std::chrono::seconds(write_timeout_sec_) + std::chrono::microseconds(write_timeout_usec_);
  const auto request_timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(request_timeout_s_));
  std::string pending;       // bytes received and not yet handed on (a pipelined next request)
  bool peer_done = false;    // the client has shut its sending side
  for (std::size_t served = 0; served < keep_alive_max_count_ && is_running(); ++served) {
    // Between requests, wait as long as keep-alive allows for the next one to begin.
    if (pending.empty()) {
      if (peer_done) break;
      Received r = receive_before(sock, pending, Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_), *this);
      if (r == Received::end_of_stream) peer_done = true;
      if (r != Received::bytes) break;
    }
    // Then the whole request must arrive within the deadline from its first byte.
    const auto deadline = Clock::now() + request_timeout;
    std::string request;
    bool continued = false;
    try {
      for (;;) {
        std::optional<RequestHead> head = scan_request_head(pending);
        if (head) {
          if (head->has_transfer_encoding)
            throw RequestError(411, "length_required",
                               "send the request body with a Content-Length; chunked bodies are not accepted");
          if (head->content_length > payload_max_length_) {
            // httplib answers 413 from the head alone; the body is never read, so the connection ends.
            request = head_without_expect(std::string_view(pending).substr(0, head->size));
            pending.clear();
            peer_done = true;
            break;
          }
          const std::size_t whole = head->size + head->content_length;
          if (pending.size() >= whole) {
            request = head_without_expect(std::string_view(pending).substr(0, head->size)) +
                      pending.substr(head->size, head->content_length);
            pending.erase(0, whole);
            break;
          }
          if (head->expects_continue && !continued) {
            continued = true;
            if (!send_all(sock, "HTTP/1.1 100 Continue\r\n\r\n", write_timeout)) break;
          }
        }
        if (peer_done)
          throw RequestError(400, "incomplete_request", "the connection was shut before the request was complete");
        Received r = receive_before(sock, pending, deadline, *this);
        if (r == Received::end_of_stream) peer_done = true;
        if (r == Received::timed_out)
          throw RequestError(408, "request_timeout",
                             fmt::format("the request was not complete within {} s of its first byte",
                                         request_timeout_s_));
        if (r == Received::failed) break;
      }
    } catch (const RequestError& e) {
      refuse(sock, e.status, e.code, e.what(), write_timeout);
      break;
    }
    if (request.empty()) break;
    AnswerStream stream(sock, request, write_timeout);
    bool connection_closed = false;
    const bool last = peer_done || served + 1 == keep_alive_max_count_;
    if (!process_request(stream, last, connection_closed, {}) || connection_closed || last) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

}  // namespace pwab::serve
