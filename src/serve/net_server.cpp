// The network layer on Boost.Beast: the acceptor, HTTP connections with their deadlines, WebSocket connections,
// and the pool where handler calls that may wait run (net_server.h says what it guarantees).
#include "serve/net_server.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace pwab::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
// Each connection's operations run on its own strand, named by its concrete type: asio's default polymorphic
// executor costs a type-erased call per operation, a few percent of a served step.
using Strand = net::strand<net::io_context::executor_type>;
using Socket = net::basic_stream_socket<tcp, Strand>;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>, Strand>;

HttpResponse RequestHandler::transport_error(int status, std::string_view code, std::string_view message) {
  HttpResponse res;
  res.status = status;
  res.body = nlohmann::json{{"error", {{"code", code}, {"message", message}}}}.dump() + "\n";
  res.close = true;
  return res;
}

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

//! Threads for handler calls that may wait. Grows on demand up to its size, so an idle server holds none.
class BlockingPool {
 public:
  explicit BlockingPool(int max_threads) : max_threads_(std::max(1, max_threads)) {}
  ~BlockingPool() { join(); }

  void post(std::function<void()> work) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(work));
    if (idle_ == 0 && static_cast<int>(threads_.size()) < max_threads_) {
      threads_.emplace_back([this] {
        ::pthread_setname_np(::pthread_self(), "pwab-blocking");
        run();
      });
    } else {
      wake_.notify_one();
    }
  }
  //! Runs what is queued, then stops every thread.
  void join() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping, nothing left
      auto work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      lock.lock();
    }
  }

  const int max_threads_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stopping_ = false;
};

//! Something the server closes when it stops.
class Closable {
 public:
  virtual ~Closable() = default;
  virtual void close_now() = 0;
};

}  // namespace

struct NetServer::Impl {
  RequestHandler& handler;
  NetOptions options;
  std::optional<net::io_context> ioc;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  BlockingPool pool;
  std::atomic<std::size_t> connections{0}, websockets{0};
  std::atomic<bool> stopping{false};
  bool started = false, stopped = false;
  std::mutex mu;  // guards live, started, stopped
  std::unordered_map<uint64_t, std::weak_ptr<Closable>> live;
  uint64_t next_id = 0;
  int port = 0;

  Impl(RequestHandler& h, NetOptions o) : handler(h), options(std::move(o)), pool(options.blocking_threads) {}

  uint64_t enroll(std::weak_ptr<Closable> c) {
    std::lock_guard lock(mu);
    live.emplace(++next_id, std::move(c));
    return next_id;
  }
  void leave(uint64_t id) {
    std::lock_guard lock(mu);
    live.erase(id);
  }
  void accept();
};

namespace {

struct Refusal {
  int status;
  std::string code, message;
};

//! The refusal a parse error calls for (nothing: the connection just ends, as for a client gone between requests).
std::optional<Refusal> refusal_of(error_code ec, const NetOptions& o) {
  if (ec == http::error::end_of_stream || ec == net::error::operation_aborted || ec == net::error::connection_reset)
    return std::nullopt;
  if (ec == http::error::header_limit)
    return Refusal{431, "head_too_large", fmt::format("the request head is over {} bytes", o.max_head_bytes)};
  if (ec == http::error::body_limit)
    return Refusal{413, "body_too_large", fmt::format("the request body is over the limit of {} bytes", o.max_body_bytes)};
  if (ec == http::error::bad_content_length)
    return Refusal{400, "bad_content_length", "Content-Length must be one decimal number"};
  if (ec == http::error::partial_message || ec == net::error::eof)
    return Refusal{400, "incomplete_request", "the connection was shut before the request was complete"};
  return Refusal{400, "bad_request", "malformed HTTP request: " + ec.message()};
}

//! The head of a parsed request as a front end sees it.
HttpRequest head_of(const http::request<http::string_body>& msg) {
  HttpRequest head;
  head.method = std::string(msg.method_string());
  head.target = std::string(msg.target());
  split_target(head.target, head.path, head.params);
  for (const auto& field : msg) head.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  return head;
}

Refusal chunked_refusal() {
  return {411, "length_required", "send the request body with a Content-Length; chunked bodies are not accepted"};
}

void limit(http::request_parser<http::string_body>& parser, const NetOptions& o) {
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(o.max_head_bytes, UINT32_MAX)));
  parser.body_limit(o.max_body_bytes);
}

//! A handler call that must not bring the connection down: an exception is a 500.
HttpResponse handle_safely(RequestHandler& handler, const HttpRequest& request) {
  try {
    return handler.handle(request);
  } catch (const std::exception& e) {
    return handler.transport_error(500, "internal_error", e.what());
  } catch (...) {
    return handler.transport_error(500, "internal_error", "unknown error");
  }
}

class WsConnection final : public Closable, public std::enable_shared_from_this<WsConnection> {
 public:
  WsConnection(NetServer::Impl& server, Socket socket, std::unique_ptr<WsSession> session)
      : server_(server), ws_(std::move(socket)), session_(std::move(session)) {
    ++server_.websockets;
  }
  ~WsConnection() override {
    end();
    server_.leave(id_);
    --server_.websockets;
    --server_.connections;
  }

  void start(http::request<http::string_body> upgrade) {
    id_ = server_.enroll(weak_from_this());
    websocket::stream_base::timeout timeout;
    timeout.handshake_timeout = seconds(server_.options.request_timeout_s);
    timeout.idle_timeout = seconds(server_.options.ws_idle_timeout_s);
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
    ws_.read_message_max(server_.options.max_ws_message_bytes);
    ws_.auto_fragment(false);  // one frame per message: one write, not one per 4 KiB
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "pwab"); }));
    ws_.async_accept(upgrade, [self = shared_from_this()](error_code ec) {
      if (ec) return self->end();
      std::optional<WsReply> first = self->session_->on_open();
      if (first) return self->send(std::move(*first));
      self->read();
    });
  }

  void close_now() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      beast::get_lowest_layer(self->ws_).close(ignored);
    });
  }

 private:
  void read() {
    ws_.async_read(in_, [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->end();
      self->dispatch();
    });
  }

  void dispatch() {
    auto data = in_.data();
    std::string_view message(static_cast<const char*>(data.data()), data.size());
    if (!session_->blocks(message)) {
      WsReply reply = answer(message);
      in_.consume(in_.size());
      return send(std::move(reply));
    }
    std::string copy(message);
    in_.consume(in_.size());
    server_.pool.post([self = shared_from_this(), copy = std::move(copy)] {
      WsReply reply = self->answer(copy);
      net::post(self->ws_.get_executor(), [self, reply = std::move(reply)]() mutable { self->send(std::move(reply)); });
    });
  }

  // A session answers its own errors in its protocol's shape; one that throws anyway has lost its footing, and the
  // connection is closed with 1011 (internal error) rather than answered in a shape this layer would have to guess.
  WsReply answer(std::string_view message) {
    try {
      return session_->on_message(message);
    } catch (...) {
      failed_ = true;
      return {"", true};
    }
  }

  void send(WsReply reply) {
    if (server_.stopping) return end();
    if (reply.text.empty()) return reply.close ? close() : read();
    out_ = std::move(reply.text);
    ws_.text(true);
    ws_.async_write(net::buffer(out_), [self = shared_from_this(), close = reply.close](error_code ec, std::size_t) {
      if (ec) return self->end();
      if (close) return self->close();
      self->read();
    });
  }

  void close() {
    ws_.async_close(failed_ ? websocket::close_code::internal_error : websocket::close_code::normal,
                    [self = shared_from_this()](error_code) { self->end(); });
  }

  void end() {
    if (ended_) return;
    ended_ = true;
    session_->on_end();
  }

  NetServer::Impl& server_;
  websocket::stream<Socket> ws_;
  std::unique_ptr<WsSession> session_;
  beast::flat_buffer in_;
  std::string out_;
  uint64_t id_ = 0;
  bool ended_ = false;
  bool failed_ = false;  // the session threw: close with 1011
};

class HttpConnection final : public Closable, public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(NetServer::Impl& server, Socket socket)
      : server_(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {
    ++server_.connections;
  }
  ~HttpConnection() override {
    server_.leave(id_);
    if (!upgraded_) --server_.connections;  // a WebSocket connection counts itself down
  }

  void start() {
    id_ = server_.enroll(weak_from_this());
    wait_for_request();
  }

  void close_now() override {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      self->socket_.close(ignored);
      self->timer_.cancel();
    });
  }

 private:
  // --- deadlines: the timer cancels the socket's operation, which then completes with operation_aborted ------
  void arm(double s) {
    timed_out_ = false;
    timer_.expires_after(seconds(s));
    timer_.async_wait([self = shared_from_this(), generation = ++generation_](error_code ec) {
      if (ec || generation != self->generation_) return;
      self->timed_out_ = true;
      error_code ignored;
      self->socket_.cancel(ignored);
    });
  }
  void disarm() {
    ++generation_;
    timer_.cancel();
  }

  // Between requests: wait (as long as keep-alive allows) for the first byte of the next one.
  void wait_for_request() {
    if (server_.stopping) return;
    if (buffer_.size() > 0) return read_head();
    arm(server_.options.keep_alive_timeout_s);
    socket_.async_read_some(buffer_.prepare(16384), [self = shared_from_this()](error_code ec, std::size_t n) {
      self->disarm();
      self->buffer_.commit(n);
      if (ec || n == 0) return self->shut();
      self->read_head();
    });
  }

  // The whole request must arrive within request_timeout_s of its first byte.
  void read_head() {
    parser_.emplace();
    limit(*parser_, server_.options);
    arm(server_.options.request_timeout_s);
    http::async_read_header(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->failed_read(ec);
      self->on_head();
    });
  }

  void on_head() {
    auto& msg = parser_->get();
    head_ = head_of(msg);
    if (parser_->chunked() || head_.has_header("Transfer-Encoding")) {
      Refusal r = chunked_refusal();
      return refuse(r.status, r.code, r.message);
    }
    if (std::optional<HttpResponse> refusal = server_.handler.screen(head_)) {
      refusal->close = true;  // the body, if any, was not read
      return write(std::move(*refusal));
    }
    if (websocket::is_upgrade(msg)) return upgrade();
    if (!parser_->is_done() && beast::iequals(msg[http::field::expect], "100-continue")) {
      auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(socket_, net::buffer(*interim), [self = shared_from_this(), interim](error_code ec, std::size_t) {
        if (ec) return self->shut();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done()) return on_request();
    http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->failed_read(ec);
      self->on_request();
    });
  }

  void failed_read(error_code ec) {
    disarm();
    if (timed_out_)
      return refuse(408, "request_timeout",
                    fmt::format("the request was not complete within {} s of its first byte",
                                server_.options.request_timeout_s));
    std::optional<Refusal> r = server_.stopping ? std::nullopt : refusal_of(ec, server_.options);
    if (!r) return shut();
    refuse(r->status, r->code, std::move(r->message));
  }

  void refuse(int status, std::string_view code, std::string message) {
    HttpResponse res = server_.handler.transport_error(status, code, message);
    res.close = true;
    write(std::move(res));
  }

  void on_request() {
    disarm();
    head_.body = std::move(parser_->get().body());
    keep_alive_ = parser_->get().keep_alive();
    if (!server_.handler.blocks(head_)) return write(handle_safely(server_.handler, head_));
    server_.pool.post([self = shared_from_this()] {
      HttpResponse res = handle_safely(self->server_.handler, self->head_);
      net::post(self->socket_.get_executor(), [self, res = std::move(res)]() mutable { self->write(std::move(res)); });
    });
  }

  void write(HttpResponse res) {
    if (server_.stopping) return shut();
    const bool close = res.close || !keep_alive_;
    response_.emplace(static_cast<http::status>(res.status), 11);
    response_->set(http::field::server, "pwab");
    if (!res.content_type.empty() && (res.status != 204)) response_->set(http::field::content_type, res.content_type);
    for (auto& [name, value] : res.headers) response_->insert(name, value);
    response_->body() = std::move(res.body);
    response_->keep_alive(!close);
    response_->prepare_payload();
    arm(server_.options.write_timeout_s);
    http::async_write(socket_, *response_, [self = shared_from_this(), close](error_code ec, std::size_t) {
      self->disarm();
      if (ec || close) return self->shut();
      self->wait_for_request();
    });
  }

  void upgrade() {
    disarm();
    HttpResponse refusal;
    std::unique_ptr<WsSession> session = server_.handler.upgrade(head_, refusal);
    if (!session) {
      refusal.close = true;
      return write(std::move(refusal));
    }
    upgraded_ = true;
    server_.leave(id_);
    auto ws = std::make_shared<WsConnection>(server_, std::move(socket_), std::move(session));
    ws->start(parser_->release());
  }

  // Ends the connection: the answer (if any) is out; a half-closed peer has read it.
  void shut() {
    error_code ignored;
    socket_.shutdown(Socket::shutdown_send, ignored);
    // A lingering close: a socket closed with unread bytes (the body of a request refused from its head) makes the
    // kernel send a reset, which can destroy the answer before the client has read it. Read and drop what the
    // client still sends, for a moment, until it closes its side too.
    if (!socket_.is_open() || server_.stopping) return close_now_here();
    arm(1.0);
    drain();
  }

  void drain() {
    socket_.async_read_some(net::buffer(drained_), [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec || self->timed_out_ || self->server_.stopping) return self->close_now_here();
      self->drain();
    });
  }

  void close_now_here() {
    error_code ignored;
    socket_.close(ignored);
    disarm();
  }

  NetServer::Impl& server_;
  Socket socket_;
  Timer timer_;
  uint64_t generation_ = 0;
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  HttpRequest head_;
  bool keep_alive_ = true;
  bool upgraded_ = false;
  uint64_t id_ = 0;
  std::array<char, 4096> drained_;
};

}  // namespace

ParsedRequest parse_request_bytes(std::string_view bytes, const NetOptions& limits) {
  ParsedRequest out;
  http::request_parser<http::string_body> parser;
  limit(parser, limits);
  error_code ec;
  net::const_buffer rest(bytes.data(), bytes.size());
  auto refuse = [&](const Refusal& r) {
    out.status = r.status;
    out.code = r.code;
    out.message = r.message;
    return out;
  };
  // The head first (as a connection reads it), then the body.
  while (!parser.is_header_done() && rest.size() > 0) {
    std::size_t used = parser.put(rest, ec);
    if (ec == http::error::need_more) return out;
    if (ec) return refuse(*refusal_of(ec, limits));
    rest += used;
  }
  if (!parser.is_header_done()) return out;
  if (parser.chunked() || parser.get().count(http::field::transfer_encoding) > 0) return refuse(chunked_refusal());
  HttpRequest request = head_of(parser.get());
  out.upgrade = websocket::is_upgrade(parser.get());
  while (!parser.is_done() && rest.size() > 0) {
    std::size_t used = parser.put(rest, ec);
    if (ec == http::error::need_more) return out;
    if (ec) return refuse(*refusal_of(ec, limits));
    rest += used;
  }
  if (!parser.is_done()) return out;
  request.body = parser.get().body();
  out.request = std::move(request);
  return out;
}

void NetServer::Impl::accept() {
  acceptor->async_accept(net::make_strand(ioc->get_executor()), [this](error_code ec, Socket socket) {
    if (stopping) return;
    if (!ec) {
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<HttpConnection>(*this, std::move(socket))->start();
      return accept();
    }
    // Out of file descriptors (or another passing failure): wait a moment rather than spin.
    auto timer = std::make_shared<net::steady_timer>(*ioc, std::chrono::milliseconds(20));
    timer->async_wait([this, timer](error_code) {
      if (!stopping) accept();
    });
  });
}

NetServer::NetServer(RequestHandler& handler, NetOptions options)
    : impl_(std::make_shared<Impl>(handler, std::move(options))) {
  Impl& s = *impl_;
  // A server of a thousand sessions holds a thousand sockets: lift the soft limit on open files to the hard one.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  int threads = s.options.io_threads > 0 ? s.options.io_threads
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.options.io_threads = threads;
  s.ioc.emplace(threads);
  error_code ec;
  auto address = net::ip::make_address(s.options.host == "localhost" ? "127.0.0.1" : s.options.host, ec);
  tcp::endpoint endpoint;
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<unsigned short>(s.options.port));
    s.acceptor.emplace(*s.ioc);
    s.acceptor->open(endpoint.protocol(), ec);
    // SO_REUSEADDR only (no SO_REUSEPORT): a second server on a port in use must fail to bind, not share it.
    if (!ec) s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) s.acceptor->bind(endpoint, ec);
    if (!ec) s.acceptor->listen(s.options.listen_backlog, ec);
  }
  if (ec)
    throw Error(fmt::format("cannot listen on {}:{} ({}: address in use, or not an address of this machine)",
                            s.options.host, s.options.port, ec.message()));
  s.port = s.acceptor->local_endpoint().port();
}

NetServer::~NetServer() { stop(); }

int NetServer::port() const { return impl_->port; }

std::size_t NetServer::n_connections() const { return impl_->connections; }
std::size_t NetServer::n_websockets() const { return impl_->websockets; }

void NetServer::start() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  if (s.started || s.stopped) return;
  s.started = true;
  s.accept();
  for (int i = 0; i < s.options.io_threads; ++i)
    s.threads.emplace_back([&s] {
      ::pthread_setname_np(::pthread_self(), "pwab-io");  // as `top -H` and perf show it
      s.ioc->run();
    });
}

void NetServer::stop() {
  Impl& s = *impl_;
  std::vector<std::shared_ptr<Closable>> open;
  {
    std::lock_guard lock(s.mu);
    if (s.stopped) return;
    s.stopped = true;
    s.stopping = true;
    for (auto& [id, weak] : s.live)
      if (auto c = weak.lock()) open.push_back(std::move(c));
  }
  if (s.acceptor) {
    net::post(*s.ioc, [&s] {
      error_code ignored;
      s.acceptor->close(ignored);
    });
  }
  for (auto& c : open) c->close_now();
  open.clear();
  // Handler calls in flight finish; what they post back finds its connection closed.
  s.pool.join();
  if (s.started) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (s.connections > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  s.ioc->stop();
  for (auto& t : s.threads)
    if (t.joinable()) t.join();
  s.threads.clear();
  s.acceptor.reset();
  // Destroying the context destroys the handlers still queued, and with them the last connections: every
  // WebSocket session gets its on_end here at the latest.
  s.ioc.reset();
}

}  // namespace pwab::serve
