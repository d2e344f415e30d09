#include "serve/mcp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <istream>
#include <ostream>

#include "core/json_depth.h"
#include "env/tools.h"

namespace pwab::serve {

using nlohmann::json;

const std::vector<std::string>& mcp_protocol_versions() {
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return versions;
}

const std::vector<std::string>& mcp_stateless_versions() {
  static const std::vector<std::string> versions = {"2026-07-28"};
  return versions;
}

std::vector<std::string> mcp_all_versions() {
  std::vector<std::string> all = mcp_stateless_versions();
  for (const auto& v : mcp_protocol_versions()) all.push_back(v);
  return all;
}

bool is_stateless_version(std::string_view version) {
  const auto& ours = mcp_stateless_versions();
  return std::find(ours.begin(), ours.end(), version) != ours.end();
}

int stateless_http_status(int code) {
  switch (code) {
    case jsonrpc::kParseError:
    case jsonrpc::kInvalidRequest:
    case jsonrpc::kInvalidParams:
    case jsonrpc::kHeaderMismatch:
    case jsonrpc::kMissingClientCapability:
    case jsonrpc::kUnsupportedProtocolVersion:
      return 400;
    case jsonrpc::kMethodNotFound:
      return 404;
    default:
      return 200;
  }
}

namespace {

// Tool names of the episode management tools (the environment's functions keep their own names).
constexpr std::string_view kInfoTool = "environment_info";
constexpr std::string_view kListTasksTool = "list_tasks";
constexpr std::string_view kStartTool = "start_episode";
constexpr std::string_view kStateTool = "episode_state";
constexpr std::string_view kEndTool = "end_episode";

const char* const kInstructions =
    "PersonalWAB: personalized web-agent tasks on a product catalogue. Pick a task with list_tasks, start an "
    "episode with start_episode (track 'single' or 'multi'; in 'multi' a simulated user answers respond), then "
    "call the environment's functions with the episode_id: each call is one step and returns the observation, "
    "the reward and whether the episode finished. end_episode returns the episode's record and score.";

json object_schema(json properties, json required) {
  json schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  return schema;
}

json string_property(std::string_view description) {
  return {{"type", "string"}, {"description", std::string(description)}};
}

json episode_id_property() { return string_property("The episode's id, as start_episode returned it."); }

json tool(std::string_view name, std::string_view description, json input_schema) {
  return {{"name", std::string(name)}, {"description", std::string(description)}, {"inputSchema", std::move(input_schema)}};
}

// One environment function as an MCP tool: its own parameters (env::tool_specs(), the original's names and types)
// plus the episode it acts on.
json function_tool(const env::ToolSpec& spec) {
  json properties = {{"episode_id", episode_id_property()}};
  json required = json::array({"episode_id"});
  for (const auto& p : spec.params) {
    json prop = string_property(p.description);
    if (p.type == env::ParamType::kStringArray) {
      prop["type"] = "array";
      prop["items"] = string_property(p.item_description);
    }
    properties[std::string(p.name)] = std::move(prop);
    required.push_back(std::string(p.name));
  }
  return tool(spec.name, spec.description, object_schema(std::move(properties), std::move(required)));
}

json tool_definitions() {
  json tools = json::array();
  tools.push_back(tool(kInfoTool, "Describes the environment: dataset size, tracks, user simulators and limits.",
                       object_schema(json::object(), json::array())));
  tools.push_back(tool(
      kListTasksTool, "Lists benchmark tasks (id, user and instruction), a page at a time.",
      object_schema({{"split", string_property("Which tasks: 'test' (the default) or 'train'.")},
                     {"offset", {{"type", "integer"}, {"minimum", 0}, {"description", "The first task to list."}}},
                     {"limit", {{"type", "integer"}, {"minimum", 1}, {"description", "How many tasks to list."}}}},
                    json::array())));
  tools.push_back(tool(
      kStartTool,
      "Starts an episode of one task and returns its episode_id, the user's first message (the observation) and "
      "the user's past behaviours.",
      object_schema(
          {{"task", string_property("The task id from list_tasks, e.g. 'test/17'.")},
           {"track", {{"type", "string"}, {"enum", {"single", "multi"}},
                      {"description", "'single': one user message, the first task function ends the episode; "
                                      "'multi': a simulated user answers respond until stop."}}},
           {"user_sim", {{"type", "string"}, {"enum", {"none", "scripted", "llm"}},
                         {"description", "Who answers respond in the multi-turn track."}}},
           {"max_steps", {{"type", "integer"}, {"minimum", 1}, {"description", "The step cap of the episode."}}},
           {"seed", {{"type", "integer"}, {"minimum", 0}, {"description", "The user simulator's seed."}}},
           {"history", {{"type", "boolean"}, {"description", "false leaves the user's past behaviours out."}}}},
          json::array({"task"}))));
  tools.push_back(tool(kStateTool, "The episode so far: its actions with observations and rewards.",
                       object_schema({{"episode_id", episode_id_property()}}, json::array({"episode_id"}))));
  tools.push_back(tool(kEndTool, "Ends the episode and returns its record and score (function and result accuracy).",
                       object_schema({{"episode_id", episode_id_property()}}, json::array({"episode_id"}))));
  tools.push_back(tool(env::kRespond,
                       "Sends a message to the user; the reply is the observation (multi-turn track). In the "
                       "single-turn track nobody answers and the episode ends.",
                       object_schema({{"episode_id", episode_id_property()},
                                      {"content", string_property("The message to the user.")}},
                                     json::array({"episode_id", "content"}))));
  for (const auto& spec : env::tool_specs()) tools.push_back(function_tool(spec));
  return tools;
}

bool is_function_tool(std::string_view name) { return name == env::kRespond || env::find_tool(name) != nullptr; }

bool is_known_tool(std::string_view name) {
  return name == kInfoTool || name == kListTasksTool || name == kStartTool || name == kStateTool ||
         name == kEndTool || is_function_tool(name);
}

json text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

// A result whose text is the JSON itself (MCP asks tools returning structuredContent to serialize it as text too).
json json_result(json value) {
  json content = json::array({text_block(value.dump(-1, ' ', false, json::error_handler_t::replace))});
  return {{"content", std::move(content)}, {"structuredContent", std::move(value)}, {"isError", false}};
}

// A step's result: the observation as the text an agent reads, and the step's fields (reward, done, finished...)
// as structured content. When the episode finishes, a second text block says so, for clients that only show text.
json step_result(json step) {
  json content = json::array({text_block(step.value("observation", ""))});
  if (step.value("finished", false))
    content.push_back(text_block("[episode finished (" + step.value("ending", std::string("finished")) +
                                 "); call end_episode for its record and score]"));
  return {{"content", std::move(content)}, {"structuredContent", std::move(step)}, {"isError", false}};
}

json error_result(const std::string& message, const std::string& code, int status) {
  return {{"content", json::array({text_block("Error: " + message)})},
          {"structuredContent", {{"error", {{"code", code}, {"status", status}, {"message", message}}}}},
          {"isError", true}};
}

std::string episode_id_of(const json& args) {
  auto it = args.find("episode_id");
  if (it == args.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    throw RequestError(400, "bad_arguments", "the argument 'episode_id' (a string from start_episode) is required");
  return it->get<std::string>();
}

json error_reply(const json& id, int code, const std::string& message, const json& data = nullptr) {
  json reply = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
  if (!data.is_null()) reply["error"]["data"] = data;
  return reply;
}

// A stateless-revision result: every result says it is complete (2026-07-28 adds "resultType" so that a result
// may instead ask for more input, which this server never does).
json complete(json result) {
  result["resultType"] = "complete";
  return result;
}

// Caching hints of a stateless list or discover result: the tool list holds nothing of any user's and is fixed for
// the server's life, but a restarted server may be another version, so clients are told to ask again each time.
json cacheable(json result) {
  result["ttlMs"] = 0;
  result["cacheScope"] = "public";
  return complete(std::move(result));
}

json no_reply() { return json(json::value_t::discarded); }

bool valid_id(const json& id) { return id.is_string() || id.is_number(); }

}  // namespace

McpServer::McpServer(EpisodeService& service, std::string server_version)
    : service_(service), version_(std::move(server_version)), tools_(tool_definitions()) {}

bool McpServer::is_request(const json& message) {
  return message.is_object() && message.contains("method") && message.contains("id");
}

bool McpServer::is_stateless(const json& message) {
  if (!message.is_object()) return false;
  if (message.value("method", json()) == "server/discover") return true;
  auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return false;
  auto meta = params->find("_meta");
  return meta != params->end() && meta->is_object() &&
         (meta->contains(kMetaProtocolVersion) || meta->contains(kMetaClientCapabilities));
}

std::string McpServer::envelope_version(const json& params) {
  auto meta = params.is_object() ? params.find("_meta") : params.end();
  if (!params.is_object() || meta == params.end() || !meta->is_object())
    throw JsonRpcError(jsonrpc::kInvalidParams,
                       fmt::format("params._meta must be an object carrying '{}' and '{}' (MCP 2026-07-28's per-request "
                                   "envelope)",
                                   kMetaProtocolVersion, kMetaClientCapabilities));
  std::string missing;
  for (const char* key : {kMetaProtocolVersion, kMetaClientCapabilities})
    if (!meta->contains(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
  if (!missing.empty())
    throw JsonRpcError(jsonrpc::kInvalidParams, "params._meta lacks the envelope's required key(s): " + missing);
  const json& version = (*meta)[kMetaProtocolVersion];
  if (!version.is_string())
    throw JsonRpcError(jsonrpc::kInvalidParams, fmt::format("params._meta['{}'] must be a string", kMetaProtocolVersion));
  if (!(*meta)[kMetaClientCapabilities].is_object())
    throw JsonRpcError(jsonrpc::kInvalidParams,
                       fmt::format("params._meta['{}'] must be an object", kMetaClientCapabilities));
  return version.get<std::string>();
}

std::string McpServer::handle_text(std::string_view text, McpSession& session) {
  if (json_nests_deeper_than(text))
    return error_reply(nullptr, jsonrpc::kParseError, json_depth_message()).dump();
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  json reply = message.is_discarded() ? error_reply(nullptr, jsonrpc::kParseError, "the message is not valid JSON")
                                      : handle(message, session);
  if (reply.is_discarded()) return {};
  return reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

json McpServer::handle(const json& message, McpSession& session) {
  if (!message.is_array()) return handle_one(message, session);
  // A batch (JSON-RPC 2.0; MCP 2025-03-26): one reply per request in it, none at all when it holds only
  // notifications and responses.
  if (message.empty()) return error_reply(nullptr, jsonrpc::kInvalidRequest, "an empty batch");
  json replies = json::array();
  for (const auto& m : message) {
    json reply = handle_one(m, session);
    if (!reply.is_discarded()) replies.push_back(std::move(reply));
  }
  return replies.empty() ? no_reply() : replies;
}

json McpServer::handle_one(const json& message, McpSession& session) {
  if (!message.is_object()) return error_reply(nullptr, jsonrpc::kInvalidRequest, "a message must be a JSON object");
  const json id = message.contains("id") && valid_id(message["id"]) ? message["id"] : json(nullptr);
  if (message.value("jsonrpc", json()) != "2.0")
    return error_reply(id, jsonrpc::kInvalidRequest, "the message must have \"jsonrpc\": \"2.0\"");
  if (!message.contains("method")) {
    // A response to a request of ours (we send none) or garbage: responses are never answered.
    if (message.contains("result") || message.contains("error")) return no_reply();
    return error_reply(id, jsonrpc::kInvalidRequest, "the message has no \"method\"");
  }
  if (!message["method"].is_string()) return error_reply(id, jsonrpc::kInvalidRequest, "\"method\" must be a string");
  const std::string& method = message["method"].get_ref<const std::string&>();
  const json params = message.value("params", json::object());

  if (!message.contains("id")) {
    // A notification: never answered, not even with an error.
    if (method == "notifications/initialized") session.initialized = true;
    return no_reply();
  }
  if (!valid_id(message["id"]))
    return error_reply(nullptr, jsonrpc::kInvalidRequest, "\"id\" must be a string or a number");
  try {
    if (!params.is_object()) throw JsonRpcError(jsonrpc::kInvalidParams, "\"params\" must be an object");
    if (is_stateless(message)) {
      // MCP 2026-07-28: the request stands alone; its envelope names the version, no session is consulted.
      const std::string version = envelope_version(params);
      if (!is_stateless_version(version))
        throw JsonRpcError(jsonrpc::kUnsupportedProtocolVersion,
                           fmt::format("unsupported protocol version '{}' in params._meta (this server speaks {})",
                                       version, fmt::join(mcp_all_versions(), ", ")),
                           json{{"supported", mcp_all_versions()}, {"requested", version}});
      return {{"jsonrpc", "2.0"}, {"id", id}, {"result", dispatch_stateless(method, params)}};
    }
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", dispatch(method, params, session)}};
  } catch (const JsonRpcError& e) {
    return error_reply(id, e.code, e.what(), e.data);
  } catch (const std::exception& e) {
    return error_reply(id, jsonrpc::kInternalError, std::string("internal error: ") + e.what());
  }
}

json McpServer::call(const json& params) {
  if (!params.contains("name") || !params["name"].is_string())
    throw JsonRpcError(jsonrpc::kInvalidParams, "tools/call needs \"name\", the tool's name");
  json arguments = params.value("arguments", json::object());
  if (arguments.is_null()) arguments = json::object();
  if (!arguments.is_object()) throw JsonRpcError(jsonrpc::kInvalidParams, "\"arguments\" must be an object");
  return call_tool(params["name"].get<std::string>(), arguments);
}

json McpServer::dispatch(const std::string& method, const json& params, McpSession& session) {
  if (method == "initialize") return initialize(params, session);
  if (method == "ping") return json::object();
  if (session.protocol_version.empty() && !session.plain)
    throw JsonRpcError(jsonrpc::kInvalidRequest,
                       "the session is not initialized: send \"initialize\" first (or speak the stateless revision "
                       "2026-07-28: no initialize, the envelope in every request's params._meta)");
  if (method == "tools/list") return {{"tools", tools_}};  // one page: no nextCursor
  if (method == "tools/call") return call(params);
  throw JsonRpcError(jsonrpc::kMethodNotFound, "method '" + method + "' is not supported (this server offers tools)");
}

json McpServer::dispatch_stateless(const std::string& method, const json& params) {
  // Every result names the server in _meta (the revision asks servers to, as it has no initialize result).
  auto stamped = [this](json result) {
    result["_meta"][kMetaServerInfo] = {{"name", "pwab"}, {"version", version_}};
    return result;
  };
  if (method == "server/discover")
    return stamped(cacheable({{"supportedVersions", mcp_all_versions()},
                              {"capabilities", {{"tools", {{"listChanged", false}}}}},
                              {"instructions", kInstructions}}));
  if (method == "tools/list") return stamped(cacheable({{"tools", tools_}}));
  if (method == "tools/call") return stamped(complete(call(params)));
  if (method == "ping") return stamped(complete(json::object()));
  if (method == "initialize")
    throw JsonRpcError(jsonrpc::kMethodNotFound,
                       "initialize is not part of the stateless revision 2026-07-28 (server/discover says what this "
                       "server speaks); to negotiate 2025-11-25 or earlier, send initialize without the envelope in "
                       "params._meta");
  throw JsonRpcError(jsonrpc::kMethodNotFound,
                     "method '" + method + "' is not supported (this server offers server/discover and tools)");
}

json McpServer::initialize(const json& params, McpSession& session) const {
  if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string())
    throw JsonRpcError(jsonrpc::kInvalidParams, "initialize needs \"protocolVersion\", a string");
  // Version negotiation: the client's version when we speak it, else our newest (the client then decides).
  const auto& ours = mcp_protocol_versions();
  const std::string wanted = params["protocolVersion"].get<std::string>();
  session.protocol_version = std::find(ours.begin(), ours.end(), wanted) != ours.end() ? wanted : ours.front();
  return {{"protocolVersion", session.protocol_version},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", "pwab"}, {"version", version_}}},
          {"instructions", kInstructions}};
}

json McpServer::call_tool(std::string_view name, const json& arguments) {
  if (!is_known_tool(name))
    throw JsonRpcError(jsonrpc::kInvalidParams, "unknown tool '" + std::string(name) + "' (tools/list lists them)");
  try {
    if (!arguments.is_object()) throw RequestError(400, "bad_arguments", "the tool's arguments must be an object");
    if (name == kInfoTool) return json_result(service_.info());
    if (name == kListTasksTool) return json_result(service_.list_tasks(arguments));
    if (name == kStartTool) {
      json started = service_.start(arguments);
      started.erase("tools");  // the OpenAI schemas of the same functions tools/list already describes
      return json_result(std::move(started));
    }
    const std::string episode_id = episode_id_of(arguments);
    if (name == kStateTool) return json_result(service_.state(episode_id));
    if (name == kEndTool) return json_result(service_.end(episode_id));
    // An environment function: its own arguments go to the environment as they are, which validates them the
    // way the benchmark does (a bad argument is an "Error: ..." observation and a step, not a protocol error).
    json function_arguments = arguments;
    function_arguments.erase("episode_id");
    return step_result(
        service_.step(episode_id, {{"name", std::string(name)}, {"arguments", std::move(function_arguments)}}));
  } catch (const RequestError& e) {
    return error_result(e.what(), e.code, e.status);
  } catch (const Error& e) {
    return error_result(e.what(), "error", 400);
  }
}

void serve_mcp_stdio(McpServer& server, std::istream& in, std::ostream& out) {
  McpSession session;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::string reply = server.handle_text(line, session);
    if (!reply.empty()) out << reply << '\n' << std::flush;
  }
}

}  // namespace pwab::serve
