// The analysis chain against Lucene 8's output (expected values were produced by Lucene's StandardTokenizer,
// EnglishPossessiveFilter, LowerCaseFilter, StopFilter and PorterStemFilter on the same strings).
#include <gtest/gtest.h>

#include "search/analyzer.h"
#include "search/porter_stemmer.h"
#include "search/search.h"
#include "search/standard_tokenizer.h"

namespace pwab::search {
namespace {

using Terms = std::vector<std::string>;

Terms tokens(std::string_view text) {
  Terms out;
  StandardTokenizer t(text);
  std::string_view token;
  while (t.next(token)) out.emplace_back(token);
  return out;
}

std::string stem(std::string word) {
  porter_stem(word);
  return word;
}

TEST(Tokenizer, WordsNumbersAndPunctuation) {
  EXPECT_EQ(tokens("it's don't U.S.A. e.g. 5.3 1,000 a:b a.5 foo_bar ___ v1.2 x-ray"),
            (Terms{"it's", "don't", "U.S.A", "e.g", "5.3", "1,000", "a:b", "a", "5", "foo_bar", "v1.2", "x", "ray"}));
}

TEST(Tokenizer, UrlsAndEmails) {
  EXPECT_EQ(tokens("foo@bar.com https://www.amazon.com/dp/B0X?x=1"),
            (Terms{"foo", "bar.com", "https", "www.amazon.com", "dp", "B0X", "x", "1"}));
}

TEST(Tokenizer, EmojiSymbolsAndIdeographs) {
  EXPECT_EQ(tokens("Brand\u00AE Widget\u2122 \u00A92020 \u2705"),
            (Terms{"Brand", "\u00AE", "Widget", "\u2122", "\u00A9", "2020", "\u2705"}));
  // Two emoji, a thumbs-up with a skin tone, a heart with VS16, a keycap and a flag: one token each.
  EXPECT_EQ(tokens("\U0001F600\U0001F600 \U0001F44D\U0001F3FD \u2764\uFE0F # 1\uFE0F\u20E3 \U0001F1FA\U0001F1F8"),
            (Terms{"\U0001F600", "\U0001F600", "\U0001F44D\U0001F3FD", "\u2764\uFE0F", "1\uFE0F\u20E3",
                   "\U0001F1FA\U0001F1F8"}));
  EXPECT_EQ(tokens("\u4E2D\u6587 \u3072\u3089 \u30AB\u30BF\u30AB\u30CA \u0E20\u0E32\u0E29\u0E32 \uD55C\uAD6D\uC5B4"),
            (Terms{"\u4E2D", "\u6587", "\u3072", "\u3089", "\u30AB\u30BF\u30AB\u30CA", "\u0E20\u0E32\u0E29\u0E32",
                   "\uD55C\uAD6D\uC5B4"}));
  // Degree sign, fractions, multiplication and dashes are not tokens.
  EXPECT_EQ(tokens("\u00B0C \u00BD \u00D7 \u2013 caf\u00E9"), (Terms{"C", "caf\u00E9"}));
}

TEST(Tokenizer, InvalidUtf8BreaksTokensAndIsDropped) {
  EXPECT_EQ(tokens("ab\xFF" "cd \xE2\x82 ef \xC0\xAF gh"), (Terms{"ab", "cd", "ef", "gh"}));
  EXPECT_EQ(tokens(std::string_view("x\0y", 3)), (Terms{"x", "y"}));
}

TEST(Tokenizer, LongTokensAreCutAt255Utf16Units) {
  std::string word(300, 'a');
  Terms t = tokens(word);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].size(), 255u);
  EXPECT_EQ(t[1].size(), 45u);
}

TEST(Analyzer, PossessivesStopWordsAndCase) {
  EXPECT_EQ(analyze("a b c The AND Mr's JOHN'S Johns\u2019 x's \u2019s 's O'Neil's it's"),
            (Terms{"b", "c", "mr", "john", "john", "x", "s", "s", "o'neil"}));
  EXPECT_EQ(analyze("Brand\u00AE Widget\u2122 NA\u00CFVE \u0130stanbul"),
            (Terms{"brand", "\u00AE", "widget", "\u2122", "na\u00EFv", "istanbul"}));
}

TEST(Analyzer, EmptyAndPunctuationOnly) {
  EXPECT_TRUE(analyze("").empty());
  EXPECT_TRUE(analyze("  -- !! ... the of and ").empty());
}

TEST(Analyzer, AllStopWords) {
  EXPECT_TRUE(analyze("a an and are as at be but by for if in into is it no not of on or such that the their then "
                      "there these they this to was will with")
                  .empty());
  EXPECT_FALSE(is_english_stop_word("us"));
  EXPECT_FALSE(is_english_stop_word("The"));  // the filter runs after lower-casing
}

TEST(PorterStemmer, ReferenceImplementationSpecifics) {
  // One- and two-letter words are never stemmed; the paper's algorithm (and Snowball) would give u, o, x, v.
  EXPECT_EQ(stem("us"), "us");
  EXPECT_EQ(stem("os"), "os");
  EXPECT_EQ(stem("xs"), "xs");
  EXPECT_EQ(stem("is"), "is");
  EXPECT_EQ(stem("bus"), "bu");
  // logi -> log and bli -> ble (the paper has abli -> able).
  EXPECT_EQ(stem("technology"), "technolog");
  EXPECT_EQ(stem("assembly"), "assembl");
  EXPECT_EQ(stem("incredibly"), "incred");
  EXPECT_EQ(stem("responsibly"), "respons");
  EXPECT_EQ(stem("conformabli"), "conform");
  EXPECT_EQ(stem("logi"), "logi");
  EXPECT_EQ(stem("bli"), "bli");
  EXPECT_EQ(stem("ies"), "i");
}

TEST(PorterStemmer, Lucene8Vocabulary) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"caresses", "caress"},       {"ponies", "poni"},         {"ties", "ti"},
      {"cats", "cat"},              {"feed", "feed"},           {"agreed", "agre"},
      {"plastered", "plaster"},     {"motoring", "motor"},      {"sing", "sing"},
      {"conflated", "conflat"},     {"troubled", "troubl"},     {"sized", "size"},
      {"hopping", "hop"},           {"tanned", "tan"},          {"falling", "fall"},
      {"hissing", "hiss"},          {"fizzed", "fizz"},         {"failing", "fail"},
      {"filing", "file"},           {"happy", "happi"},         {"sky", "sky"},
      {"relational", "relat"},      {"conditional", "condit"},  {"rational", "ration"},
      {"valenci", "valenc"},        {"hesitanci", "hesit"},     {"digitizer", "digit"},
      {"radicalli", "radic"},       {"differentli", "differ"},  {"vileli", "vile"},
      {"analogousli", "analog"},    {"vietnamization", "vietnam"}, {"predication", "predic"},
      {"operator", "oper"},         {"feudalism", "feudal"},    {"decisiveness", "decis"},
      {"hopefulness", "hope"},      {"callousness", "callous"}, {"formaliti", "formal"},
      {"sensitiviti", "sensit"},    {"sensibiliti", "sensibl"}, {"triplicate", "triplic"},
      {"formative", "form"},        {"formalize", "formal"},    {"electriciti", "electr"},
      {"electrical", "electr"},     {"hopeful", "hope"},        {"goodness", "good"},
      {"revival", "reviv"},         {"allowance", "allow"},     {"inference", "infer"},
      {"airliner", "airlin"},       {"gyroscopic", "gyroscop"}, {"adjustable", "adjust"},
      {"defensible", "defens"},     {"irritant", "irrit"},      {"replacement", "replac"},
      {"adjustment", "adjust"},     {"dependent", "depend"},    {"adoption", "adopt"},
      {"homologou", "homolog"},     {"communism", "commun"},    {"activate", "activ"},
      {"angulariti", "angular"},    {"homologous", "homolog"},  {"effective", "effect"},
      {"bowdlerize", "bowdler"},    {"probate", "probat"},      {"rate", "rate"},
      {"cease", "ceas"},            {"controll", "control"},    {"roll", "roll"},
      {"generalizations", "gener"}, {"oscillators", "oscil"},   {"https", "http"},
      {"ray", "rai"}};
  for (const auto& [word, want] : cases) EXPECT_EQ(stem(word), want) << word;
}

TEST(PorterStemmer, NonAsciiLettersAreConsonants) {
  EXPECT_EQ(stem("na\u00EFve"), "na\u00EFv");
  EXPECT_EQ(stem("caf\u00E9s"), "caf\u00E9");
}

TEST(Analyzer, NumbersAndHyphens) {
  EXPECT_EQ(analyze("5.3-inch 1,000mAh USB-C 2-Pack 4K"), (Terms{"5.3", "inch", "1,000mah", "usb", "c", "2", "pack", "4k"}));
}

}  // namespace
}  // namespace pwab::search
