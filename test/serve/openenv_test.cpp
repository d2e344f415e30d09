// OpenEnv's contract on a real `pwab serve` front end on loopback (src/serve/openenv.h): the HTTP routes (/reset,
// /step, /state, /schema, /metadata, /health) and the WebSocket session at /ws, as OpenEnv's EnvClient drives them
// (huggingface/OpenEnv, openenv 0.10.0, openenv/core/env_client.py: {"type": "reset"|"step"|"state"|"close", "data"} in,
// {"type": "observation"|"state"|"error", "data"} out); rewards, records and trials with --out; the access rules
// on the upgrade; and what broken or vanishing clients get.
#include "serve/openenv.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "env/tools.h"
#include "metrics/metrics.h"
#include "serve/http_server.h"
#include "serve/serve_world.h"
#include "ws_client.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;
using pwab::test::WsClient;
using pwab::test::WsClosed;
using test::world;

constexpr const char* kJson = "application/json";

struct Served {
  explicit Served(HttpOptions http = options(), runner::RunDirectory* out = nullptr, ServiceOptions service_options = {})
      : service(*world().env, std::move(service_options), out), server(service, http) {
    server.start();
  }
  static HttpOptions options() {
    HttpOptions o;
    o.port = 0;
    return o;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(60, 0);
    return c;
  }
  Json post(const std::string& path, const Json& body, int expect = 200) const {
    auto r = client().Post(path, body.dump(), kJson);
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expect) << path << " " << r->body;
    return Json::parse(r->body);
  }
  Json get(const std::string& path, int expect = 200) const {
    auto r = client().Get(path);
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expect) << path << " " << r->body;
    return Json::parse(r->body);
  }
  EpisodeService service;
  HttpServer server;
};

const data::Task& first_task(data::TaskType type, data::Split split = data::Split::kTest) {
  for (const auto& t : world().ds.tasks(split))
    if (t.type == type) return t;
  throw std::runtime_error("no such task");
}

Json search_action(const data::Task& task) {
  return {{"name", "search_product_by_query"}, {"arguments", {{"query", task.instruction.substr(0, 120)}}}};
}

Json ws(WsClient& c, const Json& message) { return Json::parse(c.call(message.dump())); }

runner::RunManifest manifest(std::string_view track) {
  runner::RunManifest m;
  m.config_json = R"({"agent":"served","track":")" + std::string(track) + R"("})";
  return m;
}

TEST(OpenEnv, SchemaMetadataAndHealth) {
  Served s;
  Json schema = s.get("/schema");
  ASSERT_TRUE(schema.contains("action") && schema.contains("observation") && schema.contains("state"));
  std::set<std::string> names;
  for (const Json& v : schema["action"]["oneOf"]) names.insert(v["properties"]["name"]["const"].get<std::string>());
  for (const char* n : {"search_product_by_query", "get_recommendations_by_history", "add_product_review",
                        "get_product_details_by_asin", "respond", "stop"})
    EXPECT_TRUE(names.contains(n)) << n;
  EXPECT_EQ(schema["state"]["required"], Json({"episode_id", "step_count"}));
  EXPECT_EQ(s.get("/metadata")["name"], "pwab");
  EXPECT_EQ(s.get("/health")["status"], "healthy");  // OpenEnv's HealthStatus
  // OpenEnv's servers are FastAPI apps publishing /openapi.json; `openenv validate --url` reads info.version and
  // whether /reset, /step and /state are there (simulation mode).
  Json api = s.get("/openapi.json");
  EXPECT_TRUE(api["info"]["version"].is_string());
  for (const char* path : {"/reset", "/step", "/state", "/schema", "/metadata", "/health", "/ws", "/mcp", "/v1/reward"})
    EXPECT_TRUE(api["paths"].contains(path)) << path;
  EXPECT_TRUE(api["paths"]["/reset"].contains("post"));
  EXPECT_TRUE(api["paths"]["/state"].contains("get"));
  EXPECT_TRUE(api["paths"].contains("/v1/episodes/{episode_id}/step"));
  // The plain JSON-RPC POST /mcp the validator sends (an empty object) gets a JSON-RPC error, status 200.
  Json empty = s.post("/mcp", Json::object());
  EXPECT_EQ(empty["jsonrpc"], "2.0");
  EXPECT_EQ(empty["error"]["code"], -32600);
}

// Over HTTP the episode is named by the id /reset returned; the reward is 0 until the end, then the episode's
// benchmark score, which is the score of the same record the /v1 API gives.
TEST(OpenEnv, HttpResetAndStepPlayAnEpisodeToItsScore) {
  Served s;
  const data::Task& task = first_task(data::TaskType::kSearch);
  Json reset = s.post("/reset", {{"task", runner::task_key(task)}, {"track", "multi"}, {"seed", 3}});
  EXPECT_TRUE(reset["reward"].is_null());
  EXPECT_FALSE(reset["done"]);
  const Json& obs = reset["observation"];
  std::string id = obs["episode_id"];
  EXPECT_EQ(obs["task"], runner::task_key(task));
  EXPECT_EQ(obs["track"], "multi");
  EXPECT_NE(obs["text"].get<std::string>().find(task.instruction.substr(0, 30)), std::string::npos);
  EXPECT_EQ(obs["tools"].size(), 4u);
  EXPECT_TRUE(obs["history"].is_array());

  Json asked = s.post("/step", {{"episode_id", id}, {"action", {{"name", "respond"}, {"arguments", {{"content", "Any brand?"}}}}}});
  EXPECT_EQ(asked["reward"], 0.0);
  EXPECT_FALSE(asked["done"]);
  EXPECT_FALSE(asked["observation"]["text"].get<std::string>().empty());  // the scripted user's reply
  Json state = s.get("/state?episode_id=" + id);
  EXPECT_EQ(state["episode_id"], id);
  EXPECT_EQ(state["step_count"], 1);

  Json searched = s.post("/step", {{"episode_id", id}, {"action", search_action(task)}, {"request_id", "r1"}});
  EXPECT_EQ(searched["reward"], 0.0);
  EXPECT_TRUE(searched["observation"]["scored"]);
  const double attempt = searched["observation"]["step_reward"]["result_acc"];
  Json stopped = s.post("/step", {{"episode_id", id}, {"action", {{"name", "stop"}, {"metadata", {{"k", 1}}}}}});
  EXPECT_TRUE(stopped["done"]);
  EXPECT_EQ(stopped["observation"]["ending"], "stop");
  EXPECT_DOUBLE_EQ(stopped["reward"].get<double>(), attempt);  // the best (only) attempt with the right function
  EXPECT_DOUBLE_EQ(stopped["observation"]["score"]["result_acc"].get<double>(), attempt);
  // Finished episodes are ended at once: nothing stays open.
  EXPECT_EQ(s.service.n_sessions(), 0u);
  s.get("/state?episode_id=" + id, 404);
}

TEST(OpenEnv, ResetChoosesTasksBySeedSplitOrIndex) {
  Served s;
  Json a = s.post("/reset", {{"seed", 42}});
  Json b = s.post("/reset", {{"seed", 42}});
  EXPECT_EQ(a["observation"]["task"], b["observation"]["task"]);  // the same seed draws the same task
  EXPECT_EQ(a["observation"]["task"].get<std::string>().rfind("train/", 0), 0u);  // train by default
  EXPECT_EQ(s.post("/reset", {{"split", "test"}, {"index", 5}})["observation"]["task"], "test/5");
  EXPECT_EQ(s.post("/reset", Json::object())["observation"]["track"], "single");
  EXPECT_EQ(s.post("/reset", {{"task", "test/1"}, {"episode_id", "my-episode_1"}})["observation"]["episode_id"],
            "my-episode_1");
  // Refusals: FastAPI's shape with pwab's error beside it.
  Json bad = s.post("/reset", {{"tsak", "test/1"}}, 422);
  EXPECT_NE(bad["detail"].get<std::string>().find("tsak"), std::string::npos);
  EXPECT_EQ(bad["error"]["code"], "bad_request");
  s.post("/reset", {{"task", "test/1"}, {"split", "test"}}, 422);
  s.post("/reset", {{"task", "test/99999"}}, 404);
  s.post("/reset", {{"split", "valid"}}, 422);
  s.post("/reset", {{"task", "test/1"}, {"episode_id", "my-episode_1"}}, 409);  // that id is open
  s.post("/reset", {{"task", "test/1"}, {"episode_id", "has space"}}, 422);
  s.post("/step", {{"action", {{"name", "stop"}}}}, 422);  // no episode_id
  s.post("/step", {{"episode_id", "ep_nope"}, {"action", {{"name", "stop"}}}}, 404);
  s.get("/state", 422);
}

// With --out, every reset of a task is a trial of its own (RL plays a task many times), recorded once each.
TEST(OpenEnv, RepeatedRolloutsOfATaskAreTrialsOfTheirOwn) {
  pwab::test::TempDir dir;
  auto run = runner::RunDirectory::open(dir.path() / "single", manifest("single"), false);
  Served s(Served::options(), &run);
  const data::Task& task = first_task(data::TaskType::kSearch);
  std::vector<int> trials;
  for (int i = 0; i < 3; ++i) {
    Json reset = s.post("/reset", {{"task", runner::task_key(task)}});
    trials.push_back(reset["observation"]["trial"]);
    Json done = s.post("/step", {{"episode_id", reset["observation"]["episode_id"]}, {"action", search_action(task)}});
    EXPECT_TRUE(done["done"]);
  }
  EXPECT_EQ(trials, (std::vector<int>{0, 1, 2}));
  auto records = runner::read_records(dir.path() / "single");
  ASSERT_EQ(records.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(records[static_cast<std::size_t>(i)].trial, i);
  // An explicit trial that is recorded is refused, as on /v1/episodes.
  EXPECT_EQ(s.post("/reset", {{"task", runner::task_key(task)}, {"trial", 1}}, 409)["error"]["code"], "already_recorded");
}

// The WebSocket session: reset, steps, state, close, as EnvClient sends them; the same episode as over HTTP.
TEST(OpenEnv, AWebSocketSessionPlaysEpisodesOneAfterAnother) {
  Served s;
  const data::Task& task = first_task(data::TaskType::kSearch);
  WsClient c(s.server.port());
  Json reset = ws(c, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}, {"seed", 3}}}});
  ASSERT_EQ(reset["type"], "observation") << reset.dump();
  EXPECT_FALSE(reset["data"]["done"]);
  Json state = ws(c, {{"type", "state"}});
  EXPECT_EQ(state["type"], "state");
  EXPECT_EQ(state["data"]["step_count"], 0);
  ws(c, {{"type", "step"}, {"data", {{"name", "respond"}, {"arguments", {{"content", "Any brand?"}}}}}});
  Json searched = ws(c, {{"type", "step"}, {"data", search_action(task)}});
  Json stopped = ws(c, {{"type", "step"}, {"data", {{"name", "stop"}}}});
  EXPECT_TRUE(stopped["data"]["done"]);
  const double reward = stopped["data"]["reward"];
  EXPECT_DOUBLE_EQ(reward, searched["data"]["observation"]["step_reward"]["result_acc"].get<double>());
  Json after = ws(c, {{"type", "state"}});
  EXPECT_EQ(after["data"]["step_count"], 3);
  EXPECT_TRUE(after["data"]["finished"]);
  EXPECT_EQ(ws(c, {{"type", "step"}, {"data", {{"name", "stop"}}}})["data"]["code"], "SESSION_ERROR");

  // The same actions over HTTP give the same reward.
  Json http = s.post("/reset", {{"task", runner::task_key(task)}, {"track", "multi"}, {"seed", 3}});
  std::string id = http["observation"]["episode_id"];
  s.post("/step", {{"episode_id", id}, {"action", {{"name", "respond"}, {"arguments", {{"content", "Any brand?"}}}}}});
  s.post("/step", {{"episode_id", id}, {"action", search_action(task)}});
  EXPECT_DOUBLE_EQ(s.post("/step", {{"episode_id", id}, {"action", {{"name", "stop"}}}})["reward"].get<double>(), reward);

  // A second episode on the same connection; a reset mid-episode ends the first (the client's choice).
  ws(c, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}}}});
  EXPECT_EQ(s.service.n_sessions(), 1u);
  ws(c, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}}}});
  EXPECT_EQ(s.service.n_sessions(), 1u);
  c.send(Json{{"type", "close"}}.dump());
  EXPECT_THROW(c.receive(), WsClosed);
  for (int i = 0; i < 500 && s.service.n_sessions() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(s.service.n_sessions(), 0u);
}

TEST(OpenEnv, BadMessagesGetOpenEnvErrorsAndTheSessionGoesOn) {
  Served s;
  WsClient c(s.server.port());
  auto code = [&](const std::string& text) {
    Json answer = Json::parse(c.call(text));
    EXPECT_EQ(answer["type"], "error") << answer.dump();
    EXPECT_FALSE(answer["data"]["message"].get<std::string>().empty());
    return answer["data"]["code"].get<std::string>();
  };
  EXPECT_EQ(code("{not json"), "INVALID_JSON");
  EXPECT_EQ(code("[1, 2]"), "INVALID_JSON");
  EXPECT_EQ(code(std::string(300, '[') + std::string(300, ']')), "INVALID_JSON");
  EXPECT_EQ(code(R"({"type": "dance"})"), "UNKNOWN_TYPE");
  EXPECT_EQ(code(R"({"type": "step", "data": {"name": "stop"}})"), "SESSION_ERROR");  // no reset yet
  EXPECT_EQ(code(R"({"type": "reset", "data": {"task": "test/1"}, "extra": 1})"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"type": "reset", "data": {"task": "nowhere/1"}})"), "VALIDATION_ERROR");
  ASSERT_EQ(ws(c, {{"type", "reset"}, {"data", {{"task", "test/1"}}}})["type"], "observation");
  Json bad = Json::parse(c.call(R"({"type": "step", "data": {"name": 7}})"));
  EXPECT_EQ(bad["data"]["code"], "VALIDATION_ERROR");
  EXPECT_EQ(bad["data"]["status"], 422);
  // A malformed tool argument is the environment's error observation (a scored [0, 0] attempt), not a refusal.
  Json wrong = ws(c, {{"type", "step"}, {"data", {{"name", "search_product_by_query"}, {"arguments", "{\"q\": "}}}});
  EXPECT_EQ(wrong["type"], "observation");
  EXPECT_TRUE(wrong["data"]["done"]);
  EXPECT_EQ(wrong["data"]["reward"], 0.0);
  EXPECT_NE(wrong["data"]["observation"]["text"].get<std::string>().find("Error"), std::string::npos);
}

TEST(OpenEnv, SessionsOverTheCapGetCapacityReached) {
  HttpOptions o = Served::options();
  o.max_ws_sessions = 2;
  Served s(o);
  WsClient a(s.server.port()), b(s.server.port());
  ws(a, {{"type", "state"}});
  ws(b, {{"type", "state"}});
  WsClient third(s.server.port());
  Json refused = Json::parse(third.receive());
  EXPECT_EQ(refused["type"], "error");
  EXPECT_EQ(refused["data"]["code"], "CAPACITY_REACHED");
  EXPECT_EQ(refused["data"]["max_sessions"], 2);
  EXPECT_THROW(third.receive(), WsClosed);
  a.close();
  for (int i = 0; i < 500 && s.server.n_websockets() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  WsClient fourth(s.server.port());  // a slot is free again
  EXPECT_EQ(ws(fourth, {{"type", "state"}})["type"], "state");
}

// The access rules of docs/serve.md hold for the upgrade: a browser page on another site, a rebinding Host, a
// missing token are refused before any WebSocket exists.
TEST(OpenEnv, TheUpgradeObeysTheAccessRules) {
  Served open;
  EXPECT_EQ(pwab::test::ws_upgrade_status(open.server.port(), "/ws").first, 101);
  EXPECT_EQ(pwab::test::ws_upgrade_status(open.server.port(), "/ws", {{"Origin", "https://evil.example"}}).first, 403);
  EXPECT_EQ(pwab::test::ws_upgrade_status(open.server.port(), "/ws", {{"Host", "evil.example"}}).first, 403);
  EXPECT_EQ(pwab::test::ws_upgrade_status(open.server.port(), "/nowhere").first, 404);
  HttpOptions o = Served::options();
  o.access.token = "t0ken";
  Served locked(o);
  auto [status, body] = pwab::test::ws_upgrade_status(locked.server.port(), "/ws");
  EXPECT_EQ(status, 401);
  EXPECT_NE(body.find("unauthorized"), std::string::npos);
  EXPECT_EQ(pwab::test::ws_upgrade_status(locked.server.port(), "/ws", {{"Authorization", "Bearer t0ken"}}).first, 101);
  EXPECT_THROW(WsClient(locked.server.port()), std::runtime_error);
}

// Oversized and malformed frames close that connection (1009, 1002) and nothing else; a client that vanishes
// mid-episode leaves no record and no session behind, while a finished episode's record is kept exactly once.
TEST(OpenEnv, BrokenAndVanishingClientsLoseNothingAndLeaveNothing) {
  pwab::test::TempDir dir;
  auto run = runner::RunDirectory::open(dir.path() / "multi", manifest("multi"), false);
  HttpOptions o = Served::options();
  o.max_ws_message_bytes = 4096;
  RecordSinks sinks{nullptr, &run};
  EpisodeService service(*world().env, {}, sinks);
  HttpServer server(service, o);
  server.start();
  {
    WsClient big(server.port());
    big.send(Json{{"type", "reset"}, {"data", {{"task", std::string(8000, 'x')}}}}.dump());
    try {
      big.receive();
      ADD_FAILURE() << "an oversized message was answered";
    } catch (const WsClosed& e) {
      EXPECT_EQ(e.code, 1009) << e.what();
    }
  }
  {
    WsClient raw(server.port());
    raw.send_raw(std::string("\x81\x05hello", 7));  // a text frame without the mask every client frame must carry
    try {
      raw.receive();
      ADD_FAILURE() << "an unmasked frame was answered";
    } catch (const WsClosed& e) {
      EXPECT_EQ(e.code, 1002) << e.what();
    }
  }
  const data::Task& task = first_task(data::TaskType::kSearch);
  {
    WsClient gone(server.port());
    ws(gone, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}}}});
    ws(gone, {{"type", "step"}, {"data", {{"name", "respond"}, {"arguments", {{"content", "Hm?"}}}}}});
    EXPECT_EQ(service.n_sessions(), 1u);
    gone.drop();  // no close frame: a crashed rollout worker
  }
  for (int i = 0; i < 1000 && (service.n_sessions() > 0 || server.n_websockets() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(service.n_sessions(), 0u);
  EXPECT_EQ(server.n_websockets(), 0u);
  EXPECT_TRUE(runner::read_records(dir.path() / "multi").empty());
  {
    WsClient done(server.port());
    ws(done, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}}}});
    EXPECT_TRUE(ws(done, {{"type", "step"}, {"data", {{"name", "stop"}}}})["data"]["done"]);
    done.drop();
  }
  for (int i = 0; i < 1000 && server.n_websockets() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto records = runner::read_records(dir.path() / "multi");
  ASSERT_EQ(records.size(), 1u);  // the unfinished episode's trial was freed, so this one is trial 0 again
  EXPECT_EQ(records[0].trial, 0);
  EXPECT_EQ(records[0].ending, "stop");
  // The server still serves.
  WsClient after(server.port());
  EXPECT_EQ(ws(after, {{"type", "reset"}, {"data", {{"task", "test/2"}}}})["type"], "observation");
  server.stop();
}

// Ten thousand sessions opened and dropped (half with an episode, half mid-handshake or right after it): every
// one is freed and the server goes on serving.
TEST(OpenEnv, TenThousandSessionsOpenedAndDroppedAreAllFreed) {
  Served s;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1250; ++i) {
        try {
          WsClient c(s.server.port());
          if ((i + t) % 2 == 0) ws(c, {{"type", "reset"}, {"data", {{"task", "test/3"}, {"history", false}}}});
          c.drop();
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  for (int i = 0; i < 5000 && (s.server.n_websockets() > 0 || s.service.n_sessions() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(s.server.n_websockets(), 0u);
  EXPECT_EQ(s.service.n_sessions(), 0u);
  WsClient after(s.server.port());
  EXPECT_EQ(ws(after, {{"type", "reset"}, {"data", {{"task", "test/2"}}}})["type"], "observation");
}


// --- OpenEnv's MCP side: plain JSON-RPC at /mcp, sessions shared with /ws, MCP actions in steps ------------

Json rpc(const Served& s, const std::string& method, Json params = Json::object(), int id = 1) {
  return s.post("/mcp", {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
}

// MCPToolClient's production mode (openenv mcp_client.py): openenv/session/create over POST /mcp, a WebSocket at
// /ws?session_id= for reset, and tools/call with the session_id acting on that same episode; close order as the
// client does it (the WebSocket's close message, then openenv/session/close).
TEST(OpenEnv, McpSessionSharesItsEpisodeWithTheWebSocket) {
  Served s;
  const data::Task& task = first_task(data::TaskType::kSearch);
  Json created = rpc(s, "openenv/session/create");
  const std::string sid = created["result"]["session_id"];
  ASSERT_FALSE(sid.empty());
  EXPECT_EQ(s.get("/health")["mcp_sessions"], 1);
  Json listed = rpc(s, "tools/list", {{"session_id", sid}});
  std::set<std::string> names;
  for (const Json& t : listed["result"]["tools"]) {
    names.insert(t["name"].get<std::string>());
    EXPECT_FALSE(t["inputSchema"]["properties"].contains("episode_id")) << t.dump();  // the session names it
  }
  for (const char* n : {"respond", "search_product_by_query", "get_recommendations_by_history", "add_product_review", "stop"})
    EXPECT_TRUE(names.contains(n)) << n;
  EXPECT_FALSE(names.contains("start_episode"));

  // No episode yet: a clear JSON-RPC error, not an empty result.
  Json early = rpc(s, "tools/call", {{"session_id", sid}, {"name", "stop"}, {"arguments", Json::object()}});
  EXPECT_EQ(early["error"]["code"], -32600) << early.dump();
  EXPECT_EQ(early["error"]["data"]["code"], "unknown_episode");

  WsClient c(s.server.port(), "/ws?session_id=" + sid);
  Json reset = ws(c, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}, {"seed", 3}}}});
  ASSERT_EQ(reset["type"], "observation") << reset.dump();
  EXPECT_FALSE(reset["data"]["observation"].contains("tools"));  // MCP mode: tools/list carries them
  WsClient second(s.server.port(), "/ws?session_id=" + sid);  // one WebSocket per session
  EXPECT_EQ(Json::parse(second.receive())["data"]["code"], "SESSION_ERROR");

  Json searched = rpc(s, "tools/call", {{"session_id", sid}, {"name", "search_product_by_query"},
                                        {"arguments", search_action(task)["arguments"]}});
  ASSERT_TRUE(searched.contains("result")) << searched.dump();
  const Json& step = searched["result"]["structuredContent"];
  EXPECT_EQ(searched["result"]["content"][0]["text"], step["text"]);
  EXPECT_TRUE(step["scored"]);
  EXPECT_FALSE(step["done"]);
  EXPECT_EQ(ws(c, {{"type", "state"}})["data"]["step_count"], 1);  // the WebSocket's episode took the step
  Json stopped = rpc(s, "tools/call", {{"session_id", sid}, {"name", "stop"}});
  EXPECT_TRUE(stopped["result"]["structuredContent"]["done"]);
  EXPECT_DOUBLE_EQ(stopped["result"]["structuredContent"]["reward"].get<double>(),
                   step["step_reward"]["result_acc"].get<double>());
  EXPECT_TRUE(ws(c, {{"type", "state"}})["data"]["finished"]);
  EXPECT_EQ(s.service.n_sessions(), 0u);  // finished and ended at once

  Json unknown_tool = rpc(s, "tools/call", {{"session_id", sid}, {"name", "start_episode"}});
  EXPECT_EQ(unknown_tool["error"]["code"], -32602);
  // Closed while attached: closing now, gone when the WebSocket goes.
  Json closing = rpc(s, "openenv/session/close", {{"session_id", sid}});
  EXPECT_EQ(closing["result"]["closing"], true);
  c.send(Json{{"type", "close"}}.dump());
  EXPECT_THROW(c.receive(), WsClosed);
  for (int i = 0; i < 500 && s.get("/health")["mcp_sessions"] != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(s.get("/health")["mcp_sessions"], 0);
  EXPECT_EQ(rpc(s, "tools/list", {{"session_id", sid}})["error"]["code"], -32602);  // Unknown session_id
  EXPECT_EQ(rpc(s, "openenv/session/close", {{"session_id", sid}})["error"]["code"], -32602);
  WsClient late(s.server.port(), "/ws?session_id=" + sid);
  EXPECT_EQ(Json::parse(late.receive())["data"]["code"], "SESSION_ERROR");

  // Closed unattached with an episode open: the episode is ended as the client's choice.
  const std::string other = rpc(s, "openenv/session/create")["result"]["session_id"];
  {
    WsClient d(s.server.port(), "/ws?session_id=" + other);
    ws(d, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}}}});
  }  // dropped without a close message: the session (and its episode) stays for /mcp
  for (int i = 0; i < 500 && s.server.n_websockets() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(s.service.n_sessions(), 1u);
  EXPECT_EQ(rpc(s, "openenv/session/close", {{"session_id", other}})["result"]["closed"], true);
  EXPECT_EQ(s.service.n_sessions(), 0u);
}

// Plain JSON-RPC without a session: pwab's MCP tools (episode_id in the arguments); refusals are JSON-RPC errors
// in a 200, as OpenEnv's servers answer; MCP's own transports are untouched by it.
TEST(OpenEnv, PlainJsonRpcWithoutASession) {
  Served s;
  Json tools = rpc(s, "tools/list");
  ASSERT_TRUE(tools.contains("result")) << tools.dump();
  bool has_start = false;
  for (const Json& t : tools["result"]["tools"]) has_start = has_start || t["name"] == "start_episode";
  EXPECT_TRUE(has_start);
  Json started = rpc(s, "tools/call", {{"name", "start_episode"}, {"arguments", {{"task", "test/0"}}}});
  const std::string episode = started["result"]["structuredContent"]["episode_id"];
  Json stopped = rpc(s, "tools/call", {{"name", "stop"}, {"arguments", {{"episode_id", episode}}}});
  EXPECT_TRUE(stopped["result"]["structuredContent"]["finished"]);
  EXPECT_EQ(rpc(s, "resources/list")["error"]["code"], -32601);
  EXPECT_EQ(rpc(s, "tools/call", {{"name", "stop"}, {"session_id", 7}})["error"]["code"], -32602);
  EXPECT_EQ(rpc(s, "openenv/session/close")["error"]["code"], -32602);
  EXPECT_EQ(s.post("/mcp", {{"jsonrpc", "2.0"}, {"method", "ping"}, {"id", 1}, {"extra", 1}})["error"]["code"], -32600);
  // Over the session cap: -32000 with the counts, as OpenEnv answers.
  HttpOptions o = Served::options();
  o.max_ws_sessions = 1;
  Served capped(o);
  ASSERT_TRUE(rpc(capped, "openenv/session/create").contains("result"));
  Json full = rpc(capped, "openenv/session/create");
  EXPECT_EQ(full["error"]["code"], -32000);
  EXPECT_EQ(full["error"]["data"]["max_sessions"], 1);
  WsClient refused(capped.server.port());
  EXPECT_EQ(Json::parse(refused.receive())["data"]["code"], "CAPACITY_REACHED");
}

// OpenEnv's MCP actions in a step ({"type": "list_tools"}, {"type": "call_tool", ...}) and the {"type": "mcp"}
// message, over the WebSocket and HTTP.
TEST(OpenEnv, McpActionsAndMessages) {
  Served s;
  const data::Task& task = first_task(data::TaskType::kSearch);
  WsClient c(s.server.port());
  Json listed = ws(c, {{"type", "step"}, {"data", {{"type", "list_tools"}, {"metadata", Json::object()}}}});
  ASSERT_EQ(listed["type"], "observation") << listed.dump();
  EXPECT_GE(listed["data"]["observation"]["tools"].size(), 6u);
  EXPECT_TRUE(listed["data"]["observation"]["tools"][0].contains("input_schema"));  // OpenEnv's Tool fields
  ws(c, {{"type", "reset"}, {"data", {{"task", runner::task_key(task)}, {"track", "multi"}, {"seed", 3}}}});
  Json called = ws(c, {{"type", "step"}, {"data", {{"type", "call_tool"}, {"tool_name", "search_product_by_query"},
                                                  {"arguments", search_action(task)["arguments"]}}}});
  ASSERT_EQ(called["type"], "observation") << called.dump();
  EXPECT_EQ(called["data"]["observation"]["tool_name"], "search_product_by_query");
  EXPECT_EQ(called["data"]["observation"]["result"], called["data"]["observation"]["text"]);
  EXPECT_TRUE(called["data"]["observation"]["scored"]);
  Json via_mcp = ws(c, {{"type", "mcp"}, {"data", {{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/call"},
                                                   {"params", {{"name", "stop"}}}}}});
  ASSERT_EQ(via_mcp["type"], "mcp") << via_mcp.dump();
  EXPECT_EQ(via_mcp["data"]["id"], 5);
  EXPECT_TRUE(via_mcp["data"]["result"]["structuredContent"]["done"]);
  EXPECT_DOUBLE_EQ(via_mcp["data"]["result"]["structuredContent"]["reward"].get<double>(),
                   called["data"]["observation"]["step_reward"]["result_acc"].get<double>());
  Json bad = ws(c, {{"type", "step"}, {"data", {{"type", "call_tool"}}}});
  EXPECT_EQ(bad["type"], "error");
  // Over HTTP: list_tools needs no episode; call_tool plays one step.
  EXPECT_GE(s.post("/step", {{"action", {{"type", "list_tools"}}}})["observation"]["tools"].size(), 6u);
  std::string id = s.post("/reset", {{"task", runner::task_key(task)}})["observation"]["episode_id"];
  Json step = s.post("/step", {{"episode_id", id}, {"action", {{"type", "call_tool"}, {"tool_name", "search_product_by_query"},
                                                               {"arguments", search_action(task)["arguments"]}}}});
  EXPECT_TRUE(step["done"]);  // single-turn: the first task function ends it
  EXPECT_EQ(step["observation"]["tool_name"], "search_product_by_query");
  s.post("/step", {{"episode_id", "x"}, {"action", {{"type", "call_tool"}, {"tool_name", 3}}}}, 422);
  // A WebSocket at /mcp carries the same plain JSON-RPC.
  WsClient m(s.server.port(), "/mcp");
  Json pong = Json::parse(m.call(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"));
  EXPECT_EQ(pong["result"], Json::object());
  EXPECT_EQ(Json::parse(m.call("{oops"))["error"]["code"], -32700);
}

}  // namespace
}  // namespace pwab::serve
