// Lucene's length norm and BM25 arithmetic, checked against values printed by Lucene 8 (SmallFloat, and the
// reference tool's scores) and against float32 computations done by hand below.
#include <gtest/gtest.h>

#include "search/bm25.h"
#include "search/small_float.h"

namespace pwab::search {
namespace {

TEST(SmallFloat, EncodesLikeLucene) {
  // (length, norm byte, decoded length) from org.apache.lucene.util.SmallFloat.intToByte4 / byte4ToInt.
  const std::vector<std::tuple<uint64_t, int, uint64_t>> table = {
      {0, 0, 0},           {1, 1, 1},         {23, 23, 23},       {24, 24, 24},          {25, 25, 25},
      {31, 31, 31},        {32, 32, 32},      {33, 33, 33},       {40, 40, 40},          {100, 57, 96},
      {255, 70, 248},      {256, 70, 248},    {1000, 87, 984},    {123456, 143, 122904}, {2147483647, 255, 2013265944}};
  for (const auto& [length, norm, decoded] : table) {
    EXPECT_EQ(length_to_norm(length), norm) << length;
    EXPECT_EQ(norm_to_length(length_to_norm(length)), decoded) << length;
  }
  EXPECT_EQ(norm_to_length(100), 3096u);
  EXPECT_EQ(norm_to_length(200), 16777240u);
  EXPECT_EQ(norm_to_length(254), 1879048216u);
}

TEST(SmallFloat, RoundTripIsIdentityOnDecodedValues) {
  for (int b = 0; b < 256; ++b) EXPECT_EQ(length_to_norm(norm_to_length(static_cast<uint8_t>(b))), b);
  // Monotone: a longer field never gets a smaller norm.
  for (uint64_t n = 1; n < 5000; ++n) EXPECT_LE(length_to_norm(n - 1), length_to_norm(n));
}

// Tiny corpus: d1 "quick fox" (2 tokens), d2 "quick brown foxes jumped" (4 tokens: quick brown fox jump),
// d3 "lazy dog" (2 tokens). N = 3, sumTotalTermFreq = 8, avgdl = (float)(8/3) = 2.6666667461395264.
// With k1 = 0.9, b = 0.4 and every operation rounded to float:
//   norm_inverse(2) = 1 / (0.9 * (0.6 + 0.4*2/avgdl)) = 1.2345679998397827
//   norm_inverse(4) = 1 / (0.9 * (0.6 + 0.4*4/avgdl)) = 0.9259259104728699
//   idf(fox: n=2) = (float) ln(1 + 1.5/2.5) = 0.4700036346912384;  idf(brown: n=1) = ln(1 + 2.5/1.5) = 0.9808292388916016
//   "fox" on d1 = 0.47000363 - 0.47000363 / (1 + 1.2345680) = 0.259670556   (Lucene prints 0.25967)
//   "fox" on d2 = 0.225963295 (Lucene 0.22596); "brown" on d2 = 0.471552551; "brown fox" on d2 = 0.697515845
//   "fox fox" on d1: boost 2, weight = 0.94000727, score 0.519341111 (Lucene 0.51934)
TEST(Bm25, TinyCorpusByHand) {
  CollectionStats stats{3, 8};
  float avgdl = lucene_avgdl(stats);
  EXPECT_EQ(avgdl, 2.6666667461395264f);
  NormInverseTable norm_inverse(Bm25Params{}, avgdl);
  EXPECT_EQ(norm_inverse[length_to_norm(2)], 1.2345679998397827f);
  EXPECT_EQ(norm_inverse[length_to_norm(4)], 0.9259259104728699f);
  float idf_fox = lucene_idf(2, 3), idf_brown = lucene_idf(1, 3);
  EXPECT_EQ(idf_fox, 0.4700036346912384f);
  EXPECT_EQ(idf_brown, 0.9808292388916016f);

  float fox_d1 = lucene_term_score(idf_fox, 1, norm_inverse[2]);
  float fox_d2 = lucene_term_score(idf_fox, 1, norm_inverse[4]);
  float brown_d2 = lucene_term_score(idf_brown, 1, norm_inverse[4]);
  EXPECT_EQ(fox_d1, 0.259670556f);
  EXPECT_EQ(fox_d2, 0.225963295f);
  EXPECT_EQ(brown_d2, 0.471552551f);
  EXPECT_EQ(static_cast<float>(static_cast<double>(fox_d2) + brown_d2), 0.697515845f);
  EXPECT_EQ(lucene_term_score(2.0f * idf_fox, 1, norm_inverse[2]), 0.519341111f);
}

TEST(Bm25, ScoreGrowsWithFrequencyAndShrinksWithLength) {
  NormInverseTable norm_inverse(Bm25Params{}, 50.0f);
  float w = 2.0f;
  for (int f = 1; f < 50; ++f)
    EXPECT_LT(lucene_term_score(w, static_cast<float>(f), norm_inverse[40]),
              lucene_term_score(w, static_cast<float>(f + 1), norm_inverse[40]));
  for (int n = 1; n < 255; ++n)
    EXPECT_GE(lucene_term_score(w, 3, norm_inverse[static_cast<uint8_t>(n - 1)]),
              lucene_term_score(w, 3, norm_inverse[static_cast<uint8_t>(n)]));
  // No (k1 + 1) factor: a term's score stays below its weight.
  EXPECT_LT(lucene_term_score(w, 1000, norm_inverse[0]), w);
}

}  // namespace
}  // namespace pwab::search
