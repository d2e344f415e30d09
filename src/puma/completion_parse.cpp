// Reading one completion text as a function and its parameter (scoring.h: parse_completion). Alone in its file
// so the reward endpoint's fuzz target can build it without the environment.
#include <nlohmann/json.hpp>
#include <optional>

#include "core/json_depth.h"
#include "core/text.h"
#include "puma/scoring.h"

namespace pwab::puma {

namespace {

//! A tool call's arguments as the parameter text the puma agent would have written for that tool.
std::string parameter_of_arguments(const nlohmann::json& arguments) {
  const nlohmann::json args = arguments.is_string() ? parse_json_or_discarded(arguments.get<std::string>()) : arguments;
  if (!args.is_object()) return arguments.is_string() ? arguments.get<std::string>() : std::string();
  for (const char* key : {"query", "review", "product_sequence"}) {
    auto it = args.find(key);
    if (it == args.end()) continue;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array()) {
      std::string joined;
      for (const auto& v : *it) joined += (joined.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
      return joined;
    }
    return it->dump();
  }
  return {};
}

//! A Hermes-style tool call in the text: the JSON inside <tool_call>…</tool_call>, or the whole text as JSON.
std::optional<std::pair<std::string, std::string>> tool_call_in(std::string_view text) {
  std::string_view body = trim(text);
  if (auto open = body.find("<tool_call>"); open != std::string_view::npos) {
    body.remove_prefix(open + std::string_view("<tool_call>").size());
    body = trim(body.substr(0, body.find("</tool_call>")));
  }
  if (body.empty() || body.front() != '{') return std::nullopt;
  nlohmann::json call = parse_json_or_discarded(body);
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
  return std::pair{call["name"].get<std::string>(),
                   parameter_of_arguments(call.value("arguments", call.value("parameters", nlohmann::json())))};
}

}  // namespace

std::pair<std::string, std::string> parse_completion(std::string_view completion) {
  if (auto call = tool_call_in(completion)) return *call;
  constexpr std::string_view kTool = "### Tool:\n", kParameter = "### Tool Parameter:\n";
  std::string_view text = completion;
  if (auto at = text.rfind(kTool); at != std::string_view::npos) text.remove_prefix(at + kTool.size());
  text = text.substr(text.find_first_not_of(" \t\r\n") == std::string_view::npos ? text.size()
                                                                                    : text.find_first_not_of(" \t\r\n"));
  const std::size_t eol = text.find('\n');
  std::string function(trim(text.substr(0, eol)));
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  if (auto at = completion.rfind(kParameter); at != std::string_view::npos) rest = completion.substr(at + kParameter.size());
  return {std::move(function), std::string(trim(rest))};
}

}  // namespace pwab::puma
