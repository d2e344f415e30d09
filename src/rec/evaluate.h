// src/rec/evaluate.h: how good a recommender is on a dataset's held-out purchases, beside the two baselines a
// user would compare it with (docs/recommender.md, "Measured results").
//
// The cases are the targets of the benchmark's recommendation tasks: every test behaviour of every user, with
// everything the user bought before it (time order) as input. Training never sees test behaviours
// (rec::train), so these are held out. Ranking is over all candidates, as get_recommendations_by_history
// ranks, not against sampled negatives as training's validation does: sampled negatives reward popularity, so
// a model can validate well and still return the same ten items for every history.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "rec/recommender.h"

namespace pwab::rec {

//! One held-out purchase: what the user bought before it (oldest first) and what they bought.
struct HeldOutCase {
  std::vector<std::string> before;
  std::string target;
};

//! Every test behaviour that has at least one behaviour before it, in user order then time order.
std::vector<HeldOutCase> test_cases(const data::Dataset& ds);

//! The k ASINs bought most often outside the test split (ties: catalogue order).
std::vector<std::string> most_popular(const data::Dataset& ds, int k);

//! An item-to-item baseline: the k items bought most often right after `last` in the non-test sequences
//! (ties: catalogue order), then most-popular to fill the list. Built once per dataset.
class SuccessorBaseline {
 public:
  explicit SuccessorBaseline(const data::Dataset& ds, int k = 10);
  std::vector<std::string> recommend(const std::vector<std::string>& before) const;

 private:
  const data::Dataset* ds_;
  int k_;
  std::vector<std::vector<data::ProductId>> successors_;  // per product, most frequent first, at most k
  std::vector<std::string> popular_;
};

//! Hit rate and NDCG at k of one ranker on the cases.
struct RankerScore {
  double hr = 0;
  double ndcg = 0;
  std::size_t distinct_items = 0;  //!< distinct ASINs over all its top-k lists (10 = one list for everyone)
};

struct HeldOutReport {
  int k = 10;
  std::size_t cases = 0;
  RankerScore model;        //!< the recommender
  RankerScore popular;      //!< most_popular(ds, k) for every case
  RankerScore successors;   //!< SuccessorBaseline
};

//! Scores the recommender and both baselines on test_cases(ds). Throws pwab::Error when the dataset has no
//! held-out case or k < 1.
HeldOutReport evaluate_held_out(const Recommender& model, const data::Dataset& ds, int k = 10);

}  // namespace pwab::rec
