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

TEST(Text, DistinctNgramShareFallsAsATextRepeatsItself) {
  EXPECT_DOUBLE_EQ(distinct_ngram_share("", 3), 1.0);
  EXPECT_DOUBLE_EQ(distinct_ngram_share("too short", 3), 1.0);
  EXPECT_DOUBLE_EQ(distinct_ngram_share("The quality is great, and the price is fair.", 3), 1.0);
  // a b c | b c a | c a b | a b c: three of four 3-grams distinct; case and punctuation do not make words differ
  EXPECT_DOUBLE_EQ(distinct_ngram_share("A b, c. a B c!", 3), 0.75);
  // a sentence of 4 words said k times: 4 distinct 3-grams among 4k − 2, so 4 of 18 for k = 5
  const std::string once = "The quality is great! ";
  std::string five;
  for (int i = 0; i < 5; ++i) five += once;
  EXPECT_DOUBLE_EQ(distinct_ngram_share(five, 3), 4.0 / 18.0);
  EXPECT_DOUBLE_EQ(distinct_ngram_share("x x x x", 1), 0.25);
  EXPECT_THROW(distinct_ngram_share("a b c", 0), std::invalid_argument);
}

}  // namespace pwab
