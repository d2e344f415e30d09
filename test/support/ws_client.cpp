#include "ws_client.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <utility>  // before asio: Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace pwab::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = net::ip::tcp;

namespace {

void set_timeouts(tcp::socket& socket, double timeout_s) {
  timeval tv{static_cast<time_t>(timeout_s), static_cast<suseconds_t>((timeout_s - static_cast<long>(timeout_s)) * 1e6)};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace

struct WsClient::Impl {
  net::io_context ioc;
  websocket::stream<tcp::socket> ws{ioc};
};

WsClient::WsClient(int port, const std::string& path, const std::map<std::string, std::string>& headers, double timeout_s)
    : impl_(std::make_unique<Impl>()) {
  auto& socket = impl_->ws.next_layer();
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  socket.set_option(tcp::no_delay(true));
  set_timeouts(socket, timeout_s);
  impl_->ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (const auto& [name, value] : headers) req.set(name, value);
  }));
  impl_->ws.read_message_max(256 << 20);
  websocket::response_type res;
  beast::error_code ec;
  impl_->ws.handshake(res, "127.0.0.1:" + std::to_string(port), path, ec);
  if (ec)
    throw std::runtime_error("WebSocket upgrade refused: HTTP " + std::to_string(res.result_int()) + " " +
                             std::string(res.body()) + " (" + ec.message() + ")");
}

WsClient::~WsClient() {
  beast::error_code ignored;
  impl_->ws.next_layer().close(ignored);
}

void WsClient::send(std::string_view text) {
  impl_->ws.text(true);
  impl_->ws.write(net::buffer(text.data(), text.size()));
}

void WsClient::send_binary(std::string_view bytes) {
  impl_->ws.binary(true);
  impl_->ws.write(net::buffer(bytes.data(), bytes.size()));
}

std::string WsClient::receive() {
  beast::flat_buffer buffer;
  beast::error_code ec;
  impl_->ws.read(buffer, ec);
  if (ec == websocket::error::closed) throw WsClosed(impl_->ws.reason().code, "closed: " + std::string(impl_->ws.reason().reason));
  if (ec) throw WsClosed(impl_->ws.reason().code, ec.message());
  return beast::buffers_to_string(buffer.data());
}

void WsClient::close() {
  beast::error_code ec;
  impl_->ws.close(websocket::close_code::normal, ec);
  // Read until the server's close frame arrives.
  beast::flat_buffer buffer;
  while (!ec) impl_->ws.read(buffer, ec);
}

void WsClient::send_raw(std::string_view bytes) { net::write(impl_->ws.next_layer(), net::buffer(bytes.data(), bytes.size())); }

void WsClient::drop() {
  beast::error_code ignored;
  impl_->ws.next_layer().close(ignored);
}

std::pair<int, std::string> ws_upgrade_status(int port, const std::string& path,
                                              const std::map<std::string, std::string>& headers) {
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  set_timeouts(socket, 30);
  http::request<http::empty_body> req(http::verb::get, path, 11);
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  req.set(http::field::upgrade, "websocket");
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  req.set(http::field::sec_websocket_version, "13");
  for (const auto& [name, value] : headers) req.set(name, value);
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code ec;
  http::read(socket, buffer, res, ec);
  return {ec && res.result_int() == 0 ? 0 : res.result_int(), res.body()};
}

}  // namespace pwab::test
