#include "env/tools.h"

#include <nlohmann/json.hpp>

namespace pwab::env {

const std::vector<ToolSpec>& tool_specs() {
  static const std::vector<ToolSpec> specs = {
      {kSearch,
       "Searches the product catalogue with a text query and returns the 10 best-matching products with their "
       "details.",
       {{"query", ParamType::kString, "The words to search for, e.g. 'wireless earbuds' or 'dark roast coffee'.", ""}},
       true},
      {kRecommend,
       "Recommends 10 products that are likely to come next after a sequence of products the user interacted with. "
       "Give at most 30 product ASINs, oldest first and most recent last.",
       {{"product_sequence", ParamType::kStringArray,
         "Parent ASINs of the products to base the recommendations on, in time order.", "A product's parent ASIN."}},
       true},
      {kAddReview,
       "Posts a review for the product on the user's behalf. Pass the full review text as a single string and "
       "nothing else.",
       {{"review", ParamType::kString, "The full text of the review.", ""}},
       true},
      {kProductDetails,
       "Returns every detail of one product, given its parent ASIN.",
       {{"product_asin", ParamType::kString, "The parent ASIN of the product to look up.", ""}},
       false},
      {kStop, "Ends the task when nothing else needs to be done. Takes no arguments.", {}, false},
  };
  return specs;
}

const ToolSpec* find_tool(std::string_view name) {
  for (const auto& t : tool_specs())
    if (t.name == name) return &t;
  return nullptr;
}

std::string_view task_function(data::TaskType type) {
  switch (type) {
    case data::TaskType::kSearch: return kSearch;
    case data::TaskType::kRecommend: return kRecommend;
    case data::TaskType::kReview: return kAddReview;
  }
  return {};
}

std::optional<data::TaskType> task_type_of_function(std::string_view name) {
  if (name == kSearch) return data::TaskType::kSearch;
  if (name == kRecommend) return data::TaskType::kRecommend;
  if (name == kAddReview) return data::TaskType::kReview;
  return std::nullopt;
}

namespace {
nlohmann::ordered_json schema(const ToolSpec& tool) {
  nlohmann::ordered_json parameters;
  if (tool.params.empty()) {
    parameters = nlohmann::ordered_json::object();  // `stop` has an empty object, as in the original
  } else {
    parameters["type"] = "object";
    auto& props = parameters["properties"] = nlohmann::ordered_json::object();
    auto required = nlohmann::ordered_json::array();
    for (const auto& p : tool.params) {
      nlohmann::ordered_json prop;
      if (p.type == ParamType::kString) {
        prop["type"] = "string";
      } else {
        prop["type"] = "array";
        prop["items"] = {{"type", "string"}, {"description", std::string(p.item_description)}};
      }
      prop["description"] = std::string(p.description);
      props[std::string(p.name)] = prop;
      required.push_back(std::string(p.name));
    }
    parameters["required"] = required;
  }
  nlohmann::ordered_json fn;
  fn["name"] = std::string(tool.name);
  fn["description"] = std::string(tool.description);
  fn["parameters"] = parameters;
  return {{"type", "function"}, {"function", fn}};
}
}  // namespace

std::string tool_schema_json(const ToolSpec& tool) { return schema(tool).dump(); }

std::string tools_json(bool include_product_details) {
  auto arr = nlohmann::ordered_json::array();
  for (const auto& t : tool_specs())
    if (include_product_details || t.name != kProductDetails) arr.push_back(schema(t));
  return arr.dump();
}

}  // namespace pwab::env
