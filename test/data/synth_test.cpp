#include "data/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/text.h"
#include "data/loader.h"
#include "data/validate.h"
#include "support/test_support.h"

namespace pwab::data {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> read_all(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = test::read_text(e.path());
  return files;
}

TEST(Synth, SameSeedSameBytes) {
  test::TempDir a, b, c;
  SynthOptions o;
  o.seed = 7;
  synthesize_to(o, a.path());
  synthesize_to(o, b.path());
  o.seed = 8;
  synthesize_to(o, c.path());
  auto fa = read_all(a.path()), fb = read_all(b.path()), fc = read_all(c.path());
  ASSERT_EQ(fa.size(), 8u);  // 2 product parts, 3 history parts, profiles, instructions, item ids
  for (const auto& [name, bytes] : fa) {
    EXPECT_EQ(bytes, fb[name]) << name;
    EXPECT_NE(bytes, fc[name]) << name;
  }
}

class SynthMini : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    synthesize_to(SynthOptions{}, dir_->path());
    report_ = new ValidationReport(validate_dataset(dir_->path()));
    ds_ = new Dataset(load_dataset(dir_->path()));
  }
  static void TearDownTestSuite() {
    delete ds_;
    delete report_;
    delete dir_;
  }
  static test::TempDir* dir_;
  static ValidationReport* report_;
  static Dataset* ds_;
};
test::TempDir* SynthMini::dir_ = nullptr;
ValidationReport* SynthMini::report_ = nullptr;
Dataset* SynthMini::ds_ = nullptr;

TEST_F(SynthMini, ValidatesCleanlyAtTheMiniScale) {
  EXPECT_EQ(report_->diag.n_errors(), 0u) << report_->diag.first_error();
  EXPECT_EQ(report_->diag.n_warnings(), 0u) << format_report(*report_);
  const auto& s = report_->stats;
  EXPECT_EQ(s.n_users, 50u);
  EXPECT_EQ(s.n_products, 2000u);
  EXPECT_EQ(s.n_item_ids, 2000u);
  EXPECT_EQ(s.train.n_instructions, 345u);  // round(6.896 * 50)
  EXPECT_EQ(s.test.n_instructions, 109u);   // round(2.174 * 50)
  EXPECT_EQ(s.test.n_users, 50u);           // every user has a test task
  EXPECT_NEAR(static_cast<double>(s.n_behaviours) / 50, 30, 8);
  // Test type mix 32 / 35 / 33 %.
  EXPECT_EQ(s.test.n_by_type[0], 35u);
  EXPECT_EQ(s.test.n_by_type[1], 38u);
  EXPECT_EQ(s.test.n_by_type[2], 36u);
  // Recommendation instructions are the shortest (paper Fig. 4b).
  EXPECT_LT(s.test.avg_tokens_by_type[1], s.test.avg_tokens_by_type[0]);
  EXPECT_LT(s.test.avg_tokens_by_type[1], s.test.avg_tokens_by_type[2]);
}

TEST_F(SynthMini, SplitIsChronologicalAndTasksPointAtTheirBehaviour) {
  for (const auto& u : ds_->users()) {
    ASSERT_FALSE(u.behaviours.empty());
    std::size_t n = u.behaviours.size();
    std::size_t n_test = 0, n_train = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (k > 0) {
        EXPECT_LT(u.behaviours[k - 1].review.timestamp, u.behaviours[k].review.timestamp);
        EXPECT_LE(static_cast<int>(u.behaviours[k - 1].split), static_cast<int>(u.behaviours[k].split));
      }
      n_test += u.behaviours[k].split == Split::kTest;
      n_train += u.behaviours[k].split == Split::kTrain;
    }
    EXPECT_EQ(n_test, std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(n * 0.1))));
    EXPECT_EQ(n_train, n / 10);
  }
  for (Split split : {Split::kTrain, Split::kTest}) {
    for (const auto& t : ds_->tasks(split)) {
      // The target is never in its own visible history, and everything visible is strictly earlier.
      for (const Behaviour* b : ds_->visible_history(t)) {
        EXPECT_LT(b->review.timestamp, t.timestamp);
        EXPECT_FALSE(b->product == t.target_product && b->review.timestamp == t.timestamp);
      }
    }
  }
}

TEST_F(SynthMini, InstructionsReferToTargetsPartially) {
  std::size_t search_with_overlap = 0, n_search = 0;
  for (Split split : {Split::kTrain, Split::kTest}) {
    for (const auto& t : ds_->tasks(split)) {
      const Product& p = ds_->product(t.target_product);
      EXPECT_EQ(t.instruction.find(p.parent_asin), std::string::npos) << t.instruction;
      EXPECT_EQ(t.instruction.find(p.title), std::string::npos) << t.instruction;
      if (t.type != TaskType::kSearch) continue;
      ++n_search;
      // Specific: a search instruction shares some content word with the target's title.
      auto words = split_trim(ascii_lower(p.title), ' ');
      std::string lower = ascii_lower(t.instruction);
      for (const auto& w : words)
        if (w.size() > 3 && lower.find(w) != std::string::npos) {
          ++search_with_overlap;
          break;
        }
    }
  }
  EXPECT_GT(static_cast<double>(search_with_overlap), 0.9 * static_cast<double>(n_search));
}

TEST_F(SynthMini, DistractorsShareTitleWordsWithTargets) {
  // For most search targets, another product shares at least two title words of four letters or more.
  std::size_t with_distractor = 0, n = 0;
  for (const auto& t : ds_->tasks(Split::kTest)) {
    if (t.type != TaskType::kSearch) continue;
    ++n;
    std::set<std::string> target_words;
    for (auto& w : split_trim(ascii_lower(ds_->product(t.target_product).title), ' '))
      if (w.size() >= 4) target_words.insert(w);
    for (ProductId id = 0; id < ds_->products().size(); ++id) {
      if (id == t.target_product) continue;
      int shared = 0;
      for (auto& w : split_trim(ascii_lower(ds_->product(id).title), ' ')) shared += target_words.count(w);
      if (shared >= 2) {
        ++with_distractor;
        break;
      }
    }
  }
  EXPECT_GT(static_cast<double>(with_distractor), 0.8 * static_cast<double>(n));
}

TEST_F(SynthMini, ProfilesSummariseBehaviour) {
  std::set<std::string_view> allowed_gender = {"Female", "Male"};
  for (const auto& u : ds_->users()) {
    ASSERT_EQ(u.profile.fields.size(), 11u);
    for (std::size_t k = 0; k < 11; ++k) EXPECT_EQ(u.profile.fields[k].first, kProfileFields[k]);
    EXPECT_TRUE(allowed_gender.count(u.profile.get("Gender")));
    // Every preferred brand is a store the user bought from.
    std::set<std::string> stores;
    for (const auto& b : u.behaviours) {
      const auto& p = ds_->product(b.product);
      if (p.store) stores.insert(*p.store);
    }
    auto brands = split_trim(u.profile.get("Brand Preference"), ',');
    std::size_t found = 0;
    for (const auto& b : brands) found += stores.count(b);
    EXPECT_GE(found + 2, brands.size()) << u.id;  // a store can be null on a product: allow a couple
  }
}

TEST(Synth, PriceSensitivityShowsInPurchases) {
  SynthOptions o;
  o.n_users = 300;
  o.n_products = 3000;
  Dataset ds = synthesize(o);
  // Mean price quantile of purchases within each main category, by profile price sensitivity.
  std::map<std::string, std::vector<double>> by_category;
  for (const auto& p : ds.products())
    if (auto v = p.price.number()) by_category[p.main_category].push_back(*v);
  for (auto& [c, v] : by_category) std::sort(v.begin(), v.end());
  std::map<std::string, std::pair<double, int>> sums;
  for (const auto& u : ds.users()) {
    for (const auto& b : u.behaviours) {
      const auto& p = ds.product(b.product);
      auto v = p.price.number();
      if (!v) continue;
      const auto& sorted = by_category[p.main_category];
      double q = static_cast<double>(std::lower_bound(sorted.begin(), sorted.end(), *v) - sorted.begin()) / sorted.size();
      auto& s = sums[std::string(u.profile.get("Price Sensitivity"))];
      s.first += q;
      ++s.second;
    }
  }
  ASSERT_GT(sums["High"].second, 0);
  ASSERT_GT(sums["Low"].second, 0);
  double high = sums["High"].first / sums["High"].second, low = sums["Low"].first / sums["Low"].second;
  EXPECT_LT(high + 0.1, low) << "price-sensitive users should buy cheaper products";
}

TEST(Synth, RejectsImpossibleSizes) {
  SynthOptions o;
  o.n_products = 10;
  EXPECT_THROW(synthesize(o), Error);
}

}  // namespace
}  // namespace pwab::data
