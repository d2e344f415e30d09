#include "env/tools.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pwab::env {

using Json = nlohmann::ordered_json;

TEST(Tools, OriginalNamesOrderAndTerminality) {
  const auto& specs = tool_specs();
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].name, "search_product_by_query");
  EXPECT_EQ(specs[1].name, "get_recommendations_by_history");
  EXPECT_EQ(specs[2].name, "add_product_review");
  EXPECT_EQ(specs[3].name, "get_product_details_by_asin");
  EXPECT_EQ(specs[4].name, "stop");
  EXPECT_TRUE(specs[0].terminal && specs[1].terminal && specs[2].terminal);
  EXPECT_FALSE(specs[3].terminal || specs[4].terminal);
  EXPECT_EQ(find_tool("respond"), nullptr);
}

TEST(Tools, SchemasHaveTheOriginalStructure) {
  Json tools = Json::parse(tools_json(true));
  ASSERT_EQ(tools.size(), 5u);
  for (const auto& t : tools) {
    EXPECT_EQ(t["type"], "function");
    EXPECT_TRUE(t["function"]["description"].is_string());
  }
  const auto& search = tools[0]["function"]["parameters"];
  EXPECT_EQ(search["type"], "object");
  EXPECT_EQ(search["properties"]["query"]["type"], "string");
  EXPECT_EQ(search["required"], Json::array({"query"}));
  const auto& rec = tools[1]["function"]["parameters"];
  EXPECT_EQ(rec["properties"]["product_sequence"]["type"], "array");
  EXPECT_EQ(rec["properties"]["product_sequence"]["items"]["type"], "string");
  EXPECT_EQ(rec["required"], Json::array({"product_sequence"}));
  EXPECT_EQ(tools[2]["function"]["parameters"]["required"], Json::array({"review"}));
  EXPECT_EQ(tools[3]["function"]["parameters"]["required"], Json::array({"product_asin"}));
  EXPECT_EQ(tools[4]["function"]["parameters"], Json::object());  // stop: an empty object, not a schema
  // Every schema's properties are exactly its required list, in order (the original asserts this).
  for (const auto& t : tools) {
    const auto& p = t["function"]["parameters"];
    if (p.empty()) continue;
    std::vector<std::string> keys;
    for (const auto& [k, v] : p["properties"].items()) keys.push_back(k);
    EXPECT_EQ(Json(keys), p["required"]);
  }
}

TEST(Tools, DetailsToolOnlyOnRequest) {
  EXPECT_EQ(Json::parse(tools_json(false)).size(), 4u);
  EXPECT_EQ(tools_json(false).find("get_product_details_by_asin"), std::string::npos);
}

TEST(Tools, TaskFunctionsAndDecisionD3) {
  EXPECT_EQ(task_function(data::TaskType::kSearch), kSearch);
  EXPECT_EQ(task_function(data::TaskType::kRecommend), kRecommend);
  EXPECT_EQ(task_function(data::TaskType::kReview), kAddReview);
  EXPECT_EQ(task_type_of_function(kAddReview), data::TaskType::kReview);
  // Unknown or unparseable names are a wrong function, never review.
  for (std::string_view bad : {"", "review", "stop", "add_product_review ", "garbage"})
    EXPECT_FALSE(task_type_of_function(bad).has_value()) << bad;
}

}  // namespace pwab::env
