#include "data/validate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "data/loader.h"
#include "support/test_support.h"

namespace pwab::data {
namespace {

TEST(Validate, FixtureStatisticsByHand) {
  ValidationReport r = validate_dataset(test::fixture("data/original"));
  ASSERT_TRUE(r.loaded);
  EXPECT_EQ(r.diag.n_errors(), 0u) << r.diag.first_error();
  // Warnings: user 3's missing "Focus Aspect", and B0FIXTURE6 without an item id.
  EXPECT_EQ(r.diag.n_warnings(), 2u);
  const DatasetStats& s = r.stats;
  EXPECT_EQ(s.n_users, 3u);
  EXPECT_EQ(s.n_profiles, 3u);
  EXPECT_EQ(s.n_behaviours, 9u);
  EXPECT_EQ(s.n_products, 6u);
  EXPECT_EQ(s.n_products_in_behaviours, 6u);
  EXPECT_EQ(s.n_item_ids, 5u);
  // Train: only user 1 has train tasks; its history + train behaviours are 3.
  EXPECT_EQ(s.train.n_users, 1u);
  EXPECT_DOUBLE_EQ(s.train.avg_behaviour_length, 3.0);
  EXPECT_EQ(s.train.n_instructions, 2u);
  EXPECT_EQ(s.train.n_by_type[static_cast<int>(TaskType::kSearch)], 1u);
  EXPECT_EQ(s.train.n_by_type[static_cast<int>(TaskType::kReview)], 1u);
  // Test: all three users; (4 + 3 + 2) / 3 behaviours.
  EXPECT_EQ(s.test.n_users, 3u);
  EXPECT_DOUBLE_EQ(s.test.avg_behaviour_length, 3.0);
  EXPECT_EQ(s.test.n_instructions, 3u);
  // "Find me a sturdy oak cutting board with a juice groove." = 11 words + '.' = 12 tokens.
  // "Write a review for the cutting board: heavy, well made, five stars." = 12 words + 4 marks = 16 tokens.
  EXPECT_DOUBLE_EQ(s.train.avg_instruction_tokens, 14.0);
  EXPECT_DOUBLE_EQ(s.train.avg_tokens_by_type[static_cast<int>(TaskType::kSearch)], 12.0);
  EXPECT_GT(s.avg_product_tokens, 20.0);
  EXPECT_GT(s.avg_profile_tokens, 40.0);
}

TEST(Validate, ReportHasTheTableLayoutAndCounts) {
  ValidationReport r = validate_dataset(test::fixture("data/original"));
  std::string text = format_report(r);
  for (const char* needle : {"# Users", "# Avg. behavior length", "# Instructions", "# Products", "Checks: 0 errors, 2 warnings",
                             "item-id", "profile-field"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  auto j = nlohmann::json::parse(format_report_json(r));
  EXPECT_EQ(j["test"]["instructions"], 3);
  EXPECT_EQ(j["warnings"], 2);
  EXPECT_EQ(j["warning_counts"]["item-id"], 1);
}

TEST(Validate, OrderingProblemsAreWarnings) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  auto j = nlohmann::ordered_json::parse(test::read_text(dir / "user_history_part_1.json"));
  auto& h = j["AG1FIXTUREUSERONE00000000001"];
  std::swap(h[0], h[1]);  // still history/history, but out of time order
  std::swap(h[2], h[3]);  // a test behaviour before a train one: both time and split order broken
  test::write_text(dir / "user_history_part_1.json", j.dump());
  ValidationReport r = validate_dataset(dir.path());
  EXPECT_EQ(r.diag.n_errors(), 0u);
  std::map<std::string, std::size_t> w;
  for (auto& [k, n] : r.diag.counts(Severity::kWarning)) w[k] = n;
  EXPECT_EQ(w["history-order"], 2u);
  EXPECT_EQ(w["split-order"], 1u);
}

TEST(Validate, TaskTargetMissingFromHistoryIsAWarning) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  auto j = nlohmann::ordered_json::parse(test::read_text(dir / "user_instructions.json"));
  j["test"][0]["timestamp"] = 1600000300001;
  test::write_text(dir / "user_instructions.json", j.dump());
  ValidationReport r = validate_dataset(dir.path());
  std::map<std::string, std::size_t> w;
  for (auto& [k, n] : r.diag.counts(Severity::kWarning)) w[k] = n;
  EXPECT_EQ(w["task-timestamp"], 1u);
  EXPECT_EQ(w["task-target-history"], 1u);
}

TEST(Validate, UnreadableDirectoryIsAnErrorNotACrash) {
  ValidationReport r = validate_dataset("/nonexistent/pwab");
  EXPECT_FALSE(r.loaded);
  EXPECT_EQ(r.diag.n_errors(), 1u);
  EXPECT_NE(format_report(r).find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace pwab::data
