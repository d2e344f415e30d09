#include "search/bm25.h"

#include <cmath>

#include "search/small_float.h"

namespace pwab::search {

float lucene_idf(int64_t doc_freq, int64_t doc_count) {
  double n = static_cast<double>(doc_freq), total = static_cast<double>(doc_count);
  return static_cast<float>(std::log(1.0 + (total - n + 0.5) / (n + 0.5)));
}

float lucene_avgdl(const CollectionStats& stats) {
  if (stats.doc_count == 0) return 1.0f;
  return static_cast<float>(static_cast<double>(stats.sum_total_term_freq) / static_cast<double>(stats.doc_count));
}

NormInverseTable::NormInverseTable(Bm25Params p, float avgdl) {
  for (int i = 0; i < 256; ++i) {
    // Same operations, in the same order and precision, as Lucene's cache (see CMakeLists: no FMA contraction).
    auto length = static_cast<float>(norm_to_length(static_cast<uint8_t>(i)));
    table_[i] = 1.0f / (p.k1 * ((1.0f - p.b) + p.b * length / avgdl));
  }
}

}  // namespace pwab::search
