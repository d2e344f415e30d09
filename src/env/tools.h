// src/env/tools.h: the web functions an agent can call, with their OpenAI tool schemas (docs/decisions.md §2.3).
//
// Names, parameter keys, types and `required` lists are the original's; descriptions are our own words.
// Agents and prompts read this table; the environment validates arguments against it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/types.h"

namespace pwab::env {

//! The pseudo-action for talking to the user (a text reply, not a tool).
inline constexpr std::string_view kRespond = "respond";
inline constexpr std::string_view kSearch = "search_product_by_query";
inline constexpr std::string_view kRecommend = "get_recommendations_by_history";
inline constexpr std::string_view kAddReview = "add_product_review";
inline constexpr std::string_view kProductDetails = "get_product_details_by_asin";
inline constexpr std::string_view kStop = "stop";

enum class ParamType { kString, kStringArray };

struct ToolParam {
  std::string_view name;
  ParamType type;
  std::string_view description;
  std::string_view item_description;  //!< for arrays: the description of one element
};

struct ToolSpec {
  std::string_view name;
  std::string_view description;
  std::vector<ToolParam> params;  //!< every parameter is required, in this order
  bool terminal;                  //!< ends a single-turn episode and is scored (the three task functions)
};

//! The five tools in the original's order: search, recommendations, review, product details, stop.
const std::vector<ToolSpec>& tool_specs();
const ToolSpec* find_tool(std::string_view name);

//! The task function that solves a task type (search → search_product_by_query, ...).
std::string_view task_function(data::TaskType type);
//! The task type a task function solves; nullopt for any other name (never mapped to review: docs/decisions.md D3).
std::optional<data::TaskType> task_type_of_function(std::string_view name);

//! One tool's schema in the OpenAI format {"type": "function", "function": {name, description, parameters}}.
std::string tool_schema_json(const ToolSpec& tool);
//! A JSON array of the schemas an agent is offered. The details tool is offered only to RecMind
//! (docs/decisions.md §2.3.4).
std::string tools_json(bool include_product_details);

}  // namespace pwab::env
