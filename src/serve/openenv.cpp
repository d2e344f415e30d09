// OpenEnv's reset/step/state over EpisodeService, and its WebSocket session (openenv.h says what maps to what).
#include "serve/openenv.h"

#include <fmt/format.h>

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "core/json_depth.h"
#include "core/json_writer.h"
#include "core/rng.h"
#include "core/version.h"
#include "env/tools.h"
#include "runner/results.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

OpenEnvFrontEnd::Invalid invalid(const std::string& message) {
  return OpenEnvFrontEnd::Invalid(422, "bad_request", message);
}

void refuse_unknown_fields(const Json& j, std::string_view what, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (ok) continue;
    std::string names;
    for (auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    throw invalid(fmt::format("{}: unknown field '{}' (known: {})", what, key, names));
  }
}

Json error_data(std::string_view message, std::string_view openenv_code, const RequestError* e) {
  Json data = {{"message", message}, {"code", openenv_code}};
  if (e) {
    data["pwab_code"] = e->code;
    data["status"] = e->status;
  }
  return data;
}

//! OpenEnv's WebSocket error code for a refusal of the service.
std::string_view ws_code(const RequestError& e) {
  if (e.code == "unknown_episode") return "SESSION_ERROR";
  if (e.status == 429) return "CAPACITY_REACHED";
  if (e.status >= 500 || e.status == 402) return "EXECUTION_ERROR";
  return "VALIDATION_ERROR";
}

Json ws_error(std::string_view message, std::string_view code, const RequestError* e = nullptr) {
  return {{"type", "error"}, {"data", error_data(message, code, e)}};
}

std::string dump(const Json& j) { return dump_compact(j); }

}  // namespace

OpenEnvFrontEnd::OpenEnvFrontEnd(EpisodeService& service, const data::Dataset& dataset, OpenEnvOptions options)
    : service_(service), dataset_(dataset), options_(options), tools_(service, kVersion), session_tools_(Json::array()) {
  // A session's tools are the environment's functions (respond, the benchmark's tools, stop) without the
  // episode_id pwab's MCP tools take: the session names the episode.
  for (Json tool : tools_.tool_list()) {
    Json& schema = tool["inputSchema"];
    if (!schema.contains("properties") || !schema["properties"].contains("episode_id")) continue;
    const std::string name = tool["name"].get<std::string>();
    if (name == "episode_state" || name == "end_episode") continue;
    schema["properties"].erase("episode_id");
    Json required = Json::array();
    for (const Json& r : schema.value("required", Json::array()))
      if (r != "episode_id") required.push_back(r);
    if (required.empty()) schema.erase("required");
    else schema["required"] = std::move(required);
    session_tools_.push_back(std::move(tool));
  }
}

Json OpenEnvFrontEnd::start_request(const Json& reset) const {
  constexpr std::string_view kWhat = "reset";
  if (reset.is_null()) return start_request(Json::object());
  if (!reset.is_object()) throw invalid(fmt::format("reset: the body must be a JSON object, got {}", reset.type_name()));
  refuse_unknown_fields(reset, kWhat,
                        {"seed", "episode_id", "task", "split", "index", "track", "user_sim", "max_steps", "trial",
                         "history", "idle_timeout_s"});
  Json start = Json::object();
  for (const char* passed : {"track", "user_sim", "max_steps", "history", "episode_id", "idle_timeout_s"})
    if (reset.contains(passed) && !reset[passed].is_null()) start[passed] = reset[passed];
  if (reset.contains("seed") && !reset["seed"].is_null()) start["seed"] = reset["seed"];
  start["trial"] = reset.contains("trial") && !reset["trial"].is_null() ? reset["trial"] : Json("next");

  if (reset.contains("task") && !reset["task"].is_null()) {
    if (reset.contains("split") || reset.contains("index"))
      throw invalid("reset: give either 'task' (\"test/17\") or 'split' and 'index', not both");
    start["task"] = reset["task"];
    return start;
  }
  data::Split split = options_.default_split;
  if (reset.contains("split") && !reset["split"].is_null()) {
    const Json& s = reset["split"];
    auto parsed = s.is_string() ? data::parse_split(s.get<std::string>()) : std::nullopt;
    if (!parsed || (*parsed != data::Split::kTrain && *parsed != data::Split::kTest))
      throw invalid(fmt::format("reset: 'split' must be \"train\" or \"test\", got {}", s.dump()));
    split = *parsed;
  }
  const std::size_t n = dataset_.tasks(split).size();
  if (n == 0) throw invalid(fmt::format("reset: the {} split has no tasks", data::to_string(split)));
  std::size_t index = 0;
  if (reset.contains("index") && !reset["index"].is_null()) {
    const Json& i = reset["index"];
    if (!i.is_number_unsigned() && !(i.is_number_integer() && i.get<int64_t>() >= 0))
      throw invalid(fmt::format("reset: 'index' must be a non-negative integer, got {}", i.dump()));
    index = i.get<std::size_t>();  // past the end: the service names the split's size (404 unknown_task)
  } else if (start.contains("seed")) {
    // The same seed draws the same task, so a seeded reset replays.
    if (!start["seed"].is_number_unsigned() && !(start["seed"].is_number_integer() && start["seed"].get<int64_t>() >= 0))
      throw invalid(fmt::format("reset: 'seed' must be a non-negative integer, got {}", start["seed"].dump()));
    index = static_cast<std::size_t>(derive_seed(start["seed"].get<uint64_t>(), 0x7a5c) % n);
  } else {
    static thread_local std::mt19937_64 draw(std::random_device{}());
    index = static_cast<std::size_t>(draw() % n);
  }
  start["task"] = fmt::format("{}/{}", data::to_string(split), index);
  return start;
}

Json OpenEnvFrontEnd::reset_answer(Json started) const {
  Json observation = {{"text", std::move(started["observation"])},
                      {"episode_id", started["episode_id"]},
                      {"task", started["task"]},
                      {"trial", started["trial"]},
                      {"track", started["track"]},
                      {"user_sim", started["user_sim"]},
                      {"seed", started["seed"]},
                      {"steps", 0},
                      {"max_steps", started["max_steps"]},
                      {"finished", false},
                      {"tools", std::move(started["tools"])}};
  if (started.contains("history")) observation["history"] = std::move(started["history"]);
  return {{"observation", std::move(observation)}, {"reward", nullptr}, {"done", false}};
}

Json OpenEnvFrontEnd::reset(const Json& request) {
  Json started;
  try {
    started = service_.start(start_request(request));
  } catch (const Invalid&) {
    throw;
  } catch (const RequestError& e) {
    if (e.status == 400) throw Invalid(422, e.code, e.what());
    throw;
  }
  return reset_answer(std::move(started));
}

Json OpenEnvFrontEnd::step_episode(const std::string& episode_id, const Json& action) {
  Json call = action;
  if (call.is_object()) call.erase("metadata");  // OpenEnv's Action base field; nothing of pwab's
  Json r;
  try {
    r = service_.step(episode_id, call);
  } catch (const RequestError& e) {
    if (e.status == 400) throw Invalid(422, e.code, e.what());
    throw;
  }
  Json observation = {{"text", std::move(r["observation"])},
                      {"episode_id", episode_id},
                      {"steps", r["steps"]},
                      {"max_steps", r["max_steps"]},
                      {"finished", r["finished"]},
                      {"step_reward", std::move(r["reward"])},
                      {"scored", r["scored"]}};
  if (!r["finished"].get<bool>()) return {{"observation", std::move(observation)}, {"reward", 0.0}, {"done", false}};
  // Finished: the record is written (it was at this step) and the episode ended, so a rollout that never calls
  // again holds no session.
  metrics::TaskScore score = service_.finish(episode_id);
  observation["ending"] = r["ending"];
  observation["score"] = {{"function_acc", score.f}, {"result_acc", score.r}};
  return {{"observation", std::move(observation)}, {"reward", score.r}, {"done", true}};
}

Json OpenEnvFrontEnd::step(const Json& request) {
  constexpr std::string_view kWhat = "step";
  if (!request.is_object()) throw invalid(fmt::format("step: the body must be a JSON object, got {}", request.type_name()));
  refuse_unknown_fields(request, kWhat, {"action", "episode_id", "timeout_s", "request_id"});
  if (!request.contains("action")) throw invalid("step: 'action' is required: {\"name\": ..., \"arguments\": {...}}");
  const Json& action = request["action"];
  const Json type = action.is_object() ? action.value("type", Json()) : Json();
  if (type == "list_tools") return list_tools_answer();  // OpenEnv's MCP action: needs no episode
  auto id = request.find("episode_id");
  if (id == request.end() || !id->is_string())
    throw invalid("step: 'episode_id' is required over HTTP: the id /reset returned in its observation (the WebSocket "
                  "at /ws keeps it for you)");
  if (type != "call_tool") return step_episode(id->get<std::string>(), action);
  Json answer = step_episode(id->get<std::string>(), call_tool_action(action));
  answer["observation"]["tool_name"] = action["tool_name"];
  answer["observation"]["result"] = answer["observation"]["text"];
  answer["observation"]["error"] = nullptr;
  return answer;
}

Json OpenEnvFrontEnd::state(std::string_view episode_id) const {
  Json s = service_.state(episode_id);
  s["step_count"] = s["steps"];
  return s;
}

Json OpenEnvFrontEnd::metadata() const {
  return {{"name", "pwab"},
          {"description",
           "PersonalWAB: personalized web-agent episodes (search, recommend, review) for one user, with the "
           "benchmark's own reward"},
          {"readme_content", nullptr},
          {"version", kVersion},
          {"author", nullptr},
          {"documentation_url", "docs/rl-engines.md"}};
}

Json OpenEnvFrontEnd::schema() {
  Json tools = Json::parse(env::tools_json(/*include_product_details=*/true));
  Json variants = Json::array();
  for (const Json& tool : tools) {
    const Json& f = tool["function"];
    variants.push_back({{"type", "object"},
                        {"description", f["description"]},
                        {"properties", {{"name", {{"const", f["name"]}}}, {"arguments", f["parameters"]},
                                        {"metadata", {{"type", "object"}}}}},
                        {"required", {"name", "arguments"}},
                        {"additionalProperties", false}});
  }
  variants.push_back({{"type", "object"},
                      {"description", "Say something to the user (multi-turn: the user simulator answers)"},
                      {"properties",
                       {{"name", {{"const", "respond"}}},
                        {"arguments",
                         {{"type", "object"},
                          {"properties", {{"content", {{"type", "string"}}}}},
                          {"required", {"content"}}}},
                        {"metadata", {{"type", "object"}}}}},
                      {"required", {"name", "arguments"}},
                      {"additionalProperties", false}});
  variants.push_back({{"type", "object"},
                      {"description", "End the episode (multi-turn)"},
                      {"properties", {{"name", {{"const", "stop"}}}, {"arguments", {{"type", "object"}}},
                                      {"metadata", {{"type", "object"}}}}},
                      {"required", {"name"}},
                      {"additionalProperties", false}});
  Json number = {{"type", "number"}};
  Json reward = {{"type", "object"},
                 {"properties", {{"function_acc", number}, {"result_acc", number}}}};
  Json observation = {
      {"title", "PwabObservation"},
      {"type", "object"},
      {"properties",
       {{"text", {{"type", "string"}, {"description", "what the environment said: the instruction at reset, then the "
                                                       "tool's output or the user's reply"}}},
        {"episode_id", {{"type", "string"}}},
        {"task", {{"type", "string"}, {"description", "<split>/<index>, at reset"}}},
        {"trial", {{"type", "integer"}}},
        {"track", {{"enum", {"single", "multi"}}}},
        {"user_sim", {{"enum", {"none", "scripted", "llm"}}}},
        {"seed", {{"type", "integer"}}},
        {"steps", {{"type", "integer"}}},
        {"max_steps", {{"type", "integer"}}},
        {"finished", {{"type", "boolean"}}},
        {"tools", {{"type", "array"}, {"description", "the OpenAI tool schemas offered (at reset)"}}},
        {"history", {{"type", "array"}, {"description", "the user's visible behaviours (at reset)"}}},
        {"step_reward", reward},
        {"scored", {{"type", "boolean"}}},
        {"ending", {{"type", "string"}}},
        {"score", reward}}},
      {"required", {"text", "episode_id", "steps", "max_steps", "finished"}}};
  Json state = {{"title", "PwabState"},
                {"type", "object"},
                {"properties",
                 {{"episode_id", {{"type", "string"}}},
                  {"step_count", {{"type", "integer"}}},
                  {"task", {{"type", "string"}}},
                  {"track", {{"enum", {"single", "multi"}}}},
                  {"user_sim", {{"type", "string"}}},
                  {"seed", {{"type", "integer"}}},
                  {"max_steps", {{"type", "integer"}}},
                  {"steps", {{"type", "integer"}}},
                  {"finished", {{"type", "boolean"}}},
                  {"ending", {{"type", {"string", "null"}}}},
                  {"observation", {{"type", "string"}}},
                  {"actions", {{"type", "array"}}},
                  {"attempts", {{"type", "array"}}}}},
                {"required", {"episode_id", "step_count"}}};
  return {{"action", {{"title", "PwabAction"}, {"oneOf", std::move(variants)}}},
          {"observation", std::move(observation)},
          {"state", std::move(state)}};
}

// --- sessions: a WebSocket's own, or one made over /mcp ----------------------------------------------------

struct OpenEnvFrontEnd::EnvSession {
  std::mutex mu;         // one call at a time: the WebSocket's messages and the /mcp calls naming the session
  std::string episode;   // the open episode, "" when none
  Json last_state;       // the state of the last finished episode, for a `state` after it
  bool mcp_mode = false;  // made by openenv/session/create
  // Guarded by the front end's mu_:
  bool attached = false;  // a WebSocket is attached
  bool closing = false;   // closed while attached: gone when the WebSocket detaches
  double last_used = 0;
};

namespace {

double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 128 bits of the kernel's random source: holding one session's id says nothing about another's.
std::string new_session_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(std::string("session id: getrandom failed: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  std::string id = "oe_";
  for (unsigned char b : bytes) id += fmt::format("{:02x}", b);
  return id;
}

Json rpc_result(const Json& id, Json result) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; }

Json rpc_error(const Json& id, int code, std::string_view message, const Json& data = nullptr) {
  Json e = {{"code", code}, {"message", message}};
  if (!data.is_null()) e["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}};
}

// A refusal of the service as a JSON-RPC error: a malformed call is -32602, anything else about the episode's
// state (none open, finished, expired, a recorded task) -32600, a failure of the server -32603; pwab's code and
// HTTP status go along in data.
Json rpc_refusal(const Json& id, const RequestError& e) {
  const int code = e.status >= 500 ? jsonrpc::kInternalError
                   : (e.status == 400 || e.status == 422) ? jsonrpc::kInvalidParams
                                                          : jsonrpc::kInvalidRequest;
  return rpc_error(id, code, e.what(), {{"code", e.code}, {"status", e.status}});
}

}  // namespace

OpenEnvFrontEnd::~OpenEnvFrontEnd() = default;

std::size_t OpenEnvFrontEnd::n_mcp_sessions() const {
  std::lock_guard lock(mu_);
  return mcp_sessions_.size();
}

std::size_t OpenEnvFrontEnd::active_sessions() const { return own_ws_sessions_ + n_mcp_sessions(); }

Json OpenEnvFrontEnd::list_tools_answer() const {
  Json tools = Json::array();
  for (const Json& t : session_tools_)
    tools.push_back({{"name", t["name"]}, {"description", t["description"]}, {"input_schema", t["inputSchema"]}});
  return {{"observation", {{"tools", std::move(tools)}}}, {"reward", nullptr}, {"done", false}};
}

Json OpenEnvFrontEnd::call_tool_action(const Json& action) {
  for (const auto& [key, value] : action.items())
    if (key != "type" && key != "tool_name" && key != "arguments" && key != "metadata")
      throw invalid(fmt::format("call_tool: unknown field '{}' (known: type, tool_name, arguments, metadata)", key));
  auto name = action.find("tool_name");
  if (name == action.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    throw invalid("call_tool: 'tool_name' (a string) is required");
  Json arguments = action.value("arguments", Json::object());
  if (arguments.is_null()) arguments = Json::object();
  if (!arguments.is_object()) throw invalid("call_tool: 'arguments' must be an object");
  return {{"name", *name}, {"arguments", std::move(arguments)}};
}

Json OpenEnvFrontEnd::session_reset(EnvSession& s, const Json& data) {
  session_end(s);
  Json answer = reset(data.is_null() ? Json::object() : data);
  s.episode = answer["observation"]["episode_id"].get<std::string>();
  s.last_state = nullptr;
  // OpenEnv's MCP client reads an observation holding "tools" as a tool list (mcp_client.py, _parse_result), which
  // would hide the instruction; in that mode the tools come from tools/list instead.
  if (s.mcp_mode) answer["observation"].erase("tools");
  return answer;
}

Json OpenEnvFrontEnd::session_step(EnvSession& s, const Json& data) {
  if (data.is_null()) throw invalid("step: 'data' is the action: {\"name\": ..., \"arguments\": {...}}");
  const std::string type = data.is_object() && data.contains("type") && data["type"].is_string()
                               ? data["type"].get<std::string>() : "";
  if (type == "list_tools") return list_tools_answer();  // no episode needed, not a step of one
  if (s.episode.empty())
    throw RequestError(404, "unknown_episode",
                       s.last_state.is_null() ? "no episode: send a reset first"
                                              : "the episode is over: send a reset for the next one");
  Json answer;
  try {
    answer = step_episode(s.episode, type == "call_tool" ? call_tool_action(data) : data);
  } catch (const RequestError& e) {
    if (e.code == "unknown_episode") s.episode.clear();  // expired while idle
    throw;
  }
  if (type == "call_tool") {
    // OpenEnv's CallToolObservation: the tool's name and its result (what the environment said).
    answer["observation"]["tool_name"] = data["tool_name"];
    answer["observation"]["result"] = answer["observation"]["text"];
    answer["observation"]["error"] = nullptr;
  }
  if (answer["done"].get<bool>()) {
    s.last_state = {{"episode_id", s.episode},
                    {"step_count", answer["observation"]["steps"]},
                    {"finished", true},
                    {"ending", answer["observation"]["ending"]},
                    {"score", answer["observation"]["score"]}};
    s.episode.clear();
  }
  return answer;
}

Json OpenEnvFrontEnd::session_state(EnvSession& s) const {
  if (!s.episode.empty()) return state(s.episode);
  if (!s.last_state.is_null()) return s.last_state;
  return {{"episode_id", nullptr}, {"step_count", 0}};
}

void OpenEnvFrontEnd::session_end(EnvSession& s) {
  if (s.episode.empty()) return;
  std::string id = std::move(s.episode);
  s.episode.clear();
  try {
    service_.finish(id);
  } catch (const RequestError&) {
    // expired meanwhile: nothing to end
  }
}

void OpenEnvFrontEnd::session_drop(EnvSession& s) {
  if (!s.episode.empty()) service_.drop(s.episode);
  s.episode.clear();
}

// tools/call on a session: one step of its episode, answered as an MCP CallToolResult whose structured content is
// the OpenEnv step (the observation's fields, reward and done).
Json OpenEnvFrontEnd::session_call_tool(EnvSession& s, const Json& params) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string())
    throw JsonRpcError(jsonrpc::kInvalidParams, "tools/call needs \"name\", the tool's name");
  Json arguments = params.value("arguments", Json::object());
  if (arguments.is_null()) arguments = Json::object();
  if (!arguments.is_object()) throw JsonRpcError(jsonrpc::kInvalidParams, "\"arguments\" must be an object");
  bool known = false;
  for (const Json& t : session_tools_) known = known || t["name"] == *name;
  if (!known)
    throw JsonRpcError(jsonrpc::kInvalidParams,
                       fmt::format("unknown tool '{}' (tools/list with the session_id lists them)", name->get<std::string>()));
  Json answer = session_step(s, {{"name", *name}, {"arguments", std::move(arguments)}});
  Json step = std::move(answer["observation"]);
  step["reward"] = answer["reward"];
  step["done"] = answer["done"];
  Json content = Json::array({{{"type", "text"}, {"text", step["text"]}}});
  if (answer["done"].get<bool>())
    content.push_back({{"type", "text"},
                       {"text", fmt::format("[episode finished ({}); score: function {}, result {}]",
                                            step["ending"].get<std::string>(), step["score"]["function_acc"].dump(),
                                            step["score"]["result_acc"].dump())}});
  return {{"content", std::move(content)}, {"structuredContent", std::move(step)}, {"isError", false}};
}

std::shared_ptr<OpenEnvFrontEnd::EnvSession> OpenEnvFrontEnd::find_mcp_session(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = mcp_sessions_.find(id);
  if (it == mcp_sessions_.end()) return nullptr;
  it->second->last_used = steady_now();
  return it->second;
}

bool OpenEnvFrontEnd::is_plain_mcp(const HttpRequest& request) {
  if (request.has_header("Mcp-Session-Id") || request.has_header("MCP-Protocol-Version")) return false;
  // Malformed JSON and batches stay with the MCP transport, which refuses them (400); OpenEnv sends one object.
  if (json_nests_deeper_than(request.body)) return false;
  Json message = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  // An MCP request of the stateless revision that forgot its header is MCP's to refuse (-32020), not OpenEnv's.
  return message.is_object() && message.value("method", Json()) != "initialize" && !McpServer::is_stateless(message);
}

Json OpenEnvFrontEnd::mcp(std::string_view body) {
  if (json_nests_deeper_than(body)) return rpc_error(nullptr, jsonrpc::kParseError, json_depth_message());
  Json message = parse_json_or_discarded(body);
  if (message.is_discarded()) return rpc_error(nullptr, jsonrpc::kParseError, "Parse error: the body is not valid JSON");
  return mcp_request(message, nullptr);
}

Json OpenEnvFrontEnd::mcp_request(const Json& message, EnvSession* bound) {
  if (!message.is_object())
    return rpc_error(nullptr, jsonrpc::kInvalidRequest, "Invalid request: a JSON-RPC request is a JSON object");
  const Json id = message.contains("id") && (message["id"].is_string() || message["id"].is_number_integer())
                      ? message["id"] : Json();
  for (const auto& [key, value] : message.items())
    if (key != "jsonrpc" && key != "method" && key != "params" && key != "id")
      return rpc_error(id, jsonrpc::kInvalidRequest, fmt::format("Invalid request: unknown member '{}'", key));
  if (message.value("jsonrpc", Json()) != "2.0")
    return rpc_error(id, jsonrpc::kInvalidRequest, "Invalid request: \"jsonrpc\" must be \"2.0\"");
  if (!message.contains("method") || !message["method"].is_string())
    return rpc_error(id, jsonrpc::kInvalidRequest, "Invalid request: \"method\" (a string) is required");
  const std::string method = message["method"].get<std::string>();
  Json params = message.value("params", Json::object());
  if (params.is_null()) params = Json::object();
  if (!params.is_object()) return rpc_error(id, jsonrpc::kInvalidParams, "Params must be an object");

  try {
    if (method == "openenv/session/create") {
      if (bound)
        return rpc_error(id, jsonrpc::kInvalidRequest,
                         "this WebSocket's messages act on its own session; openenv/session/create is for POST /mcp");
      std::lock_guard lock(mu_);
      const std::size_t active = own_ws_sessions_ + mcp_sessions_.size();
      if (active >= options_.max_sessions)
        return rpc_error(id, -32000,
                         fmt::format("Server at capacity: {}/{} sessions active. Cannot create a new session.", active,
                                     options_.max_sessions),
                         {{"active_sessions", active}, {"max_sessions", options_.max_sessions}});
      auto session = std::make_shared<EnvSession>();
      session->mcp_mode = true;
      session->last_used = steady_now();
      std::string sid = new_session_id();
      mcp_sessions_[sid] = std::move(session);
      return rpc_result(id, {{"session_id", sid}});
    }
    if (method == "openenv/session/close") {
      auto sid = params.find("session_id");
      if (sid == params.end() || !sid->is_string() || sid->get_ref<const std::string&>().empty())
        return rpc_error(id, jsonrpc::kInvalidParams, "Invalid params - 'session_id' is required");
      std::shared_ptr<EnvSession> session;
      {
        std::lock_guard lock(mu_);
        auto it = mcp_sessions_.find(*sid);
        if (it == mcp_sessions_.end())
          return rpc_error(id, jsonrpc::kInvalidParams, fmt::format("Unknown session_id: {}", sid->get<std::string>()));
        if (it->second->attached) {
          it->second->closing = true;
          return rpc_result(id, {{"session_id", *sid}, {"closed", false}, {"closing", true}});
        }
        session = std::move(it->second);
        mcp_sessions_.erase(it);
      }
      std::lock_guard lock(session->mu);
      session_end(*session);
      return rpc_result(id, {{"session_id", *sid}, {"closed", true}});
    }
    if (method == "ping") return rpc_result(id, Json::object());
    if (method != "tools/list" && method != "tools/call")
      return rpc_error(id, jsonrpc::kMethodNotFound,
                       fmt::format("Method not found: {} (this endpoint answers openenv/session/create, "
                                   "openenv/session/close, tools/list, tools/call and ping)", method));

    std::shared_ptr<EnvSession> named;
    EnvSession* session = bound;
    if (!session && params.contains("session_id")) {
      if (!params["session_id"].is_string())
        return rpc_error(id, jsonrpc::kInvalidParams, "Invalid params - 'session_id' must be a string");
      named = find_mcp_session(params["session_id"].get<std::string>());
      if (!named)
        return rpc_error(id, jsonrpc::kInvalidParams,
                         fmt::format("Unknown session_id: {}", params["session_id"].get<std::string>()));
      session = named.get();
    }
    if (!session) {
      // No session: pwab's MCP tools (episode management and the functions with an episode_id), as over MCP.
      McpSession plain;
      plain.plain = true;
      Json request = message;
      request["params"] = params;
      request["id"] = 0;  // OpenEnv's requests may have no id; the reply gets the request's own back below
      Json reply = tools_.handle(request, plain);
      if (reply.is_object()) reply["id"] = id;
      return reply;
    }
    if (method == "tools/list") return rpc_result(id, {{"tools", session_tools_}});
    std::lock_guard lock(session->mu);
    return rpc_result(id, session_call_tool(*session, params));
  } catch (const JsonRpcError& e) {
    return rpc_error(id, e.code, e.what(), e.data);
  } catch (const RequestError& e) {
    return rpc_refusal(id, e);
  } catch (const std::exception& e) {
    return rpc_error(id, jsonrpc::kInternalError, std::string("internal error: ") + e.what());
  }
}

std::size_t OpenEnvFrontEnd::expire_idle() {
  std::vector<std::shared_ptr<EnvSession>> expired;
  {
    std::lock_guard lock(mu_);
    const double now = steady_now();
    for (auto it = mcp_sessions_.begin(); it != mcp_sessions_.end();) {
      if (!it->second->attached && now - it->second->last_used > options_.session_idle_s) {
        expired.push_back(std::move(it->second));
        it = mcp_sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : expired) {
    std::lock_guard lock(s->mu);
    session_drop(*s);  // abandoned: no record, as an idle episode is dropped
  }
  return expired.size();
}

// --- the WebSocket session --------------------------------------------------------------------------------

class OpenEnvFrontEnd::Session final : public WsSession {
 public:
  Session(OpenEnvFrontEnd& front, std::string attach_to) : front_(front), attach_to_(std::move(attach_to)) {}

  std::optional<WsReply> on_open() override {
    ++front_.ws_connections_;
    connected_ = true;
    if (!attach_to_.empty()) {
      std::lock_guard lock(front_.mu_);
      auto it = front_.mcp_sessions_.find(attach_to_);
      if (it == front_.mcp_sessions_.end())
        return WsReply{dump(ws_error(fmt::format("Unknown session_id: {} (openenv/session/create at POST /mcp makes "
                                                 "one)", attach_to_), "SESSION_ERROR")), true};
      if (it->second->attached)
        return WsReply{dump(ws_error(fmt::format("Session {} already has an attached WebSocket", attach_to_),
                                     "SESSION_ERROR")), true};
      it->second->attached = true;
      it->second->last_used = steady_now();
      session_ = it->second;
      return std::nullopt;
    }
    session_ = std::make_shared<EnvSession>();
    const std::size_t active = ++front_.own_ws_sessions_ + front_.n_mcp_sessions();
    owns_ = true;
    if (active <= front_.options_.max_sessions) return std::nullopt;
    Json e = ws_error(fmt::format("Server at capacity: {}/{} sessions active. Cannot accept new connections.",
                                  active - 1, front_.options_.max_sessions),
                      "CAPACITY_REACHED");
    e["data"]["active_sessions"] = active - 1;
    e["data"]["max_sessions"] = front_.options_.max_sessions;
    return WsReply{dump(e), true};
  }

  bool blocks(std::string_view) const override {
    if (!session_) return false;
    // On the I/O thread: never wait here for a tool call over /mcp holding the session; such a message waits
    // its turn on the blocking pool instead.
    std::unique_lock lock(session_->mu, std::try_to_lock);
    if (!lock.owns_lock()) return true;
    return !session_->episode.empty() && front_.may_block(session_->episode);
  }

  WsReply on_message(std::string_view text) override {
    Json message = parse_json_or_discarded(text);
    if (message.is_discarded() || !message.is_object())
      return reply(ws_error(json_nests_deeper_than(text) ? json_depth_message()
                                                         : "Invalid JSON: a message is a JSON object {\"type\", \"data\"}",
                            "INVALID_JSON"));
    auto type = message.find("type");
    const std::string kind = type != message.end() && type->is_string() ? type->get<std::string>() : "";
    try {
      for (const auto& [key, value] : message.items())
        if (key != "type" && key != "data")
          return reply(ws_error(fmt::format("Invalid message: unknown field '{}' (a message is {{\"type\", \"data\"}})", key),
                                "VALIDATION_ERROR"));
      const Json data = message.contains("data") ? message["data"] : Json();
      if (kind == "mcp") {
        if (!data.is_object())
          return reply(ws_error("Invalid message: an mcp message's data is a JSON-RPC request object", "VALIDATION_ERROR"));
        return reply({{"type", "mcp"}, {"data", front_.mcp_request(data, session_.get())}});
      }
      std::lock_guard lock(session_->mu);
      if (kind == "reset") return reply({{"type", "observation"}, {"data", front_.session_reset(*session_, data)}});
      if (kind == "step") return reply({{"type", "observation"}, {"data", front_.session_step(*session_, data)}});
      if (kind == "state") return reply({{"type", "state"}, {"data", front_.session_state(*session_)}});
      if (kind == "close") {
        front_.session_end(*session_);
        return {"", true};
      }
      return reply(ws_error(fmt::format("Unknown message type: {} (reset, step, state, close, mcp)", kind), "UNKNOWN_TYPE"));
    } catch (const RequestError& e) {
      return reply(ws_error(e.what(), ws_code(e), &e));
    } catch (const std::exception& e) {
      return reply(ws_error(e.what(), "EXECUTION_ERROR"));
    }
  }

  void on_end() override {
    if (connected_) --front_.ws_connections_;
    connected_ = false;
    if (!session_) return;
    if (owns_) {
      std::lock_guard lock(session_->mu);
      front_.session_drop(*session_);  // gone mid-episode: no record
      --front_.own_ws_sessions_;
      owns_ = false;
    } else {
      // Attached to a session made over /mcp: it outlives the connection unless it was closed meanwhile.
      bool closing = false;
      {
        std::lock_guard lock(front_.mu_);
        session_->attached = false;
        session_->last_used = steady_now();
        closing = session_->closing;
        if (closing) front_.mcp_sessions_.erase(attach_to_);
      }
      if (closing) {
        std::lock_guard lock(session_->mu);
        front_.session_end(*session_);
      }
    }
    session_.reset();
  }

 private:
  static WsReply reply(const Json& message) { return {dump(message), false}; }

  OpenEnvFrontEnd& front_;
  std::string attach_to_;  // the /mcp session to attach to, "" for a session of its own
  std::shared_ptr<EnvSession> session_;
  bool owns_ = false;
  bool connected_ = false;
};

// OpenEnv's JSON-RPC over a WebSocket at /mcp: each text message one request, answered as POST /mcp answers it.
class OpenEnvFrontEnd::McpSocket final : public WsSession {
 public:
  explicit McpSocket(OpenEnvFrontEnd& front) : front_(front) {}
  bool blocks(std::string_view) const override { return true; }  // a tool call may fsync a record
  WsReply on_message(std::string_view text) override { return {dump(front_.mcp(text)), false}; }
  void on_end() override {}

 private:
  OpenEnvFrontEnd& front_;
};

std::unique_ptr<WsSession> OpenEnvFrontEnd::open_session(const HttpRequest& upgrade) {
  return std::make_unique<Session>(*this, upgrade.param("session_id").value_or(""));
}

std::unique_ptr<WsSession> OpenEnvFrontEnd::open_mcp_socket() { return std::make_unique<McpSocket>(*this); }

}  // namespace pwab::serve
