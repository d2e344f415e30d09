#include "llm/chat.h"

#include "core/json_depth.h"
#include "llm/wire.h"

namespace pwab::llm {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse_field(const std::string& text, const char* field) {
  json j = parse_json_or_discarded(text);
  if (j.is_discarded()) throw UsageError(std::string("ChatRequest.") + field + " is not valid JSON");
  return j;
}

json request_body(const ChatRequest& r) {
  json body = json::object();  // std::map underneath: keys come out sorted
  body["model"] = r.model;
  if (r.prompt) {
    if (!r.messages.empty() || !r.tools_json.empty())
      throw UsageError("a raw-text ChatRequest (prompt set) takes no messages and no tools");
    body["prompt"] = *r.prompt;
  } else {
    json messages = json::array();
    for (const Message& m : r.messages) messages.push_back(message_to_json(m));
    body["messages"] = std::move(messages);
  }
  if (!r.stop.empty()) body["stop"] = r.stop;
  if (!r.tools_json.empty()) {
    json tools = parse_field(r.tools_json, "tools_json");
    if (!tools.is_array()) throw UsageError("ChatRequest.tools_json is not a JSON array");
    if (!tools.empty()) {
      body["tools"] = std::move(tools);
      if (!r.tool_choice.empty()) {
        if (r.tool_choice.front() == '{') {
          json choice = parse_field(r.tool_choice, "tool_choice");
          if (!choice.is_object()) throw UsageError("ChatRequest.tool_choice is neither a name nor a JSON object");
          body["tool_choice"] = std::move(choice);
        } else {
          body["tool_choice"] = r.tool_choice;
        }
      }
    }
  }
  if (r.temperature) body["temperature"] = *r.temperature;
  if (r.top_k) body["top_k"] = *r.top_k;
  if (r.max_tokens) body["max_tokens"] = *r.max_tokens;
  if (r.seed) body["seed"] = *r.seed;
  if (r.prompt_words_only) {
    if (!r.prompt) throw UsageError("ChatRequest.prompt_words_only needs a raw-text request (prompt set)");
    body["prompt_words_only"] = true;
  }
  if (r.return_tokens && r.prompt) {
    body["logprobs"] = 0;  // the sampled token's log-probability only
    body["return_token_ids"] = true;
  }
  if (!r.extra_body_json.empty()) {
    json extra = parse_field(r.extra_body_json, "extra_body_json");
    if (!extra.is_object()) throw UsageError("ChatRequest.extra_body_json is not a JSON object");
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (body.contains(it.key()))
        throw UsageError("ChatRequest.extra_body_json sets '" + it.key() + "', which the request already sets");
      body[it.key()] = it.value();
    }
  }
  return body;
}

}  // namespace

std::string_view to_string(ReplyStatus s) {
  switch (s) {
    case ReplyStatus::kOk:
      return "ok";
    case ReplyStatus::kInvalidToolArguments:
      return "invalid_tool_arguments";
  }
  return "ok";
}

ReplyStatus parse_reply_status(std::string_view s) {
  if (s == "ok" || s.empty()) return ReplyStatus::kOk;
  if (s == "invalid_tool_arguments") return ReplyStatus::kInvalidToolArguments;
  throw DataError("unknown reply status '" + std::string(s) + "'");
}

std::string request_body_json(const ChatRequest& request) { return dump(request_body(request)); }

std::string_view request_path(const ChatRequest& request) {
  return request.prompt ? "/completions" : "/chat/completions";
}

std::string canonical_request_json(const ChatRequest& request) {
  json c = json::object();
  c["kind"] = request.prompt ? "completion" : "chat";
  c["body"] = request_body(request);
  c["sample"] = request.sample;
  return dump(c);
}

std::string check_tool_arguments(const Message& message) {
  for (const ToolCall& tc : message.tool_calls) {
    json args = parse_json_or_discarded(tc.arguments_json);
    std::string shown = tc.arguments_json.size() > 120 ? tc.arguments_json.substr(0, 120) + "..." : tc.arguments_json;
    if (args.is_discarded())
      return "tool call '" + tc.name + "': arguments are not valid JSON: " + shown;
    if (!args.is_object()) return "tool call '" + tc.name + "': arguments are not a JSON object: " + shown;
  }
  return {};
}

}  // namespace pwab::llm
