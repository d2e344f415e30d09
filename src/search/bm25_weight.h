// src/search/bm25_weight.h: Lucene 8's BM25 as a Xapian weighting scheme (internal to search/).
//
// Xapian's own BM25Weight differs from Lucene's (another idf, a (k1+1) factor, exact document lengths), so
// this class scores with bm25.h instead: the document length Xapian stores (the sum of wdf = the number of
// analyzed tokens) is turned into Lucene's one-byte norm, the query term's wqf is Lucene's boost.
#pragma once
#include <xapian.h>

#include <memory>

#include "search/bm25.h"

namespace pwab::search {

//! What every term's weight object shares: the collection statistics and the norm table.
struct Bm25Context {
  Bm25Params params;
  CollectionStats stats;
  NormInverseTable norm_inverse;
};

class Bm25Weight : public Xapian::Weight {
 public:
  explicit Bm25Weight(std::shared_ptr<const Bm25Context> context);

  std::string name() const override { return "pwab.lucene_bm25"; }
  Bm25Weight* clone() const override { return new Bm25Weight(context_); }
  void init(double factor) override;
  double get_sumpart(Xapian::termcount wdf, Xapian::termcount doclen, Xapian::termcount uniqterms) const override;
  double get_maxpart() const override { return max_part_; }
  double get_sumextra(Xapian::termcount, Xapian::termcount) const override { return 0; }
  double get_maxextra() const override { return 0; }

 private:
  std::shared_ptr<const Bm25Context> context_;
  float weight_ = 0;
  double max_part_ = 0;
};

}  // namespace pwab::search
