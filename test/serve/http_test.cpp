// The HTTP front end against a real server on 127.0.0.1: routes, JSON errors for every refusal (malformed
// JSON, wrong types, oversized bodies, unknown routes, wrong methods), 250 clients with an episode each at
// once, and the janitor expiring idle episodes.
#include "serve/http_server.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "env/tools.h"
#include "serve/serve_world.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;
using test::world;

constexpr const char* kJson = "application/json";

//! A running server over its own service.
struct Served {
  explicit Served(ServiceOptions service_options = {}, HttpOptions http = small_http())
      : service(*world().env, std::move(service_options)), server(service, http) {
    server.start();
  }
  static HttpOptions small_http() {
    HttpOptions o;
    o.port = 0;
    o.max_body_bytes = 4096;
    return o;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server.port());
    c.set_keep_alive(true);
    c.set_read_timeout(60, 0);
    return c;
  }
  EpisodeService service;
  HttpServer server;
};

Json body(const httplib::Result& r) {
  EXPECT_TRUE(r) << "no response: " << httplib::to_string(r.error());
  if (!r) return nullptr;
  EXPECT_EQ(r->get_header_value("Content-Type"), kJson);
  return Json::parse(r->body);
}

//! Checks a refusal: its status and that the body is {"error": {"code": <code>, "message": <non-empty>}}.
void expect_error(const httplib::Result& r, int status, const std::string& code) {
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, status) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], code) << r->body;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
}

//! Sends `request` as raw bytes on a new connection and returns everything the server answers until it closes.
std::string raw_exchange(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

//! A connected socket to the server (closed by the destructor).
struct RawConnection {
  explicit RawConnection(int port) : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{30, 0};  // a test never waits forever for an answer
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawConnection() { ::close(fd); }
  bool send(std::string_view bytes) const {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  //! Everything until the server closes (or 30 s pass).
  std::string read_all() const {
    std::string answer;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
    return answer;
  }
  //! At least `n` bytes (fewer if the server closes first).
  std::string read_some(std::size_t n) const {
    std::string answer;
    char buf[4096];
    for (ssize_t k; answer.size() < n && (k = ::recv(fd, buf, std::min(sizeof buf, n - answer.size()), 0)) > 0;)
      answer.append(buf, static_cast<std::size_t>(k));
    return answer;
  }
  int fd;
  bool connected = false;
};

bool poll_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Http, HealthInfoAndTasks) {
  Served s;
  auto c = s.client();
  EXPECT_EQ(body(c.Get("/health"))["status"], "healthy");
  EXPECT_EQ(body(c.Get("/v1/info"))["dataset"]["tasks"]["test"], world().ds.tasks(data::Split::kTest).size());
  Json page = body(c.Get("/v1/tasks?split=test&offset=1&limit=2"));
  ASSERT_EQ(page["tasks"].size(), 2u);
  EXPECT_EQ(page["tasks"][0]["task"], "test/1");
  expect_error(c.Get("/v1/tasks?limit=two"), 400, "bad_request");
  expect_error(c.Get("/v1/tasks?sort=asc"), 400, "bad_request");
  EXPECT_NE(s.server.url().find("http://127.0.0.1:"), std::string::npos);
}

TEST(Http, AnEpisodeFromStartToRecord) {
  Served s;
  auto c = s.client();
  auto started = c.Post("/v1/episodes", R"({"task": "test/0", "track": "multi", "seed": 3})", kJson);
  ASSERT_TRUE(started);
  EXPECT_EQ(started->status, 201);
  Json start = body(started);
  std::string id = start["episode_id"];
  EXPECT_FALSE(start["observation"].get<std::string>().empty());
  std::string path = "/v1/episodes/" + id;
  Json step = body(c.Post(path + "/step", R"({"name": "respond", "arguments": {"content": "What do you need?"}})", kJson));
  EXPECT_FALSE(step["finished"]);
  EXPECT_EQ(body(c.Get(path))["steps"], 1);
  step = body(c.Post(path + "/step", R"({"name": "stop", "arguments": "{}"})", kJson));
  EXPECT_EQ(step["ending"], "stop");
  expect_error(c.Post(path + "/step", R"({"name": "stop"})", kJson), 409, "episode_finished");
  Json end = body(c.Delete(path));
  EXPECT_EQ(end["record"]["task"], "test/0");
  EXPECT_EQ(end["record"]["steps"], 2);
  expect_error(c.Get(path), 404, "unknown_episode");
  expect_error(c.Post(path + "/end", "", kJson), 404, "unknown_episode");
}

// `curl -X POST .../end` sends no Content-Length at all: still a request with an empty body.
TEST(Http, APostWithoutABodyIsAnEmptyBody) {
  Served s;
  auto c = s.client();
  std::string id = body(c.Post("/v1/episodes", R"({"task": "test/0"})", kJson))["episode_id"];
  std::string answer = raw_exchange(s.server.port(), "POST /v1/episodes/" + id +
                                                        "/end HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find(R"("ending":"client_end")"), std::string::npos) << answer;
  EXPECT_EQ(s.service.n_sessions(), 0u);
}

TEST(Http, MalformedRequestsGetClearJsonErrors) {
  Served s;
  auto c = s.client();
  expect_error(c.Post("/v1/episodes", "{\"task\": ", kJson), 400, "malformed_json");
  auto r = c.Post("/v1/episodes", "{'task': 'test/0'}", kJson);
  expect_error(r, 400, "malformed_json");
  EXPECT_NE(r->body.find("not valid JSON"), std::string::npos) << r->body;
  expect_error(c.Post("/v1/episodes", "\xff\xfe", kJson), 400, "malformed_json");
  expect_error(c.Post("/v1/episodes", R"({"task": 17})", kJson), 400, "bad_request");
  expect_error(c.Post("/v1/episodes", R"([1, 2])", kJson), 400, "bad_request");
  expect_error(c.Post("/v1/episodes", R"({"task": "test/99999"})", kJson), 404, "unknown_task");
  std::string id = body(c.Post("/v1/episodes", R"({"task": "test/0"})", kJson))["episode_id"];
  expect_error(c.Post("/v1/episodes/" + id + "/step", R"({"name": 5})", kJson), 400, "bad_request");
  expect_error(c.Post("/v1/episodes/" + id + "/step", "", kJson), 400, "bad_request");  // no action name
  // The server is unharmed: the episode still steps.
  EXPECT_EQ(body(c.Post("/v1/episodes/" + id + "/step", R"({"name": "stop"})", kJson))["ending"], "stop");
}

TEST(Http, OversizedBodiesAre413) {
  Served s;  // 4096-byte cap
  auto c = s.client();
  std::string big = R"({"task": "test/0", "pad": ")" + std::string(8000, 'x') + "\"}";
  expect_error(c.Post("/v1/episodes", big, kJson), 413, "body_too_large");
  // The next request is served normally.
  EXPECT_EQ(body(c.Get("/health"))["status"], "healthy");
}

TEST(Http, DeeplyNestedBodiesAre400NotACrash) {
  HttpOptions http = Served::small_http();
  http.max_body_bytes = 1 << 20;
  Served s({}, http);
  auto c = s.client();
  // ~200 KB nested 100,000 levels deep, under the body cap: once a crash of the whole process (issue 19)
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = c.Post("/v1/episodes", R"({"task": "test/0", "seed": )" + deep + "}", kJson);
  expect_error(r, 400, "json_too_deep");
  EXPECT_NE(r->body.find("256"), std::string::npos) << r->body;
  std::string args = R"({"name": "search_product_by_query", "arguments": )" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  expect_error(c.Post("/v1/episodes/ep_nope/step", args, kJson), 400, "json_too_deep");
  EXPECT_EQ(body(c.Get("/health"))["status"], "healthy");
}

// What a web page could make a browser send (issue 19): a rebound DNS name in Host, a cross-site POST with a
// text/plain body. Neither reaches the service; the same requests from a local client go through.
TEST(Http, WebPagesCannotDriveTheServer) {
  Served s;
  auto c = s.client();
  expect_error(c.Get("/v1/tasks", {{"Host", "evil.example"}}), 403, "forbidden_host");
  expect_error(c.Get("/health", {{"Host", "evil.example:8765"}}), 403, "forbidden_host");
  const std::string start = R"({"task": "test/0"})";
  expect_error(c.Post("/v1/episodes", {{"Origin", "http://evil.example"}}, start, "text/plain"), 403,
               "forbidden_origin");
  expect_error(c.Post("/v1/episodes", {{"Origin", "http://evil.example"}}, start, kJson), 403, "forbidden_origin");
  expect_error(c.Post("/v1/episodes", {{"Sec-Fetch-Site", "cross-site"}}, start, kJson), 403, "forbidden_origin");
  expect_error(c.Post("/v1/episodes", start, "text/plain"), 415, "unsupported_media_type");
  expect_error(c.Post("/v1/episodes", start, "application/x-www-form-urlencoded"), 415, "unsupported_media_type");
  // /mcp is behind the same checks, answered in JSON-RPC
  auto mcp = c.Post("/mcp", {{"Host", "evil.example"}}, R"({"jsonrpc":"2.0","id":1,"method":"initialize"})", kJson);
  ASSERT_TRUE(mcp);
  EXPECT_EQ(mcp->status, 403);
  EXPECT_EQ(Json::parse(mcp->body)["error"]["code"], -32600);
  EXPECT_EQ(s.service.n_sessions(), 0u);  // nothing was started
  // a page on a loopback origin (a local UI) and plain local clients are served
  auto ok = c.Post("/v1/episodes", {{"Origin", "http://localhost:3000"}}, start, kJson);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  EXPECT_EQ(body(c.Get("/v1/tasks", {{"Host", "localhost:1234"}}))["split"], "test");
}

TEST(Http, ATokenClosesEveryRouteAndIsRequiredOffLoopback) {
  HttpOptions http = Served::small_http();
  http.host = "0.0.0.0";
  {
    EpisodeService service(*world().env, ServiceOptions{});
    EXPECT_THROW({ HttpServer server(service, http); }, UsageError);  // every address, no token: refused
  }
  http.access.token = "tok-123";
  Served s({}, http);
  auto c = s.client();
  auto r = c.Get("/health");
  expect_error(r, 401, "unauthorized");
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  expect_error(c.Get("/v1/tasks", {{"Authorization", "Bearer tok-12"}}), 401, "unauthorized");
  expect_error(c.Post("/v1/episodes", R"({"task": "test/0"})", kJson), 401, "unauthorized");
  EXPECT_EQ(s.service.n_sessions(), 0u);
  c.set_bearer_token_auth("tok-123");
  EXPECT_EQ(body(c.Get("/health"))["status"], "healthy");
  // with the token, the server answers whatever name it is reached by (it listens on every address)
  EXPECT_EQ(body(c.Get("/v1/tasks", {{"Host", "server.example:8765"}}))["split"], "test");
  auto started = c.Post("/v1/episodes", R"({"task": "test/0"})", kJson);
  ASSERT_TRUE(started);
  EXPECT_EQ(started->status, 201);
}

TEST(Http, UnknownRoutesAre404AndWrongMethods405) {
  Served s;
  auto c = s.client();
  expect_error(c.Get("/v2/info"), 404, "not_found");
  expect_error(c.Post("/v1/episodes/ep_1/jump", "{}", kJson), 404, "not_found");
  auto r = c.Get("/v1/episodes/ep_1/step");
  expect_error(r, 405, "method_not_allowed");
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  expect_error(c.Put("/v1/tasks", "{}", kJson), 405, "method_not_allowed");
  expect_error(c.Delete("/v1/episodes"), 405, "method_not_allowed");
}

// 250 clients, each on its own connection, each with an episode open at the same moment, each playing its
// episode to the end: every record is the in-process record of its own task (none crossed or lost).
TEST(Http, TwoHundredFiftyConcurrentSessions) {
  constexpr int kClients = 250;
  const auto& tasks = world().ds.tasks(data::Split::kTest);
  const std::size_t n_tasks = std::min<std::size_t>(tasks.size(), 40);
  std::vector<test::InProcessEpisode> expected;
  for (std::size_t i = 0; i < n_tasks; ++i) expected.push_back(test::run_in_process(tasks[i], data::Track::kMultiTurn, 4));

  Served s;
  std::atomic<std::size_t> open_at_once{0};
  std::barrier all_started(kClients, [&]() noexcept { open_at_once = s.service.n_sessions(); });
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      auto fail = [&](const std::string& why) { failures[i] = why; };
      auto c = s.client();
      const auto& mine = expected[static_cast<std::size_t>(i) % n_tasks];
      Json start = {{"task", mine.record.task_key}, {"track", "multi"}, {"seed", 4}};
      auto r = c.Post("/v1/episodes", start.dump(), kJson);
      all_started.arrive_and_wait();
      if (!r || r->status != 201) return fail("start failed");
      std::string path = "/v1/episodes/" + Json::parse(r->body)["episode_id"].get<std::string>();
      for (const auto& d : mine.decisions) {
        Json action = {{"name", d.action.name},
                       {"arguments", d.action.arguments_json},
                       {"usage", {{"prompt_tokens", d.prompt_tokens}, {"completion_tokens", d.completion_tokens}}}};
        auto sr = c.Post(path + "/step", action.dump(), kJson);
        if (!sr || sr->status != 200) return fail("step failed: " + (sr ? sr->body : httplib::to_string(sr.error())));
      }
      auto er = c.Post(path + "/end", "", kJson);
      if (!er || er->status != 200) return fail("end failed");
      std::string got = test::without_timing(Json::parse(er->body)["record"].dump());
      if (got != test::as_served(mine.record.to_json_line())) fail("record differs: " + got);
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(open_at_once.load(), static_cast<std::size_t>(kClients));
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(failures[i], "") << "client " << i;
  EXPECT_EQ(s.service.n_sessions(), 0u);
}

TEST(Http, TheJanitorExpiresIdleEpisodes) {
  std::atomic<double> now{1000};
  ServiceOptions o;
  o.idle_timeout_s = 60;
  o.clock = [&now] { return now.load(); };
  HttpOptions http = Served::small_http();
  http.janitor_interval_s = 0.01;
  Served s(o, http);
  auto c = s.client();
  std::string id = body(c.Post("/v1/episodes", R"({"task": "test/0"})", kJson))["episode_id"];
  EXPECT_EQ(body(c.Get("/v1/episodes/" + id))["steps"], 0);
  now = 1061;  // idle for longer than the timeout: the janitor's next round drops it
  for (int i = 0; i < 2000 && s.service.n_sessions() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(s.service.n_sessions(), 0u);
  expect_error(c.Get("/v1/episodes/" + id), 404, "unknown_episode");
}

// A client that sends its request and then shuts its sending side (`nc -N`) still reads the answer.
TEST(Http, HalfClosedClientsAreAnswered) {
  Served s;
  for (int i = 0; i < 20; ++i) {
    RawConnection c(s.server.port());
    ASSERT_TRUE(c.connected);
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    ::shutdown(c.fd, SHUT_WR);
    std::string answer = c.read_all();
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
    EXPECT_NE(answer.find(R"("status":"healthy")"), std::string::npos) << answer;
  }
  // A POST with a body, half-closed after it.
  RawConnection c(s.server.port());
  std::string start = R"({"task": "test/0"})";
  ASSERT_TRUE(c.send("POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: " + std::to_string(start.size()) + "\r\n\r\n" + start));
  ::shutdown(c.fd, SHUT_WR);
  std::string answer = c.read_all();
  EXPECT_EQ(answer.rfind("HTTP/1.1 201", 0), 0u) << answer.substr(0, 300);
  EXPECT_NE(answer.find(R"("episode_id")"), std::string::npos) << answer.substr(0, 300);
}

// A client trickling its request a byte at a time is cut off at the deadline with a 408, which frees its worker:
// with a single worker thread, another client is served soon after instead of waiting behind it.
TEST(Http, ATricklingClientIsCutOffAtTheRequestDeadline) {
  HttpOptions http = Served::small_http();
  http.threads = 1;
  http.request_timeout_s = 0.5;
  Served s({}, http);
  for (bool in_body : {false, true}) {
    std::string trickled;
    std::thread slow([&] {
      RawConnection c(s.server.port());
      std::string head = in_body ? "POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                   "Content-Length: 100\r\n\r\n"
                                 : "GET /health HTTP/1.1\r\n";
      if (!c.send(head)) return;
      // Up to 20 s of one byte every 50 ms, unless the server hangs up first.
      for (int i = 0; i < 400 && c.send(in_body ? " " : "X"); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (poll_readable(c.fd)) break;
      }
      trickled = c.read_all();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the trickler holds the only worker
    auto began = std::chrono::steady_clock::now();
    std::string answer = raw_exchange(s.server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    slow.join();
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
    EXPECT_LT(waited, 10.0) << "the second client waited behind the trickler";
    EXPECT_EQ(trickled.rfind("HTTP/1.1 408", 0), 0u) << trickled;
    EXPECT_NE(trickled.find(R"("code":"request_timeout")"), std::string::npos) << trickled;
  }
}

// What the server's own request reader answers: Expect: 100-continue (one interim answer, then the real one),
// pipelined requests, a chunked body (411), a head too large (431), a bad Content-Length (400).
TEST(Http, TheRequestReaderHandlesContinuePipeliningAndBadHeads) {
  Served s;
  {
    RawConnection c(s.server.port());
    std::string start = R"({"task": "test/0"})";
    ASSERT_TRUE(c.send("POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       "Expect: 100-continue\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(start.size()) + "\r\n\r\n"));
    std::string interim = c.read_some(25);
    EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    ASSERT_TRUE(c.send(start));
    std::string answer = c.read_all();
    EXPECT_EQ(answer.rfind("HTTP/1.1 201", 0), 0u) << answer;
    EXPECT_EQ(count_of(answer, "100 Continue"), 0u) << answer;
  }
  std::string two = raw_exchange(s.server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                                  "GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(count_of(two, "HTTP/1.1 200"), 2u) << two;
  EXPECT_NE(two.find(R"("dataset")"), std::string::npos) << two;

  std::string chunked = raw_exchange(s.server.port(), "POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                      "2\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(chunked.rfind("HTTP/1.1 411", 0), 0u) << chunked;
  EXPECT_NE(chunked.find(R"("code":"length_required")"), std::string::npos) << chunked;

  std::string huge = raw_exchange(s.server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " +
                                                       std::string(70 * 1024, 'p') + "\r\n\r\n");
  EXPECT_EQ(huge.rfind("HTTP/1.1 431", 0), 0u) << huge.substr(0, 200);

  for (std::string length : {"12x", "-1", "", "99999999999999999999999"}) {
    std::string bad = raw_exchange(s.server.port(), "POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                    "Content-Type: application/json\r\nContent-Length: " + length + "\r\n\r\n{}");
    EXPECT_EQ(bad.rfind("HTTP/1.1 400", 0), 0u) << length << ": " << bad;
    EXPECT_NE(bad.find(R"("code":"bad_content_length")"), std::string::npos) << bad;
  }
  // The server is unharmed.
  EXPECT_EQ(body(s.client().Get("/health"))["status"], "healthy");
}

}  // namespace
}  // namespace pwab::serve
