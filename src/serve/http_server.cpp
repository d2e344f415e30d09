// The HTTP front end: one dispatcher for every method and path (so a known path with the wrong method is a
// 405, not a 404), JSON in and out, errors as {"error": {"code", "message"}}, and the janitor thread.
#include "serve/http_server.h"
#include "core/json_depth.h"
#include "serve/guarded_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

// The kernel's accept queue: many clients connect at the same moment (httplib's own is 5, which drops SYNs).
constexpr int kListenBacklog = 1024;

//! JSON text of an answer; strings that are not valid UTF-8 (an agent's bytes echoed in an observation) are
//! repaired rather than failing the answer.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, int status, std::string_view code, std::string_view message) {
  send_json(res, status, {{"error", {{"code", code}, {"message", message}}}});
}

//! The request body as a JSON value; an empty body is an empty object (every field of a start or list request
//! has a default).
Json parse_body(const httplib::Request& req) {
  if (req.body.find_first_not_of(" \t\r\n") == std::string::npos) return Json::object();
  if (json_nests_deeper_than(req.body)) throw RequestError(400, "json_too_deep", json_depth_message());
  try {
    return Json::parse(req.body);
  } catch (const Json::parse_error& e) {
    // nlohmann's message names the byte position and what it expected: useful as it is, minus its prefix.
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    throw RequestError(400, "malformed_json", "the request body is not valid JSON: " + what);
  }
}

//! ?split=&offset=&limit= as the JSON query EpisodeService::list_tasks takes; numbers must be numbers.
Json task_query(const httplib::Request& req) {
  Json q = Json::object();
  for (const auto& [key, value] : req.params) {
    if (key == "offset" || key == "limit") {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size())
        throw RequestError(400, "bad_request", fmt::format("query parameter '{}' must be an integer, got '{}'", key, value));
      q[key] = v;
    } else {
      q[key] = value;  // unknown parameters are refused by list_tasks, naming them
    }
  }
  return q;
}

RequestFacts facts_of(const httplib::Request& req) {
  RequestFacts f;
  f.method = req.method;
  f.path = req.path;
  f.host = req.get_header_value("Host");
  f.has_origin = req.has_header("Origin");
  f.origin = req.get_header_value("Origin");
  f.sec_fetch_site = req.get_header_value("Sec-Fetch-Site");
  f.content_type = req.get_header_value("Content-Type");
  f.authorization = req.get_header_value("Authorization");
  const std::string length = req.get_header_value("Content-Length");
  f.has_body = req.has_header("Transfer-Encoding") || (!length.empty() && length.find_first_not_of("0") != std::string::npos);
  return f;
}

// A refusal before routing, in the shape its route answers: JSON-RPC for MCP, the API's error object elsewhere.
void send_refusal(httplib::Response& res, const httplib::Request& req, const AccessRefusal& r) {
  if (r.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  if (req.path.rfind("/mcp", 0) == 0) {
    res.status = r.status;
    res.set_content(dump({{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", -32600}, {"message", r.message}}}}),
                    "application/json");
    return;
  }
  send_error(res, r.status, r.code, r.message);
}

struct Route {
  std::string method;
  std::regex path;
  int status;  // of a successful answer
  std::function<Json(const httplib::Request&, const std::smatch&)> handle;
};

}  // namespace

struct HttpServer::Impl {
  EpisodeService& service;
  HttpOptions options;
  GuardedServer server;  // httplib's, reading each request itself (a deadline; half-closed clients answered)
  std::vector<Route> routes;
  int port = 0;
  int listen_fd = -1;
  std::thread listener;
  std::thread janitor;
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  bool started = false;
  std::atomic<bool> listener_done{false};

  Impl(EpisodeService& s, HttpOptions o) : service(s), options(std::move(o)), server(options.request_timeout_s) {}

  void add(std::string method, const std::string& pattern, int status,
           std::function<Json(const httplib::Request&, const std::smatch&)> handle) {
    routes.push_back({std::move(method), std::regex(pattern), status, std::move(handle)});
  }

  void add_routes() {
    const std::string episode = "/v1/episodes/([A-Za-z0-9_-]+)";
    add("GET", "/health", 200, [this](auto&, auto&) { return Json{{"status", "ok"}, {"sessions", service.n_sessions()}}; });
    add("GET", "/v1/info", 200, [this](auto&, auto&) { return service.info(); });
    add("GET", "/v1/tasks", 200, [this](auto& req, auto&) { return service.list_tasks(task_query(req)); });
    add("POST", "/v1/episodes", 201, [this](auto& req, auto&) { return service.start(parse_body(req)); });
    add("GET", episode, 200, [this](auto&, auto& m) { return service.state(m[1].str()); });
    add("DELETE", episode, 200, [this](auto&, auto& m) { return service.end(m[1].str()); });
    add("POST", episode + "/step", 200, [this](auto& req, auto& m) { return service.step(m[1].str(), parse_body(req)); });
    add("POST", episode + "/end", 200, [this](auto&, auto& m) { return service.end(m[1].str()); });
  }

  void dispatch(const httplib::Request& req, httplib::Response& res) {
    std::string allowed;
    for (const Route& route : routes) {
      std::smatch match;
      if (!std::regex_match(req.path, match, route.path)) continue;
      if (route.method != req.method) {
        allowed += (allowed.empty() ? "" : ", ") + route.method;
        continue;
      }
      try {
        send_json(res, route.status, route.handle(req, match));
      } catch (const RequestError& e) {
        send_error(res, e.status, e.code, e.what());
      } catch (const std::exception& e) {
        // The service's own failure (a run directory that cannot be written, a user simulator's model that
        // keeps failing): the request was fine, so a 500, with the reason.
        send_error(res, 500, "internal_error", e.what());
      }
      return;
    }
    if (!allowed.empty()) {
      res.set_header("Allow", allowed);
      send_error(res, 405, "method_not_allowed", fmt::format("{} {} is not allowed; use {}", req.method, req.path, allowed));
      return;
    }
    send_error(res, 404, "not_found", fmt::format("no route {} {} (see docs/serve.md; GET /v1/info describes the server)",
                                                  req.method, req.path));
  }

  //! The answers httplib makes itself (a body over the cap, a request it cannot parse) get the JSON error shape.
  void fill_error(httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413)
      send_error(res, 413, "body_too_large",
                 fmt::format("the request body is over the limit of {} bytes", options.max_body_bytes));
    else
      send_error(res, res.status, "bad_request", fmt::format("the request was refused (HTTP {})", res.status));
  }

  void run_janitor() {
    std::unique_lock lock(mu);
    auto interval = std::chrono::duration<double>(options.janitor_interval_s);
    while (!stopping) {
      wake.wait_for(lock, interval, [this] { return stopping; });
      if (stopping) break;
      lock.unlock();
      service.expire_idle();
      lock.lock();
    }
  }
};

HttpServer::HttpServer(EpisodeService& service, HttpOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {
  Impl& s = *impl_;
  if (s.options.threads < 1) throw UsageError("the server needs at least one worker thread");
  if (!is_loopback_host(s.options.host) && s.options.access.token.empty())
    throw UsageError(fmt::format("listening on {} reaches other machines, and the API would be open to all of them: "
                                 "give a bearer token (--token or the PWAB_SERVE_TOKEN environment variable), or "
                                 "listen on 127.0.0.1",
                                 s.options.host));
  int threads = s.options.threads;
  s.server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  s.server.set_payload_max_length(s.options.max_body_bytes);
  s.server.set_keep_alive_max_count(100000);  // a client steps many times over one connection
  s.server.set_keep_alive_timeout(s.options.keep_alive_timeout_s);
  s.server.set_socket_options([&s](int fd) {
    // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server would silently share
    // a port that is already in use instead of failing to bind.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    s.listen_fd = fd;
  });
  if (s.options.extra_routes) s.options.extra_routes(s.server);  // before the catch-all routes below
  s.add_routes();
  auto handler = [&s](const httplib::Request& req, httplib::Response& res) { s.dispatch(req, res); };
  s.server.Get(".*", handler);
  s.server.Post(".*", handler);
  s.server.Put(".*", handler);
  s.server.Patch(".*", handler);
  s.server.Delete(".*", handler);
  s.server.Options(".*", handler);
  // Every request first passes the access checks (access.h): Host, Origin, token, a body declared JSON.
  // A POST without Content-Length or a chunked body (`curl -X POST .../end`) has no body; httplib would refuse
  // it with a bare 400 while trying to read one, so it is answered before that. Only the API's own POST routes
  // (under /v1/): other methods read no body, and the extra routes (/mcp) answer their own requests.
  s.server.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (auto refusal = check_access(s.options.access, facts_of(req))) {
      // Refused before its body was read: the connection closes after the answer, since the unread body would
      // otherwise be taken for the next request.
      res.set_header("Connection", "close");
      send_refusal(res, req, *refusal);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "POST" || req.path.rfind("/v1/", 0) != 0 || req.has_header("Content-Length") ||
        req.has_header("Transfer-Encoding"))
      return httplib::Server::HandlerResponse::Unhandled;
    s.dispatch(req, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  s.server.set_error_handler(httplib::Server::HandlerWithResponse([&s](const httplib::Request&, httplib::Response& res) {
    s.fill_error(res);
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, "internal_error", what);
  });

  bool bound = s.options.port == 0 ? (s.port = s.server.bind_to_any_port(s.options.host)) > 0
                                   : s.server.bind_to_port(s.options.host, s.options.port);
  if (!bound)
    throw Error(fmt::format("cannot listen on {}:{} (address in use, or not an address of this machine)",
                            s.options.host, s.options.port));
  if (s.options.port != 0) s.port = s.options.port;
  // Listening again on a listening socket only changes its backlog.
  if (s.listen_fd >= 0) ::listen(s.listen_fd, kListenBacklog);
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::url() const { return fmt::format("http://{}:{}", impl_->options.host, impl_->port); }

void HttpServer::start() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  if (s.started || s.stopping) return;
  s.started = true;
  s.listener = std::thread([&s] {
    s.server.listen_after_bind();
    s.listener_done = true;
  });
  s.janitor = std::thread([&s] { s.run_janitor(); });
}

void HttpServer::stop() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (s.stopping) return;
    s.stopping = true;
  }
  s.wake.notify_all();
  if (s.started) {
    // httplib's stop() does nothing until its accept loop runs: wait for that (or for it to have failed).
    while (!s.server.is_running() && !s.listener_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.server.stop();
  } else if (s.listen_fd >= 0) {
    ::close(s.listen_fd);  // bound but never served
  }
  if (s.listener.joinable()) s.listener.join();
  if (s.janitor.joinable()) s.janitor.join();
}

}  // namespace pwab::serve
