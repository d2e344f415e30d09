#include "core/text.h"

#include <gtest/gtest.h>

namespace pwab {

TEST(Text, BasicTokensCountWordsAndPunctuation) {
  EXPECT_EQ(count_basic_tokens(""), 0u);
  EXPECT_EQ(count_basic_tokens("Hello, world!"), 4u);
  EXPECT_EQ(count_basic_tokens("  5.0 stars  "), 4u);  // 5 . 0 stars
  EXPECT_EQ(count_basic_tokens("Café au lait"), 3u);
}

TEST(Text, SplitTrimJoin) {
  auto parts = split_trim(" a, b ,c,, ", ',');
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_EQ(parts[0], "a");
  EXPECT_EQ(parts[1], "b");
  EXPECT_EQ(parts[3], "");
  EXPECT_EQ(join({"x", "y"}, ", "), "x, y");
  EXPECT_EQ(ascii_lower("AbC É"), "abc É");
}

}  // namespace pwab
