// The MCP server's JSON-RPC layer and tools (src/serve/mcp.h) on a real EpisodeService over the mini synthetic
// dataset: negotiation, every error class (parse, invalid request, unknown method, bad params, tool errors),
// notifications and batches, the tool schemas derived from env::tool_specs(), episodes played through tools/call
// against the same actions played on the service directly, and the stdio transport.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "env/tools.h"
#include "mini_environment.h"
#include "serve/episode_service.h"
#include "serve/mcp.h"

namespace pwab::serve {
namespace {

using nlohmann::json;

class McpProtocol : public ::testing::Test {
 protected:
  McpProtocol() : service_(mini_environment().environment, ServiceOptions{}), server_(service_, "9.9.9") {}

  json request(const std::string& method, json params = json::object(), json id = 1) {
    return server_.handle({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}},
                          session_);
  }
  json initialize(const std::string& version = "2025-06-18") {
    return request("initialize", {{"protocolVersion", version},
                                  {"capabilities", json::object()},
                                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  }
  json call(const std::string& tool, json arguments) {
    json reply = request("tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
    EXPECT_TRUE(reply.contains("result")) << reply.dump();
    return reply["result"];
  }
  //! The test split's position of the first task of a type, as the service names it ("test/N").
  std::string task_key(data::TaskType type) const {
    const auto& tasks = ds_->tasks(data::Split::kTest);
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].type == type) return "test/" + std::to_string(i);
    throw std::runtime_error("no test task of that type");
  }

  const data::Dataset* ds_ = &mini_environment().ds;
  EpisodeService service_;
  McpServer server_;
  McpSession session_;
};

int error_code(const json& reply) { return reply.at("error").at("code").get<int>(); }

TEST_F(McpProtocol, InitializeNegotiatesTheVersion) {
  json reply = initialize("2025-06-18");
  ASSERT_TRUE(reply.contains("result")) << reply.dump();
  EXPECT_EQ(reply["id"], 1);
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(reply["result"]["serverInfo"]["name"], "pwab");
  EXPECT_EQ(reply["result"]["serverInfo"]["version"], "9.9.9");
  EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(session_.protocol_version, "2025-06-18");
  for (const char* v : {"2024-11-05", "2025-03-26", "2025-11-25"})
    EXPECT_EQ(initialize(v)["result"]["protocolVersion"], v);
  // A version we do not speak: we answer our newest, and the client decides.
  EXPECT_EQ(initialize("1999-01-01")["result"]["protocolVersion"], mcp_protocol_versions().front());

  EXPECT_EQ(error_code(request("initialize", json::object())), jsonrpc::kInvalidParams);
  EXPECT_EQ(error_code(request("initialize", {{"protocolVersion", 20250618}})), jsonrpc::kInvalidParams);
}

TEST_F(McpProtocol, OnlyPingBeforeInitialize) {
  json pong = request("ping");
  EXPECT_EQ(pong["result"], json::object()) << pong.dump();
  json early = request("tools/list");
  EXPECT_EQ(error_code(early), jsonrpc::kInvalidRequest) << early.dump();
  EXPECT_NE(early["error"]["message"].get<std::string>().find("initialize"), std::string::npos);
}

TEST_F(McpProtocol, MalformedMessagesGetJsonRpcErrors) {
  // Not JSON at all: -32700 with a null id.
  json parse = json::parse(server_.handle_text("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", session_));
  EXPECT_EQ(error_code(parse), jsonrpc::kParseError);
  EXPECT_TRUE(parse["id"].is_null());
  EXPECT_EQ(error_code(json::parse(server_.handle_text("\xff\xfe", session_))), jsonrpc::kParseError);
  // Nested 100,000 levels deep: refused before parsing, with the limit named (it once overflowed the stack).
  json deep = json::parse(server_.handle_text(
      R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stop", "arguments": )" +
          std::string(100000, '[') + std::string(100000, ']') + "}}",
      session_));
  EXPECT_EQ(error_code(deep), jsonrpc::kParseError);
  EXPECT_NE(deep["error"]["message"].get<std::string>().find("deeper than"), std::string::npos) << deep.dump();

  // JSON, but not a valid request: -32600, with the id when it is usable.
  EXPECT_EQ(error_code(server_.handle(json(42), session_)), jsonrpc::kInvalidRequest);
  json no_version = server_.handle({{"id", 5}, {"method", "ping"}}, session_);
  EXPECT_EQ(error_code(no_version), jsonrpc::kInvalidRequest);
  EXPECT_EQ(no_version["id"], 5);
  EXPECT_EQ(error_code(server_.handle({{"jsonrpc", "1.0"}, {"id", 5}, {"method", "ping"}}, session_)),
            jsonrpc::kInvalidRequest);
  EXPECT_EQ(error_code(server_.handle({{"jsonrpc", "2.0"}, {"id", 5}, {"method", 7}}, session_)),
            jsonrpc::kInvalidRequest);
  json bad_id = server_.handle({{"jsonrpc", "2.0"}, {"id", json::array()}, {"method", "ping"}}, session_);
  EXPECT_EQ(error_code(bad_id), jsonrpc::kInvalidRequest);
  EXPECT_TRUE(bad_id["id"].is_null());
  EXPECT_EQ(error_code(server_.handle({{"jsonrpc", "2.0"}, {"id", 6}}, session_)), jsonrpc::kInvalidRequest);
  EXPECT_EQ(error_code(server_.handle(json::array(), session_)), jsonrpc::kInvalidRequest);
  EXPECT_EQ(error_code(request("ping", json::array({1, 2}))), jsonrpc::kInvalidParams);
}

TEST_F(McpProtocol, UnknownMethodAndBadParams) {
  initialize();
  json unknown = request("resources/list", json::object(), "abc");
  EXPECT_EQ(error_code(unknown), jsonrpc::kMethodNotFound);
  EXPECT_EQ(unknown["id"], "abc");  // string ids come back as they were
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("resources/list"), std::string::npos);

  EXPECT_EQ(error_code(request("tools/call", json::object())), jsonrpc::kInvalidParams);
  EXPECT_EQ(error_code(request("tools/call", {{"name", 3}})), jsonrpc::kInvalidParams);
  EXPECT_EQ(error_code(request("tools/call", {{"name", "stop"}, {"arguments", "episode"}})), jsonrpc::kInvalidParams);
  json no_tool = request("tools/call", {{"name", "delete_everything"}, {"arguments", json::object()}});
  EXPECT_EQ(error_code(no_tool), jsonrpc::kInvalidParams);
  EXPECT_NE(no_tool["error"]["message"].get<std::string>().find("delete_everything"), std::string::npos);
}

TEST_F(McpProtocol, NotificationsAndResponsesAreNotAnswered) {
  initialize();
  EXPECT_EQ(server_.handle_text(R"({"jsonrpc": "2.0", "method": "notifications/initialized"})", session_), "");
  EXPECT_TRUE(session_.initialized);
  // Unknown notifications and notifications with bad params are dropped silently too (JSON-RPC never answers them).
  EXPECT_EQ(server_.handle_text(R"({"jsonrpc": "2.0", "method": "notifications/whatever", "params": 3})", session_), "");
  EXPECT_EQ(server_.handle_text(R"({"jsonrpc": "2.0", "id": 9, "result": {}})", session_), "");

  // A batch: one reply per request, in order; none when it holds no request.
  json replies = server_.handle(json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}},
                                             {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                                             {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "nope"}}}),
                                session_);
  ASSERT_TRUE(replies.is_array());
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0]["id"], 1);
  EXPECT_EQ(error_code(replies[1]), jsonrpc::kMethodNotFound);
  EXPECT_TRUE(server_.handle(json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}}), session_)
                  .is_discarded());
}

TEST_F(McpProtocol, ToolSchemasComeFromTheEnvironmentsTools) {
  initialize();
  json tools = request("tools/list")["result"]["tools"];
  std::map<std::string, json> by_name;
  for (const auto& t : tools) {
    by_name[t["name"]] = t;
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t.dump();
    EXPECT_FALSE(t["description"].get<std::string>().empty()) << t.dump();
  }
  for (const char* name : {"environment_info", "list_tasks", "start_episode", "episode_state", "end_episode", "respond"})
    EXPECT_TRUE(by_name.count(name)) << name;
  EXPECT_EQ(by_name["start_episode"]["inputSchema"]["required"], json::array({"task"}));
  EXPECT_EQ(by_name["respond"]["inputSchema"]["required"], json::array({"episode_id", "content"}));
  for (const auto& spec : env::tool_specs()) {
    ASSERT_TRUE(by_name.count(std::string(spec.name))) << spec.name;
    json& schema = by_name[std::string(spec.name)]["inputSchema"];
    EXPECT_EQ(by_name[std::string(spec.name)]["description"], spec.description);
    json required = json::array({"episode_id"});
    for (const auto& p : spec.params) {
      required.push_back(p.name);
      json& prop = schema["properties"][std::string(p.name)];
      EXPECT_EQ(prop["type"], p.type == env::ParamType::kString ? "string" : "array") << spec.name;
      if (p.type == env::ParamType::kStringArray) {
        EXPECT_EQ(prop["items"]["type"], "string");
      }
    }
    EXPECT_EQ(schema["required"], required) << spec.name;
  }
  EXPECT_EQ(tools.size(), 6 + env::tool_specs().size());
}

TEST_F(McpProtocol, ASingleTurnEpisodeMatchesTheServiceItself) {
  initialize();
  const std::string key = task_key(data::TaskType::kReview);
  json started = call("start_episode", {{"task", key}, {"track", "single"}});
  ASSERT_FALSE(started["isError"].get<bool>()) << started.dump();
  json& start = started["structuredContent"];
  const std::string id = start["episode_id"];
  EXPECT_EQ(json::parse(started["content"][0]["text"].get<std::string>()), start);  // the text is the same JSON
  EXPECT_FALSE(start.contains("tools"));  // tools/list already has them

  // The same task and actions on the service directly.
  json direct = service_.start({{"task", key}, {"track", "single"}});
  EXPECT_EQ(start["observation"], direct["observation"]);
  EXPECT_EQ(start["history"], direct["history"]);

  // The details tool does not end the episode; the review does, and is scored.
  const std::string asin = ds_->product(ds_->tasks(data::Split::kTest)[std::stoul(key.substr(5))].target_product).parent_asin;
  json details = call("get_product_details_by_asin", {{"episode_id", id}, {"product_asin", asin}});
  json details_direct = service_.step(direct["episode_id"].get<std::string>(),
                                      {{"name", "get_product_details_by_asin"}, {"arguments", {{"product_asin", asin}}}});
  EXPECT_EQ(details["content"][0]["text"], details_direct["observation"]);
  EXPECT_EQ(details["structuredContent"], details_direct);
  EXPECT_FALSE(details["structuredContent"]["finished"].get<bool>());
  EXPECT_EQ(details["content"].size(), 1u);

  const json review_args = {{"review", "Sturdy and well made, I use it every day."}};
  json review = call("add_product_review", {{"episode_id", id}, {"review", review_args["review"]}});
  json review_direct = service_.step(direct["episode_id"].get<std::string>(),
                                     {{"name", "add_product_review"}, {"arguments", review_args}});
  EXPECT_FALSE(review["isError"].get<bool>());
  EXPECT_EQ(review["content"][0]["text"], review_direct["observation"]);
  EXPECT_EQ(review["structuredContent"], review_direct);
  EXPECT_EQ(review["structuredContent"]["reward"]["function_acc"], 1.0);
  EXPECT_GT(review["structuredContent"]["reward"]["result_acc"].get<double>(), 0.0);
  EXPECT_TRUE(review["structuredContent"]["finished"].get<bool>());
  ASSERT_EQ(review["content"].size(), 2u);  // the finished note, for clients that only read text
  EXPECT_NE(review["content"][1]["text"].get<std::string>().find("end_episode"), std::string::npos);

  json state = call("episode_state", {{"episode_id", id}});
  EXPECT_EQ(state["structuredContent"]["steps"], 2);
  json ended = call("end_episode", {{"episode_id", id}});
  json ended_direct = service_.end(direct["episode_id"].get<std::string>());
  EXPECT_EQ(ended["structuredContent"]["score"], ended_direct["score"]);
  EXPECT_EQ(ended["structuredContent"]["record"]["actions"], ended_direct["record"]["actions"]);
}

TEST_F(McpProtocol, AMultiTurnEpisodeWithTheScriptedUser) {
  initialize();
  const std::string key = task_key(data::TaskType::kSearch);
  const json start_args = {{"task", key}, {"track", "multi"}, {"user_sim", "scripted"}, {"seed", 7}};
  const std::string id = call("start_episode", start_args)["structuredContent"]["episode_id"];
  const std::string direct_id = service_.start(start_args)["episode_id"];
  // respond -> the scripted user's reply; a search without a search service -> an Error observation (a scored
  // step of [0, 0] still); stop -> the end.
  const std::vector<json> actions = {{{"name", "respond"}, {"arguments", {{"content", "What are you looking for?"}}}},
                                     {{"name", "search_product_by_query"}, {"arguments", {{"query", "a lamp"}}}},
                                     {{"name", "stop"}, {"arguments", json::object()}}};
  for (const auto& action : actions) {
    json arguments = action["arguments"];
    arguments["episode_id"] = id;
    json result = call(action["name"], arguments);
    json direct = service_.step(direct_id, action);
    EXPECT_EQ(result["structuredContent"], direct) << action.dump();
    EXPECT_EQ(result["content"][0]["text"], direct["observation"]);
  }
  json state = call("episode_state", {{"episode_id", id}})["structuredContent"];
  EXPECT_EQ(state["steps"], 3);
  json reply = state["actions"][0]["observation"];
  EXPECT_FALSE(reply.get<std::string>().empty());
  EXPECT_EQ(reply.get<std::string>().rfind("Error", 0), std::string::npos) << reply;  // a user answered
  EXPECT_EQ(call("end_episode", {{"episode_id", id}})["structuredContent"]["record"]["ending"], "stop");
}

TEST_F(McpProtocol, FailingCallsAreToolErrors) {
  initialize();
  auto expect_tool_error = [&](const std::string& tool, json arguments, int status, const std::string& mention) {
    json result = call(tool, arguments);
    EXPECT_TRUE(result["isError"].get<bool>()) << result.dump();
    EXPECT_EQ(result["structuredContent"]["error"]["status"], status) << result.dump();
    const std::string text = result["content"][0]["text"];
    EXPECT_NE(text.find(mention), std::string::npos) << text;
  };
  expect_tool_error("stop", json::object(), 400, "episode_id");
  expect_tool_error("stop", {{"episode_id", 12}}, 400, "episode_id");
  expect_tool_error("stop", {{"episode_id", "nope"}}, 404, "nope");
  expect_tool_error("end_episode", {{"episode_id", "nope"}}, 404, "nope");
  expect_tool_error("start_episode", {{"task", "test/999999"}}, 404, "test/999999");
  expect_tool_error("start_episode", {{"task", "test/0"}, {"track", "sideways"}}, 400, "sideways");
  expect_tool_error("list_tasks", {{"split", "everything"}}, 400, "everything");

  // A step on a finished episode is refused (409), and the episode can still be ended.
  const std::string id = call("start_episode", {{"task", task_key(data::TaskType::kReview)}})["structuredContent"]["episode_id"];
  call("add_product_review", {{"episode_id", id}, {"review", "Fine."}});
  expect_tool_error("stop", {{"episode_id", id}}, 409, id);
  EXPECT_FALSE(call("end_episode", {{"episode_id", id}})["isError"].get<bool>());

  // A function's own bad argument is the environment's business: an "Error: ..." observation and a step.
  const std::string id2 = call("start_episode", {{"task", task_key(data::TaskType::kReview)}})["structuredContent"]["episode_id"];
  json bad = call("add_product_review", {{"episode_id", id2}, {"review", 5}});
  EXPECT_FALSE(bad["isError"].get<bool>());
  EXPECT_EQ(bad["content"][0]["text"].get<std::string>().rfind("Error", 0), 0u) << bad.dump();
  EXPECT_EQ(bad["structuredContent"]["steps"], 1);
}

TEST_F(McpProtocol, ListTasksAndInfo) {
  initialize();
  json tasks = call("list_tasks", {{"split", "test"}, {"offset", 1}, {"limit", 3}});
  EXPECT_EQ(tasks["structuredContent"], service_.list_tasks({{"split", "test"}, {"offset", 1}, {"limit", 3}}));
  EXPECT_EQ(tasks["structuredContent"]["tasks"].size(), 3u);
  EXPECT_EQ(tasks["structuredContent"]["tasks"][0]["task"], "test/1");
  json info = call("environment_info", json::object());
  EXPECT_FALSE(info["isError"].get<bool>());
  EXPECT_TRUE(info["structuredContent"].is_object());
}

TEST(McpStdio, OneReplyLinePerRequest) {
  EpisodeService service(mini_environment().environment, ServiceOptions{});
  McpServer server(service, "1");
  std::istringstream in(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\r\n\n   \n"
      R"({"jsonrpc":"2.0","id":"two","method":"tools/list"})"
      "\n"
      "this is not json\n"
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tasks","arguments":{"limit":2}}})");
  std::ostringstream out;
  serve_mcp_stdio(server, in, out);

  std::vector<json> lines;
  std::istringstream replies(out.str());
  for (std::string line; std::getline(replies, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0]["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(lines[1]["id"], "two");
  EXPECT_GT(lines[1]["result"]["tools"].size(), 5u);
  EXPECT_EQ(lines[2]["error"]["code"], jsonrpc::kParseError);
  EXPECT_EQ(lines[3]["id"], 3);
  EXPECT_EQ(lines[3]["result"]["structuredContent"]["tasks"].size(), 2u);
}


// --- the stateless revision (2026-07-28): each request carries its version in params._meta, no initialize ----

json envelope(const std::string& version = "2026-07-28") {
  return {{kMetaProtocolVersion, version}, {kMetaClientCapabilities, json::object()}};
}

TEST_F(McpProtocol, StatelessRequestsNeedNoInitialize) {
  json discover = request("server/discover", {{"_meta", envelope()}});
  ASSERT_TRUE(discover.contains("result")) << discover.dump();
  EXPECT_EQ(discover["result"]["supportedVersions"], json(mcp_all_versions()));
  EXPECT_EQ(discover["result"]["resultType"], "complete");
  EXPECT_EQ(discover["result"]["_meta"][kMetaServerInfo]["name"], "pwab");
  json list = request("tools/list", {{"_meta", envelope()}});
  EXPECT_EQ(list["result"]["tools"], server_.tool_list());
  EXPECT_EQ(list["result"]["ttlMs"], 0);
  // A whole episode, the same as on the service: start, a search, the record.
  const std::string key = task_key(data::TaskType::kSearch);
  json started = request("tools/call", {{"name", "start_episode"},
                                        {"arguments", {{"task", key}, {"track", "single"}}},
                                        {"_meta", envelope()}})["result"];
  ASSERT_FALSE(started["isError"].get<bool>()) << started.dump();
  EXPECT_EQ(started["resultType"], "complete");
  const std::string id = started["structuredContent"]["episode_id"];
  json searched = request("tools/call", {{"name", "search_product_by_query"},
                                         {"arguments", {{"episode_id", id}, {"query", "usb"}}},
                                         {"_meta", envelope()}})["result"];
  EXPECT_TRUE(searched["structuredContent"]["finished"].get<bool>()) << searched.dump();
  json direct = service_.start({{"task", key}, {"track", "single"}});
  json direct_step = service_.step(direct["episode_id"].get<std::string>(),
                                   {{"name", "search_product_by_query"}, {"arguments", {{"query", "usb"}}}});
  EXPECT_EQ(searched["content"][0]["text"], direct_step["observation"]);
  EXPECT_EQ(searched["structuredContent"]["reward"], direct_step["reward"]);
  EXPECT_TRUE(session_.protocol_version.empty());  // nothing was negotiated or kept
  // The session-bound (handshake) path is untouched: without the envelope, tools still need initialize.
  EXPECT_EQ(error_code(request("tools/list")), jsonrpc::kInvalidRequest);
}

TEST_F(McpProtocol, StatelessEnvelopeErrors) {
  EXPECT_EQ(error_code(request("server/discover")), jsonrpc::kInvalidParams);  // no envelope at all
  json partial = request("tools/list", {{"_meta", {{kMetaProtocolVersion, "2026-07-28"}}}});
  EXPECT_EQ(error_code(partial), jsonrpc::kInvalidParams);
  EXPECT_NE(partial["error"]["message"].get<std::string>().find(kMetaClientCapabilities), std::string::npos);
  json typed = envelope();
  typed[kMetaProtocolVersion] = 20260728;
  EXPECT_EQ(error_code(request("tools/list", {{"_meta", typed}})), jsonrpc::kInvalidParams);
  json future = request("server/discover", {{"_meta", envelope("2099-01-01")}});
  EXPECT_EQ(error_code(future), jsonrpc::kUnsupportedProtocolVersion);
  EXPECT_EQ(future["error"]["data"]["requested"], "2099-01-01");
  EXPECT_EQ(future["error"]["data"]["supported"], json(mcp_all_versions()));
  // A handshake version in the envelope is no stateless revision either.
  EXPECT_EQ(error_code(request("tools/list", {{"_meta", envelope("2025-11-25")}})), jsonrpc::kUnsupportedProtocolVersion);
  EXPECT_EQ(error_code(request("initialize", {{"_meta", envelope()}, {"protocolVersion", "2025-11-25"}})),
            jsonrpc::kMethodNotFound);
  EXPECT_EQ(error_code(request("resources/list", {{"_meta", envelope()}})), jsonrpc::kMethodNotFound);
  EXPECT_EQ(error_code(request("tools/call", {{"_meta", envelope()}})), jsonrpc::kInvalidParams);
  EXPECT_EQ(error_code(request("tools/call", {{"_meta", envelope()}, {"name", "no_such_tool"}})), jsonrpc::kInvalidParams);
  // A progress token in _meta is no envelope: a handshake request keeps its rules.
  EXPECT_EQ(error_code(request("tools/list", {{"_meta", {{"progressToken", 1}}}})), jsonrpc::kInvalidRequest);
  EXPECT_EQ(stateless_http_status(jsonrpc::kMethodNotFound), 404);
  EXPECT_EQ(stateless_http_status(jsonrpc::kHeaderMismatch), 400);
  EXPECT_EQ(stateless_http_status(jsonrpc::kInternalError), 200);
}

TEST(McpStdio, StatelessRequestsOverStdio) {
  EpisodeService service(mini_environment().environment, ServiceOptions{});
  McpServer server(service, "1");
  json list = {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"_meta", envelope()}}}};
  json discover = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}, {"params", {{"_meta", envelope()}}}};
  std::istringstream in(discover.dump() + "\n" + list.dump() + "\n");
  std::ostringstream out;
  serve_mcp_stdio(server, in, out);
  std::vector<json> lines;
  std::istringstream replies(out.str());
  for (std::string line; std::getline(replies, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 2u) << out.str();
  EXPECT_EQ(lines[0]["result"]["supportedVersions"].front(), "2026-07-28");
  EXPECT_EQ(lines[1]["result"]["tools"], server.tool_list());
}

}  // namespace
}  // namespace pwab::serve
