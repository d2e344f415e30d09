// MCP's streamable HTTP transport (src/serve/mcp_http.h) on a real loopback server: the session header's life
// (issued by initialize, 400 without it, 404 once ended or evicted), 202 for notifications, 405 for GET, the
// Origin check against DNS rebinding, the protocol version header, and malformed bodies.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "mini_environment.h"
#include "serve/episode_service.h"
#include "serve/http_server.h"
#include "serve/mcp.h"
#include "serve/mcp_http.h"

namespace pwab::serve {
namespace {

using nlohmann::json;

const char* const kInitialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
const char* const kToolsList = R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})";

class McpHttp : public ::testing::Test {
 protected:
  void start(McpHttpOptions options = {}) {
    endpoint_ = std::make_unique<McpHttpEndpoint>(server_, options);
    HttpOptions http;
    http.port = 0;
    http.extra_routes = endpoint_->routes();
    http_ = std::make_unique<HttpServer>(service_, http);
    http_->start();
    port_ = http_->port();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
  }
  void TearDown() override {
    if (http_) http_->stop();
  }

  httplib::Result post(const std::string& body, httplib::Headers headers = {},
                       const std::string& content_type = "application/json") {
    headers.emplace("Accept", "application/json, text/event-stream");
    return client_->Post("/mcp", headers, body, content_type.c_str());
  }
  //! Initializes a session and returns its id.
  std::string open_session() {
    auto res = post(kInitialize);
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_TRUE(res->has_header("Mcp-Session-Id"));
    return res->get_header_value("Mcp-Session-Id");
  }
  static httplib::Headers session_headers(const std::string& id) { return {{"Mcp-Session-Id", id}}; }
  static int rpc_error(const httplib::Result& res) { return json::parse(res->body)["error"]["code"].get<int>(); }

  EpisodeService service_{mini_environment().environment, ServiceOptions{}};
  McpServer server_{service_, "1.2.3"};
  std::unique_ptr<McpHttpEndpoint> endpoint_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(McpHttp, InitializeIssuesASessionThatLaterRequestsNeed) {
  start();
  auto init = post(kInitialize);
  ASSERT_TRUE(init);
  ASSERT_EQ(init->status, 200) << init->body;
  EXPECT_EQ(init->get_header_value("Content-Type").rfind("application/json", 0), 0u);
  EXPECT_EQ(json::parse(init->body)["result"]["protocolVersion"], "2025-06-18");
  const std::string id = init->get_header_value("Mcp-Session-Id");
  EXPECT_GE(id.size(), 32u);  // 128 random bits
  EXPECT_NE(open_session(), id);  // every initialize opens its own session
  EXPECT_EQ(endpoint_->n_sessions(), 2u);

  auto missing = post(kToolsList);
  EXPECT_EQ(missing->status, 400) << missing->body;
  EXPECT_NE(missing->body.find("Mcp-Session-Id"), std::string::npos);
  auto unknown = post(kToolsList, session_headers("0123456789abcdef0123456789abcdef"));
  EXPECT_EQ(unknown->status, 404) << unknown->body;

  auto note = post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session_headers(id));
  EXPECT_EQ(note->status, 202);
  EXPECT_TRUE(note->body.empty());

  auto list = post(kToolsList, {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "2025-06-18"}});
  ASSERT_EQ(list->status, 200) << list->body;
  EXPECT_GT(json::parse(list->body)["result"]["tools"].size(), 5u);
  // JSON-RPC errors travel in a 200 reply; only transport problems change the status.
  auto unknown_method = post(R"({"jsonrpc":"2.0","id":3,"method":"prompts/list"})", session_headers(id));
  EXPECT_EQ(unknown_method->status, 200);
  EXPECT_EQ(rpc_error(unknown_method), jsonrpc::kMethodNotFound);
}

TEST_F(McpHttp, DeleteEndsTheSession) {
  start();
  const std::string id = open_session();
  auto del = client_->Delete("/mcp", session_headers(id));
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 204);
  EXPECT_EQ(post(kToolsList, session_headers(id))->status, 404);
  EXPECT_EQ(client_->Delete("/mcp", session_headers(id))->status, 404);
  EXPECT_EQ(client_->Delete("/mcp")->status, 400);
  EXPECT_EQ(endpoint_->n_sessions(), 0u);
}

TEST_F(McpHttp, GetHasNoStream) {
  start();
  auto get = client_->Get("/mcp", {{"Accept", "text/event-stream"}});
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST, DELETE");
}

TEST_F(McpHttp, OriginsOtherThanThisMachineAreRefused) {
  start();
  auto evil = post(kInitialize, {{"Origin", "http://attacker.example"}});
  EXPECT_EQ(evil->status, 403) << evil->body;
  EXPECT_FALSE(evil->has_header("Mcp-Session-Id"));
  EXPECT_EQ(post(kInitialize, {{"Origin", "http://localhost.attacker.example:80"}})->status, 403);
  EXPECT_EQ(post(kInitialize, {{"Origin", "null"}})->status, 403);
  for (const char* ok : {"http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443", "http://LOCALHOST"})
    EXPECT_EQ(post(kInitialize, {{"Origin", ok}})->status, 200) << ok;
  const std::string id = open_session();
  EXPECT_EQ(client_->Delete("/mcp", {{"Mcp-Session-Id", id}, {"Origin", "http://attacker.example"}})->status, 403);
}

TEST_F(McpHttp, BadRequestsGetClearRefusals) {
  start();
  auto garbage = post("{\"jsonrpc\": \"2.0\", ");
  EXPECT_EQ(garbage->status, 400);
  EXPECT_EQ(rpc_error(garbage), jsonrpc::kParseError);
  EXPECT_EQ(post(kInitialize, {}, "text/plain")->status, 415);
  auto no_json = client_->Post("/mcp", {{"Accept", "text/event-stream"}}, kInitialize, "application/json");
  EXPECT_EQ(no_json->status, 406);
  const std::string id = open_session();
  auto version = post(kToolsList, {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "1999-01-01"}});
  EXPECT_EQ(version->status, 400);
  EXPECT_NE(version->body.find("1999-01-01"), std::string::npos);
  // A failed initialize opens no session.
  auto bad_init = post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  EXPECT_EQ(bad_init->status, 200);
  EXPECT_EQ(rpc_error(bad_init), jsonrpc::kInvalidParams);
  EXPECT_FALSE(bad_init->has_header("Mcp-Session-Id"));
}

// A full table drops only a session idle for session_idle_s (the least recently used); while every session is in
// use, initialize is refused, so a flood of initialize requests cannot push out the clients at work (issue 19).
TEST_F(McpHttp, OnlyAnIdleSessionMakesRoom) {
  McpHttpOptions options;
  options.max_sessions = 2;
  options.session_idle_s = 60;
  double now = 1000;
  options.clock = [&now] { return now; };
  start(options);
  const std::string a = open_session();
  const std::string b = open_session();
  for (int i = 0; i < 50; ++i) {  // the flood
    auto refused = post(kInitialize);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 429) << refused->body;
    EXPECT_FALSE(refused->has_header("Mcp-Session-Id"));
  }
  EXPECT_EQ(post(kToolsList, session_headers(a))->status, 200);
  EXPECT_EQ(post(kToolsList, session_headers(b))->status, 200);
  now = 1050;
  EXPECT_EQ(post(kToolsList, session_headers(a))->status, 200);  // a in use; b idle since 1000
  now = 1070;                                                     // b idle 70 s, a 20 s
  const std::string c = open_session();
  EXPECT_EQ(endpoint_->n_sessions(), 2u);
  EXPECT_EQ(post(kToolsList, session_headers(b))->status, 404);
  EXPECT_EQ(post(kToolsList, session_headers(a))->status, 200);
  EXPECT_EQ(post(kToolsList, session_headers(c))->status, 200);
  EXPECT_EQ(post(kInitialize)->status, 429);  // a and c were both just used
}

TEST_F(McpHttp, AnEpisodeOverHttp) {
  start();
  const std::string id = open_session();
  auto call = [&](const std::string& tool, json arguments) {
    json body = {{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/call"},
                 {"params", {{"name", tool}, {"arguments", std::move(arguments)}}}};
    auto res = post(body.dump(), session_headers(id));
    EXPECT_EQ(res->status, 200);
    return json::parse(res->body)["result"];
  };
  json started = call("start_episode", {{"task", "test/0"}, {"track", "single"}});
  ASSERT_FALSE(started["isError"].get<bool>()) << started.dump();
  const std::string episode = started["structuredContent"]["episode_id"];
  json stopped = call("stop", {{"episode_id", episode}});
  EXPECT_EQ(stopped["content"][0]["text"], stopped["structuredContent"]["observation"]);
  EXPECT_TRUE(stopped["structuredContent"]["finished"].get<bool>());
  EXPECT_EQ(stopped["structuredContent"]["ending"], "stop");
  json ended = call("end_episode", {{"episode_id", episode}});
  EXPECT_EQ(ended["structuredContent"]["record"]["ending"], "stop");
  EXPECT_TRUE(call("end_episode", {{"episode_id", episode}})["isError"].get<bool>());
}

}  // namespace
}  // namespace pwab::serve
