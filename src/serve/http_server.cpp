// The HTTP front end: one dispatcher for every method and path (so a known path with the wrong method is a
// 405, not a 404), JSON in and out, errors as {"error": {"code", "message"}}, OpenEnv's routes and WebSocket,
// the reward endpoint, and the janitor thread. The sockets are net_server.h's.
#include "serve/http_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/json_depth.h"
#include "core/json_writer.h"
#include "core/version.h"
#include "serve/net_server.h"
#include "serve/openenv.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

//! JSON text of an answer; strings that are not valid UTF-8 (an agent's bytes echoed in an observation) are
//! repaired rather than failing the answer.
std::string dump(const Json& j) {
  std::string text = dump_compact(j);
  text += '\n';
  return text;
}

HttpResponse json_answer(int status, const Json& body) {
  HttpResponse res;
  res.status = status;
  res.body = dump(body);
  return res;
}

HttpResponse error_answer(int status, std::string_view code, std::string_view message) {
  return json_answer(status, {{"error", {{"code", code}, {"message", message}}}});
}

//! The request body as a JSON value; an empty body is an empty object (every field of a start or list request
//! has a default).
Json parse_body(const HttpRequest& req) {
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
Json task_query(const HttpRequest& req) {
  Json q = Json::object();
  for (const auto& [key, value] : req.params) {
    if (key == "offset" || key == "limit") {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size())
        throw RequestError(400, "bad_request", fmt::format("query parameter '{}' must be an integer, got '{}'", key, value));
      q[key] = v;
    } else if (key == "history" && (value == "true" || value == "false" || value == "1" || value == "0")) {
      q[key] = value == "true" || value == "1";
    } else {
      q[key] = value;  // unknown parameters are refused by list_tasks, naming them
    }
  }
  return q;
}

// A refusal before routing, in the shape its route answers: JSON-RPC for MCP, the API's error object elsewhere.
HttpResponse refusal_answer(const HttpRequest& req, const AccessRefusal& r) {
  HttpResponse res;
  if (req.path.rfind("/mcp", 0) == 0)
    res = json_answer(r.status, {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", -32600}, {"message", r.message}}}});
  else
    res = error_answer(r.status, r.code, r.message);
  if (r.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  return res;
}

//! A path pattern with at most one "{id}" segment ([A-Za-z0-9_-]+): matches `path`, capturing the id.
bool match(std::string_view pattern, std::string_view path, std::string_view& id) {
  auto hole = pattern.find("{id}");
  if (hole == std::string_view::npos) return pattern == path;
  std::string_view before = pattern.substr(0, hole), after = pattern.substr(hole + 4);
  if (path.size() <= before.size() + after.size() || path.substr(0, before.size()) != before ||
      path.substr(path.size() - after.size()) != after)
    return false;
  id = path.substr(before.size(), path.size() - before.size() - after.size());
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// OpenEnv's HTTP routes answer refusals as FastAPI does ({"detail": ...}), with pwab's error object beside it.
HttpResponse openenv_error(int status, std::string_view code, std::string_view message) {
  return json_answer(status, {{"detail", message}, {"error", {{"code", code}, {"message", message}}}});
}

struct Route {
  std::string method;
  std::string pattern;
  int status;  // of a successful answer
  std::function<Json(const HttpRequest&, std::string_view id)> handle;
  bool openenv = false;  // answers refusals in OpenEnv's shape
  std::function<bool(const HttpRequest&, std::string_view id)> blocks;
};

}  // namespace

struct HttpServer::Impl final : RequestHandler {
  EpisodeService& service;
  HttpOptions options;
  OpenEnvFrontEnd openenv;
  std::optional<RewardEndpoint> reward;
  std::vector<Route> routes;
  std::unique_ptr<NetServer> net;
  std::thread janitor;
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  bool started = false;

  Impl(EpisodeService& s, HttpOptions o)
      : service(s),
        options(std::move(o)),
        openenv(s, s.environment().dataset(),
                OpenEnvOptions{options.max_ws_sessions, data::Split::kTrain, options.ws_idle_timeout_s}) {
    if (options.reward) reward.emplace(s.environment().dataset(), options.reward);
  }

  void add(std::string method, std::string pattern, int status, std::function<Json(const HttpRequest&, std::string_view)> handle,
           std::function<bool(const HttpRequest&, std::string_view)> blocks = {}, bool openenv_shape = false) {
    routes.push_back({std::move(method), std::move(pattern), status, std::move(handle), openenv_shape, std::move(blocks)});
  }

  void add_routes() {
    const std::string episode = "/v1/episodes/{id}";
    auto episode_blocks = [this](const HttpRequest&, std::string_view id) { return service.may_block(id); };
    // "healthy" is OpenEnv's HealthStatus (types.py), which `openenv validate` asks for.
    add("GET", "/health", 200, [this](auto&, auto) {
      return Json{{"status", "healthy"}, {"sessions", service.n_sessions()}, {"websockets", openenv.n_ws_sessions()},
                  {"mcp_sessions", openenv.n_mcp_sessions()}};
    });
    add("GET", "/openapi.json", 200, [this](auto&, auto) { return openapi(); });
    add("GET", "/v1/info", 200, [this](auto&, auto) { return service.info(); });
    add("GET", "/v1/tasks", 200, [this](auto& req, auto) { return service.list_tasks(task_query(req)); });
    add("POST", "/v1/episodes", 201, [this](auto& req, auto) { return service.start(parse_body(req)); });
    add("GET", episode, 200, [this](auto&, auto id) { return service.state(id); });
    add("DELETE", episode, 200, [this](auto&, auto id) { return service.end(id); }, episode_blocks);
    add("POST", episode + "/step", 200, [this](auto& req, auto id) { return service.step(id, parse_body(req)); },
        episode_blocks);
    add("POST", episode + "/end", 200, [this](auto&, auto id) { return service.end(id); }, episode_blocks);
    add(
        "POST", "/v1/reward", 200,
        [this](auto& req, auto) {
          if (!reward) throw RequestError(404, "not_found", "this server scores no rewards (no reward functions given)");
          return reward->answer(parse_body(req));
        },
        [](const HttpRequest& req, std::string_view) { return req.body.size() > 4096; });  // a batch: off the I/O threads
    // OpenEnv (openenv.h).
    add("POST", "/reset", 200, [this](auto& req, auto) { return openenv.reset(parse_body(req)); }, {}, true);
    add(
        "POST", "/step", 200, [this](auto& req, auto) { return openenv.step(parse_body(req)); },
        [this](const HttpRequest& req, std::string_view) { return step_blocks(req); }, true);
    add(
        "GET", "/state", 200,
        [this](auto& req, auto) {
          auto id = req.param("episode_id");
          if (!id) throw OpenEnvFrontEnd::Invalid(422, "bad_request", "state: give ?episode_id= (the id /reset returned)");
          return openenv.state(*id);
        },
        {}, true);
    add("GET", "/schema", 200, [](auto&, auto) { return OpenEnvFrontEnd::schema(); }, {}, true);
    add("GET", "/metadata", 200, [this](auto&, auto) { return openenv.metadata(); }, {}, true);
  }

  //! GET /openapi.json: an OpenAPI 3.1 description of the routes this server has (OpenEnv's servers are FastAPI
  //! apps, which publish one; `openenv validate --url` reads its info.version and whether /reset, /step and
  //! /state are there). Built from the route table, so it lists exactly what is served.
  Json openapi() const {
    static const std::map<std::string, std::string> summaries = {
        {"/health", "Health check"},
        {"/openapi.json", "This description"},
        {"/v1/info", "Dataset size, tools, tracks, user simulators and limits"},
        {"/v1/tasks", "List tasks (?split=&offset=&limit=&history=)"},
        {"/v1/episodes", "Start an episode"},
        {"/v1/episodes/{episode_id}", "An episode so far (GET) or its end and record (DELETE)"},
        {"/v1/episodes/{episode_id}/step", "One action of an episode"},
        {"/v1/episodes/{episode_id}/end", "End an episode: its record and score"},
        {"/v1/reward", "Score finished single-turn rollouts (also OpenRLHF's remote reward request)"},
        {"/reset", "OpenEnv: reset (start an episode) and return the first observation"},
        {"/step", "OpenEnv: one action of the episode named by episode_id"},
        {"/state", "OpenEnv: the state of the episode named by ?episode_id="},
        {"/schema", "OpenEnv: JSON Schemas of the action, the observation and the state"},
        {"/metadata", "OpenEnv: the environment's metadata"},
        {"/mcp", "MCP (streamable HTTP, handshake revisions and 2026-07-28) and OpenEnv's plain JSON-RPC"},
        {"/ws", "OpenEnv's WebSocket session (GET with an Upgrade; ?session_id= attaches to an /mcp session)"}};
    Json paths = Json::object();
    auto add_path = [&](const std::string& pattern, const std::string& method) {
      std::string path = pattern;
      if (auto hole = path.find("{id}"); hole != std::string::npos) path.replace(hole, 4, "{episode_id}");
      Json op = {{"summary", summaries.count(path) ? summaries.at(path) : path},
                 {"responses", {{"200", {{"description", "JSON"}}}}}};
      if (path.find("{episode_id}") != std::string::npos)
        op["parameters"] = Json::array(
            {{{"name", "episode_id"}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}}});
      if (method == "POST")
        op["requestBody"] = {{"content", {{"application/json", {{"schema", {{"type", {"object", "array"}}}}}}}}};
      std::string m = method;
      std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
      paths[path][m] = std::move(op);
    };
    for (const Route& r : routes) add_path(r.pattern, r.method);
    for (const HttpRoute& r : options.extra_routes) add_path(r.path, r.method);
    add_path("/ws", "GET");
    if (!paths.contains("/mcp")) add_path("/mcp", "POST");  // OpenEnv's plain JSON-RPC is answered here regardless
    paths["/reset"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {{"type", "object"}};
    return {{"openapi", "3.1.0"},
            {"info",
             {{"title", "pwab"},
              {"version", "1.0.0"},
              {"description",
               "PersonalWAB environment server: pwab's JSON API (/v1), OpenEnv's HTTP and WebSocket contract (the 1.x "
               "profile: /reset, /step, /state, /schema, /metadata, /health, /ws, /mcp) and MCP. pwab " +
                   std::string(kVersion)},
              {"x-pwab-version", kVersion}}},
            {"paths", std::move(paths)}};
  }

  //! An OpenEnv /step may wait when its episode may (the id is in the body: read it without parsing it all).
  bool step_blocks(const HttpRequest& req) const {
    auto at = req.body.find("\"episode_id\"");
    if (at == std::string::npos) return false;
    auto open = req.body.find('"', req.body.find(':', at) + 1);
    if (open == std::string::npos) return false;
    auto close = req.body.find('"', open + 1);
    if (close == std::string::npos) return false;
    return service.may_block(std::string_view(req.body).substr(open + 1, close - open - 1));
  }

  const Route* find_route(const HttpRequest& req, std::string_view& id, std::string& allowed) const {
    for (const Route& route : routes) {
      std::string_view captured;
      if (!match(route.pattern, req.path, captured)) continue;
      if (route.method != req.method) {
        allowed += (allowed.empty() ? "" : ", ") + route.method;
        continue;
      }
      id = captured;
      return &route;
    }
    return nullptr;
  }

  const HttpRoute* find_extra(const HttpRequest& req) const {
    for (const HttpRoute& route : options.extra_routes)
      if (route.path == req.path && route.method == req.method) return &route;
    return nullptr;
  }

  // --- RequestHandler ---------------------------------------------------------------------------------------

  std::optional<HttpResponse> screen(const HttpRequest& head) override {
    if (auto refusal = check_access(options.access, request_facts(head))) return refusal_answer(head, *refusal);
    return std::nullopt;
  }

  //! POST /mcp that is OpenEnv's plain JSON-RPC (openenv.h), answered by the OpenEnv front end; MCP's transports
  //! (a session id, a protocol version header, an initialize) go to the MCP endpoint.
  static bool is_openenv_mcp(const HttpRequest& req) {
    return req.path == "/mcp" && req.method == "POST" && OpenEnvFrontEnd::is_plain_mcp(req);
  }

  bool blocks(const HttpRequest& req) const override {
    if (is_openenv_mcp(req)) return true;  // a tool call may fsync a record
    if (find_extra(req)) return true;
    std::string_view id;
    std::string allowed;
    const Route* route = find_route(req, id, allowed);
    return route && route->blocks && route->blocks(req, id);
  }

  HttpResponse handle(const HttpRequest& req) override {
    // OpenEnv's plain JSON-RPC is always answered 200 with a JSON-RPC reply (errors in it), as its servers do.
    if (is_openenv_mcp(req)) return json_answer(200, openenv.mcp(req.body));
    if (const HttpRoute* extra = find_extra(req)) {
      HttpResponse res;
      extra->handle(req, res);
      return res;
    }
    std::string_view id;
    std::string allowed;
    const Route* route = find_route(req, id, allowed);
    if (!route) {
      for (const HttpRoute& extra : options.extra_routes)
        if (extra.path == req.path) allowed += (allowed.empty() ? "" : ", ") + extra.method;
      if (!allowed.empty()) {
        HttpResponse res = error_answer(405, "method_not_allowed",
                                        fmt::format("{} {} is not allowed; use {}", req.method, req.path, allowed));
        res.set_header("Allow", allowed);
        return res;
      }
      return error_answer(404, "not_found", fmt::format("no route {} {} (see docs/serve.md; GET /v1/info describes the "
                                                        "server)", req.method, req.path));
    }
    auto refuse = route->openenv ? openenv_error : error_answer;
    try {
      return json_answer(route->status, route->handle(req, id));
    } catch (const RequestError& e) {
      return refuse(route->openenv && e.status == 400 ? 422 : e.status, e.code, e.what());
    } catch (const std::exception& e) {
      // The service's own failure (a run directory that cannot be written, a user simulator's model that
      // keeps failing): the request was fine, so a 500, with the reason.
      return refuse(500, "internal_error", e.what());
    }
  }

  std::unique_ptr<WsSession> upgrade(const HttpRequest& req, HttpResponse& refusal) override {
    if (req.path == "/ws") return openenv.open_session(req);
    if (req.path == "/mcp") return openenv.open_mcp_socket();
    refusal = error_answer(404, "not_found",
                           fmt::format("no WebSocket at {} (OpenEnv's session is at /ws, its JSON-RPC at /mcp)", req.path));
    return nullptr;
  }

  void run_janitor() {
    std::unique_lock lock(mu);
    auto interval = std::chrono::duration<double>(options.janitor_interval_s);
    while (!stopping) {
      wake.wait_for(lock, interval, [this] { return stopping; });
      if (stopping) break;
      lock.unlock();
      service.expire_idle();
      openenv.expire_idle();
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
  s.add_routes();
  NetOptions net;
  net.host = s.options.host;
  net.port = s.options.port;
  net.max_body_bytes = s.options.max_body_bytes;
  net.request_timeout_s = s.options.request_timeout_s;
  net.keep_alive_timeout_s = s.options.keep_alive_timeout_s;
  net.io_threads = s.options.io_threads;
  net.blocking_threads = s.options.threads;
  net.max_ws_message_bytes = s.options.max_ws_message_bytes;
  net.ws_idle_timeout_s = s.options.ws_idle_timeout_s;
  s.net = std::make_unique<NetServer>(s, net);
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->net->port(); }

std::string HttpServer::url() const { return fmt::format("http://{}:{}", impl_->options.host, port()); }

std::size_t HttpServer::n_connections() const { return impl_->net->n_connections(); }
std::size_t HttpServer::n_websockets() const { return impl_->net->n_websockets(); }

void HttpServer::start() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  if (s.started || s.stopping) return;
  s.started = true;
  s.net->start();
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
  s.net->stop();
  if (s.janitor.joinable()) s.janitor.join();
}

}  // namespace pwab::serve
