// Held-out evaluation (rec/evaluate.h) on a hand-built dataset whose answers are known: which purchases are
// held out, the most-popular list and its ties, the successor baseline, and the scores of a real recommender
// (the original-format fixture) recomputed here from recommend() itself.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "rec/evaluate.h"
#include "rec/recommender.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace pwab;

namespace {

std::string asin(int id) { return "ASIN" + std::to_string(1000 + id); }

//! 40 products ASIN1001..ASIN1040 (ids 1..40 as the fixture's item map) and three users:
//!   u1: 1 2 3 | test 4          u2: 1 2 5 | test 2 then 3          u3: test 7 (nothing before it)
//! Non-test counts: 1 ×2, 2 ×2, 3, 5. Successors outside test: 1→2 ×2, 2→3, 2→5.
data::Dataset tiny() {
  data::Dataset d;
  std::vector<std::pair<std::string, int64_t>> ids;
  for (int id = 1; id <= 40; ++id) {
    data::Product p;
    p.parent_asin = asin(id);
    d.add_product(p);
    ids.emplace_back(asin(id), id);
  }
  d.set_item_ids(ids);
  auto user = [&](std::string name, std::vector<std::pair<int, data::Split>> bought) {
    data::User u;
    u.id = std::move(name);
    for (auto [id, split] : bought) {
      data::Behaviour b;
      b.product = *d.find_product(asin(id));
      b.split = split;
      u.behaviours.push_back(b);
    }
    d.add_user(std::move(u));
  };
  using S = data::Split;
  user("u1", {{1, S::kHistory}, {2, S::kHistory}, {3, S::kTrain}, {4, S::kTest}});
  user("u2", {{1, S::kHistory}, {2, S::kHistory}, {5, S::kTrain}, {2, S::kTest}, {3, S::kTest}});
  user("u3", {{7, S::kTest}});
  return d;
}

}  // namespace

TEST(RecEvaluate, HeldOutCasesAreTestPurchasesWithWhatCameBefore) {
  auto ds = tiny();
  auto cases = rec::test_cases(ds);
  ASSERT_EQ(cases.size(), 3u);  // u3's only purchase has nothing before it
  EXPECT_EQ(cases[0].target, asin(4));
  EXPECT_EQ(cases[0].before, (std::vector<std::string>{asin(1), asin(2), asin(3)}));
  EXPECT_EQ(cases[1].target, asin(2));
  EXPECT_EQ(cases[1].before, (std::vector<std::string>{asin(1), asin(2), asin(5)}));
  // The second test purchase sees the first: the input is everything before it, as a task's history is.
  EXPECT_EQ(cases[2].target, asin(3));
  EXPECT_EQ(cases[2].before, (std::vector<std::string>{asin(1), asin(2), asin(5), asin(2)}));
}

TEST(RecEvaluate, MostPopularCountsOnlyNonTestPurchasesTiesInCatalogueOrder) {
  auto ds = tiny();
  EXPECT_EQ(rec::most_popular(ds, 3), (std::vector<std::string>{asin(1), asin(2), asin(3)}));
  // Only four products were bought outside the test split, so a longer list stops there.
  EXPECT_EQ(rec::most_popular(ds, 10).size(), 4u);
}

TEST(RecEvaluate, SuccessorsOfTheLastKnownItemThenPopular) {
  auto ds = tiny();
  rec::SuccessorBaseline successors(ds, 3);
  EXPECT_EQ(successors.recommend({asin(1)}), (std::vector<std::string>{asin(2), asin(1), asin(3)}));
  EXPECT_EQ(successors.recommend({asin(3), asin(2)}), (std::vector<std::string>{asin(3), asin(5), asin(1)}));
  // An unknown last ASIN is skipped, as the recommender drops it; nothing known → most-popular.
  EXPECT_EQ(successors.recommend({asin(1), "B0NOTTHERE"}), (std::vector<std::string>{asin(2), asin(1), asin(3)}));
  EXPECT_EQ(successors.recommend({}), (std::vector<std::string>{asin(1), asin(2), asin(3)}));
  // The test purchase 2→3 of u2 is not counted: 3 follows only 2 outside the test split once (u1).
  EXPECT_EQ(successors.recommend({asin(5)}), (std::vector<std::string>{asin(1), asin(2), asin(3)}));
}

TEST(RecEvaluate, ScoresTheRecommenderAsItsOwnRankingsSay) {
  auto ds = tiny();
  auto model = rec::Recommender::load(test::fixture("rec/sasrec_tiny.pth"), ds);
  for (int k : {1, 5, 10}) {
    SCOPED_TRACE("k " + std::to_string(k));
    auto report = rec::evaluate_held_out(*model, ds, k);
    ASSERT_EQ(report.cases, 3u);
    EXPECT_EQ(report.k, k);
    double hr = 0, ndcg = 0;
    std::set<std::string> distinct;
    for (const auto& c : rec::test_cases(ds)) {
      auto top = model->recommend(c.before, k);
      for (std::size_t r = 0; r < top.size(); ++r) {
        distinct.insert(top[r].asin);
        if (top[r].asin == c.target) hr += 1, ndcg += 1 / std::log2(r + 2.0);
      }
    }
    EXPECT_DOUBLE_EQ(report.model.hr, hr / 3);
    EXPECT_DOUBLE_EQ(report.model.ndcg, ndcg / 3);
    EXPECT_EQ(report.model.distinct_items, distinct.size());
    // Most-popular is one list for everyone; at k = 5 it is [1, 2, 3, 5] and holds targets 2 and 3 of u2.
    if (k == 5) {
      EXPECT_DOUBLE_EQ(report.popular.hr, 2.0 / 3);
      EXPECT_DOUBLE_EQ(report.popular.ndcg, (1 / std::log2(3.0) + 1 / std::log2(4.0)) / 3);
      EXPECT_EQ(report.popular.distinct_items, 4u);
      // Successors: u1 after 3 → none, popular [1 2 3 5] misses 4; u2 after 5 → popular, hits 2 (rank 2);
      // u2 after 2 → [3 5 1 ...] hits 3 at rank 1.
      EXPECT_DOUBLE_EQ(report.successors.hr, 2.0 / 3);
      EXPECT_DOUBLE_EQ(report.successors.ndcg, (1 / std::log2(3.0) + 1.0) / 3);
    }
  }
}

TEST(RecEvaluate, NothingHeldOutOrABadCutOffIsAnError) {
  auto ds = tiny();
  auto model = rec::Recommender::load(test::fixture("rec/sasrec_tiny.pth"), ds);
  EXPECT_THROW(rec::evaluate_held_out(*model, ds, 0), Error);
  data::Dataset empty;
  for (const auto& p : ds.products()) empty.add_product(p);
  empty.set_item_ids(ds.item_ids());
  try {
    rec::evaluate_held_out(*model, empty, 10);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing is held out"), std::string::npos) << e.what();
  }
}
