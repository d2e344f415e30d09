// The nesting limit on outside JSON (core/json_depth.h): counted outside strings, stopped early, and the parse
// helper discarding what is too deep instead of building it.
#include "core/json_depth.h"

#include <gtest/gtest.h>

namespace pwab {
namespace {

std::string nested(std::size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonDepth, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_FALSE(json_nests_deeper_than(R"({"a": [1, {"b": 2}]})", 3));
  EXPECT_TRUE(json_nests_deeper_than(R"({"a": [1, {"b": 2}]})", 2));
  EXPECT_FALSE(json_nests_deeper_than(R"({"a": "[[[[[[[[{{{{"})", 1));  // brackets in a string do not count
  EXPECT_FALSE(json_nests_deeper_than(R"(["\"[[[["])", 1));             // nor after an escaped quote
  EXPECT_FALSE(json_nests_deeper_than(nested(kMaxJsonDepth)));
  EXPECT_TRUE(json_nests_deeper_than(nested(kMaxJsonDepth + 1)));
  // siblings do not add up: depth, not count
  std::string wide = "[";
  for (int i = 0; i < 10000; ++i) wide += "[],";
  wide += "[]]";
  EXPECT_FALSE(json_nests_deeper_than(wide, 2));
}

TEST(JsonDepth, TheHundredThousandLevelDocumentIsDiscardedUnbuilt) {
  const std::string deep = R"({"a":)" + nested(100000, '{', '}') + "}";
  nlohmann::json j = parse_json_or_discarded(nested(100000));
  EXPECT_TRUE(j.is_discarded());
  EXPECT_TRUE(parse_json_or_discarded(deep).is_discarded());
  EXPECT_EQ(parse_json_or_discarded(R"({"q": [1, 2]})")["q"][1], 2);
  EXPECT_TRUE(parse_json_or_discarded("{").is_discarded());
  EXPECT_NE(json_depth_message().find(std::to_string(kMaxJsonDepth)), std::string::npos);
}

}  // namespace
}  // namespace pwab
