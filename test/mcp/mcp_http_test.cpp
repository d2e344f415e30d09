// MCP's streamable HTTP transport (src/serve/mcp_http.h) on a real loopback server: the session header's life
// (issued by initialize, 400 without it, 404 once ended or evicted), 202 for notifications, 405 for GET, the
// Origin check against DNS rebinding, the protocol version header, and malformed bodies.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
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

  // A client of the handshake revisions names its version: without the session it was given, it is refused. (A
  // request with neither header is OpenEnv's plain JSON-RPC, served beside MCP: McpStateless below.)
  auto missing = post(kToolsList, {{"MCP-Protocol-Version", "2025-06-18"}});
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
  EXPECT_EQ(rpc_error(version), jsonrpc::kUnsupportedProtocolVersion);
  const json supported = json::parse(version->body)["error"]["data"]["supported"];
  EXPECT_EQ(supported.front(), "2026-07-28");  // the versions spoken, so a client can pick one
  EXPECT_EQ(json::parse(version->body)["error"]["data"]["requested"], "1999-01-01");
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


// --- the stateless revision (2026-07-28) ----------------------------------------------------------------------

//! A request of the stateless revision: the envelope in params._meta (what the MCP Python SDK 2.x stamps).
json stateless(const std::string& method, json params = json::object(), json id = 1,
               const std::string& version = "2026-07-28") {
  params["_meta"] = {{kMetaProtocolVersion, version},
                     {kMetaClientCapabilities, json::object()},
                     {kMetaClientInfo, {{"name", "t"}, {"version", "1"}}}};
  return {{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}, {"params", std::move(params)}};
}

httplib::Headers routing(const std::string& method, const std::string& name = "", const std::string& version = "2026-07-28") {
  httplib::Headers h = {{"MCP-Protocol-Version", version}, {"Mcp-Method", method}};
  if (!name.empty()) h.emplace("Mcp-Name", name);
  return h;
}

TEST_F(McpHttp, AStatelessRequestNeedsNoInitializeAndOpensNoSession) {
  start();
  auto discover = post(stateless("server/discover").dump(), routing("server/discover"));
  ASSERT_EQ(discover->status, 200) << discover->body;
  EXPECT_FALSE(discover->has_header("Mcp-Session-Id"));
  json d = json::parse(discover->body)["result"];
  EXPECT_EQ(d["supportedVersions"].front(), "2026-07-28");
  EXPECT_NE(std::find(d["supportedVersions"].begin(), d["supportedVersions"].end(), "2025-11-25"),
            d["supportedVersions"].end());  // the handshake revisions are spoken too
  EXPECT_EQ(d["resultType"], "complete");
  EXPECT_EQ(d["cacheScope"], "public");
  EXPECT_EQ(d["ttlMs"], 0);
  EXPECT_TRUE(d["capabilities"].contains("tools"));
  EXPECT_EQ(d["_meta"][kMetaServerInfo]["version"], "1.2.3");

  auto list = post(stateless("tools/list").dump(), routing("tools/list"));
  ASSERT_EQ(list->status, 200) << list->body;
  json tools = json::parse(list->body)["result"];
  EXPECT_EQ(tools["tools"], server_.tool_list());
  EXPECT_EQ(tools["resultType"], "complete");
  EXPECT_EQ(endpoint_->n_sessions(), 0u);
}

TEST_F(McpHttp, AStatelessEpisodeMatchesTheHandshakeOne) {
  start();
  auto call = [&](const std::string& tool, json arguments, const std::string& name_header) {
    auto res = post(stateless("tools/call", {{"name", tool}, {"arguments", std::move(arguments)}}).dump(),
                    routing("tools/call", name_header));
    EXPECT_EQ(res->status, 200) << res->body;
    json result = json::parse(res->body)["result"];
    EXPECT_EQ(result["resultType"], "complete");
    return result;
  };
  json started = call("start_episode", {{"task", "test/0"}, {"track", "single"}}, "start_episode");
  ASSERT_FALSE(started["isError"].get<bool>()) << started.dump();
  const std::string episode = started["structuredContent"]["episode_id"];
  // Mcp-Name may come base64-wrapped ("=?base64?...?=", what the SDKs send for a value that is no plain token).
  json stopped = call("stop", {{"episode_id", episode}}, "=?base64?c3RvcA==?=");
  EXPECT_TRUE(stopped["structuredContent"]["finished"].get<bool>());
  EXPECT_EQ(stopped["structuredContent"]["ending"], "stop");
  json ended = call("end_episode", {{"episode_id", episode}}, "end_episode");
  EXPECT_EQ(ended["structuredContent"]["record"]["ending"], "stop");
  EXPECT_EQ(ended["structuredContent"]["record"]["task"], "test/0");
  // A call that cannot be made is still a tool error, as in every revision.
  json again = call("end_episode", {{"episode_id", episode}}, "end_episode");
  EXPECT_TRUE(again["isError"].get<bool>());
  EXPECT_EQ(again["structuredContent"]["error"]["code"], "unknown_episode");
}

TEST_F(McpHttp, StatelessRefusalsCarryTheirCodeAndStatus) {
  start();
  auto code_of = [](const httplib::Result& r) { return json::parse(r->body)["error"]["code"].get<int>(); };
  // Headers that disagree with the body: -32020, 400.
  auto versions = post(stateless("tools/list", json::object(), 1, "2025-11-25").dump(), routing("tools/list"));
  EXPECT_EQ(versions->status, 400);
  EXPECT_EQ(code_of(versions), jsonrpc::kHeaderMismatch);
  auto no_method = post(stateless("tools/list").dump(), {{"MCP-Protocol-Version", "2026-07-28"}});
  EXPECT_EQ(no_method->status, 400);
  EXPECT_EQ(code_of(no_method), jsonrpc::kHeaderMismatch);
  auto wrong_method = post(stateless("tools/list").dump(), routing("tools/call"));
  EXPECT_EQ(code_of(wrong_method), jsonrpc::kHeaderMismatch);
  json stop = stateless("tools/call", {{"name", "stop"}, {"arguments", {{"episode_id", "x"}}}});
  auto no_name = post(stop.dump(), routing("tools/call"));
  EXPECT_EQ(no_name->status, 400);
  EXPECT_EQ(code_of(no_name), jsonrpc::kHeaderMismatch);
  EXPECT_EQ(code_of(post(stop.dump(), routing("tools/call", "respond"))), jsonrpc::kHeaderMismatch);
  EXPECT_EQ(code_of(post(stop.dump(), routing("tools/call", "=?base64?!!!?="))), jsonrpc::kHeaderMismatch);
  httplib::Headers twice = routing("tools/list");
  twice.emplace("Mcp-Method", "tools/list");
  auto duplicated = post(stateless("tools/list").dump(), twice);
  EXPECT_EQ(duplicated->status, 400);
  EXPECT_NE(duplicated->body.find("more than once"), std::string::npos) << duplicated->body;
  // The envelope missing or incomplete: -32602, 400, naming what is missing.
  json bare = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}};
  auto no_envelope = post(bare.dump(), routing("tools/list"));
  EXPECT_EQ(no_envelope->status, 400);
  EXPECT_EQ(code_of(no_envelope), jsonrpc::kInvalidParams);
  json partial = stateless("tools/list");
  partial["params"]["_meta"].erase(kMetaClientCapabilities);
  auto incomplete = post(partial.dump(), routing("tools/list"));
  EXPECT_EQ(code_of(incomplete), jsonrpc::kInvalidParams);
  EXPECT_NE(incomplete->body.find(kMetaClientCapabilities), std::string::npos);
  // An envelope without the version header, no session: the header is required.
  auto headerless = post(stateless("tools/list").dump());
  EXPECT_EQ(headerless->status, 400);
  EXPECT_EQ(code_of(headerless), jsonrpc::kHeaderMismatch);
  // A version nobody speaks: -32022 with the versions that are.
  auto future = post(stateless("tools/list", json::object(), 1, "2099-01-01").dump(), routing("tools/list", "", "2099-01-01"));
  EXPECT_EQ(future->status, 400);
  EXPECT_EQ(code_of(future), jsonrpc::kUnsupportedProtocolVersion);
  EXPECT_EQ(json::parse(future->body)["error"]["data"]["requested"], "2099-01-01");
  // An unknown method: -32601, 404; initialize is not a method of this revision.
  auto unknown = post(stateless("prompts/list").dump(), routing("prompts/list"));
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(code_of(unknown), jsonrpc::kMethodNotFound);
  EXPECT_EQ(post(stateless("initialize").dump(), routing("initialize"))->status, 404);
  // One request per POST; a notification is acknowledged.
  auto batch = post(json::array({stateless("tools/list")}).dump(), routing("tools/list"));
  EXPECT_EQ(batch->status, 400);
  EXPECT_EQ(code_of(batch), jsonrpc::kInvalidRequest);
  auto note = post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})",
                   routing("notifications/cancelled"));
  EXPECT_EQ(note->status, 202);
  EXPECT_EQ(endpoint_->n_sessions(), 0u);
}

}  // namespace
}  // namespace pwab::serve
