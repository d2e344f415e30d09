#include "search/bm25_weight.h"

#include "search/small_float.h"

namespace pwab::search {

Bm25Weight::Bm25Weight(std::shared_ptr<const Bm25Context> context) : context_(std::move(context)) {
  need_stat(TERMFREQ);
  need_stat(WDF);
  need_stat(WDF_MAX);
  need_stat(WQF);
  need_stat(DOC_LENGTH);
  need_stat(DOC_LENGTH_MIN);
}

void Bm25Weight::init(double factor) {
  if (factor == 0) {  // the term-independent part, which Lucene's BM25 does not have
    weight_ = 0;
    max_part_ = 0;
    return;
  }
  float idf = lucene_idf(get_termfreq(), context_->stats.doc_count);
  weight_ = static_cast<float>(get_wqf()) * idf;
  if (factor != 1.0) weight_ *= static_cast<float>(factor);
  // The score grows with the wdf and with the norm inverse (shorter documents), so the bounds give the maximum.
  float best_norm_inverse = context_->norm_inverse[length_to_norm(get_doclength_lower_bound())];
  float bound = lucene_term_score(weight_, static_cast<float>(get_wdf_upper_bound()), best_norm_inverse);
  max_part_ = static_cast<double>(bound) * (1 + 1e-6);
}

double Bm25Weight::get_sumpart(Xapian::termcount wdf, Xapian::termcount doclen, Xapian::termcount) const {
  if (wdf == 0) return 0;
  return lucene_term_score(weight_, static_cast<float>(wdf), context_->norm_inverse[length_to_norm(doclen)]);
}

}  // namespace pwab::search
