// The remote agent's reply: the checks remote_reply_problem() makes are what parse_remote_reply() relies on.
#include "agents/remote_reply.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_depth.h"

namespace pwab::agents {
namespace {

using Json = nlohmann::json;

// The start of a reply body for an error message, on one line.
std::string excerpt(std::string_view body) {
  std::string out(body.substr(0, 200));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return body.size() > 200 ? out + "..." : out;
}

}  // namespace

std::string remote_reply_problem(const std::string& body) {
  if (json_nests_deeper_than(body)) return "the reply is refused: " + json_depth_message();
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) return "the reply is not JSON: " + excerpt(body);
  if (!j.is_object()) return "the reply is not a JSON object";
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    return "the reply has no \"name\" (a tool, respond or stop)";
  if (j.contains("arguments") && !j["arguments"].is_object()) return "the reply's \"arguments\" is not a JSON object";
  if (j.contains("usage")) {
    const Json& u = j["usage"];
    if (!u.is_object()) return "the reply's \"usage\" is not a JSON object";
    for (const char* key : {"prompt_tokens", "completion_tokens"})
      if (u.contains(key) && !(u[key].is_number_integer() && u[key].get<int64_t>() >= 0 &&
                               u[key].get<int64_t>() <= 1'000'000'000))
        return std::string("the reply's usage.") + key + " is not a non-negative integer";
  }
  return {};
}

env::AgentStep parse_remote_reply(const std::string& body) {
  Json j = Json::parse(body);
  env::AgentStep step;
  step.action.name = j["name"].get<std::string>();
  step.action.arguments_json = j.contains("arguments") ? j["arguments"].dump() : "{}";
  if (j.contains("usage") && j["usage"].is_object()) {
    step.prompt_tokens = j["usage"].value("prompt_tokens", 0);
    step.completion_tokens = j["usage"].value("completion_tokens", 0);
  }
  return step;
}

}  // namespace pwab::agents
