// src/search/bm25.h: Lucene 8's BM25 (BM25Similarity), in its float32 arithmetic so near-ties break the same way.
//
//   idf(t)  = (float) ln(1 + (N - n + 0.5) / (n + 0.5))          N: documents with terms, n: documents with t
//   weight  = boost * idf                                         boost: how often t occurs in the query
//   norm_inverse(d) = 1 / (k1 * ((1 - b) + b * L(d) / avgdl))     L(d): length decoded from the one-byte norm
//   score(t, d) = weight - weight / (1 + f * norm_inverse(d))     = weight * f / (f + 1 / norm_inverse(d))
//
// A document's score is the sum of its matching terms' scores, added in double and rounded to float.
#pragma once
#include <array>
#include <cstdint>

namespace pwab::search {

struct Bm25Params {
  float k1 = 0.9f;
  float b = 0.4f;
};

//! Collection statistics of the `contents` field, as Lucene's CollectionStatistics has them.
struct CollectionStats {
  int64_t doc_count = 0;            //!< documents with at least one term
  int64_t sum_total_term_freq = 0;  //!< tokens over all documents
};

float lucene_idf(int64_t doc_freq, int64_t doc_count);
//! sumTotalTermFreq / docCount, computed in double and rounded to float.
float lucene_avgdl(const CollectionStats& stats);

//! norm_inverse for each of the 256 norm bytes; the same for every term of an index.
class NormInverseTable {
 public:
  NormInverseTable(Bm25Params params, float avgdl);
  float operator[](uint8_t norm) const { return table_[norm]; }

 private:
  std::array<float, 256> table_{};
};

inline float lucene_term_score(float weight, float freq, float norm_inverse) {
  return weight - weight / (1.0f + freq * norm_inverse);
}

//! The same score when `denominator` = 1 + f * norm_inverse was computed (in float) beforehand.
inline float term_score_from_denominator(float weight, float denominator) { return weight - weight / denominator; }

}  // namespace pwab::search
