// src/core/json_depth.h: the nesting limit on JSON that comes from outside pwab.
//
// nlohmann::json parses iteratively, but dump(), copies and comparisons recurse once per level: a 200 KB document
// nested 100,000 levels deep overflows a worker thread's stack. Every place outside JSON enters (HTTP bodies, MCP,
// remote-agent and LLM replies, run records and manifests) checks the depth before parsing and refuses deeper text.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pwab {

//! The deepest array/object nesting accepted. Real documents (tool calls, records, chat replies) stay under 20.
inline constexpr std::size_t kMaxJsonDepth = 256;

//! True when `text` opens more than `limit` arrays/objects inside each other (brackets in strings do not count).
//! It reads the text once and stops at the first level past the limit; invalid JSON is left to the parser.
bool json_nests_deeper_than(std::string_view text, std::size_t limit = kMaxJsonDepth);

//! "JSON nested deeper than 256 levels is refused": the sentence every refusal uses.
std::string json_depth_message();

//! json::parse(text, nullptr, false), except that text nested deeper than kMaxJsonDepth is discarded unparsed.
inline nlohmann::json parse_json_or_discarded(std::string_view text) {
  if (json_nests_deeper_than(text)) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace pwab
