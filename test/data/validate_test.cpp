#include "data/validate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "data/loader.h"
#include "data/synth.h"
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

// The statistics as first written: every text built and counted whole, byte by byte. compute_stats counts each
// field once (and each behaviour once for both splits), with a vectorised counter; the figures must not move.
std::size_t reference_count(std::string_view text) {
  std::size_t n = 0;
  bool in_word = false;
  for (unsigned char c : text) {
    bool word_char = c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    if (word_char) {
      if (!in_word) ++n;
      in_word = true;
    } else {
      in_word = false;
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') ++n;
    }
  }
  return n;
}

void expect_stats_equal_reference(const Dataset& ds) {
  DatasetStats s = compute_stats(ds);
  std::size_t profile_tokens = 0, n_profiles = 0, product_tokens = 0;
  for (const auto& u : ds.users())
    if (u.has_profile) {
      ++n_profiles;
      for (const auto& [k, v] : u.profile.fields) profile_tokens += reference_count(k + ": " + v);
    }
  for (const auto& p : ds.products()) product_tokens += reference_count(product_text(p));
  EXPECT_EQ(s.avg_profile_tokens, static_cast<double>(profile_tokens) / static_cast<double>(n_profiles));
  EXPECT_EQ(s.avg_product_tokens, static_cast<double>(product_tokens) / static_cast<double>(ds.products().size()));
  for (Split split : {Split::kTrain, Split::kTest}) {
    const SplitStats& ss = split == Split::kTrain ? s.train : s.test;
    std::vector<bool> has_task(ds.users().size(), false);
    std::size_t instruction_tokens = 0;
    for (const auto& t : ds.tasks(split)) {
      has_task[t.user] = true;
      instruction_tokens += reference_count(t.instruction);
    }
    std::size_t users = 0, length = 0, tokens = 0;
    for (UserId u = 0; u < ds.users().size(); ++u) {
      if (!has_task[u]) continue;
      ++users;
      for (const auto& b : ds.user(u).behaviours) {
        if (split == Split::kTrain && b.split == Split::kTest) continue;
        ++length;
        tokens += reference_count(behaviour_text(ds, b));
      }
    }
    ASSERT_GT(users, 0u);
    EXPECT_EQ(ss.n_users, users);
    EXPECT_EQ(ss.avg_behaviour_length, static_cast<double>(length) / static_cast<double>(users));
    EXPECT_EQ(ss.avg_behaviour_tokens, static_cast<double>(tokens) / static_cast<double>(users));
    EXPECT_EQ(ss.avg_instruction_tokens,
              static_cast<double>(instruction_tokens) / static_cast<double>(ds.tasks(split).size()));
  }
}

TEST(Validate, StatisticsEqualTheWholeTextCountsOnTheFixture) {
  expect_stats_equal_reference(load_dataset(test::fixture("data/original")));
}

TEST(Validate, StatisticsEqualTheWholeTextCountsOnTheMiniSynthetic) {
  expect_stats_equal_reference(synthesize(SynthOptions{}));
}

// validate_dataset computes the statistics beside the checks and can hand the dataset over instead of freeing it
// (what `pwab data validate` does); the report must be the one of the plain sequence, and the kept dataset the load.
nlohmann::json report_without_time(const ValidationReport& r) {
  auto j = nlohmann::json::parse(format_report_json(r));
  j.erase("load_seconds");
  return j;
}

TEST(Validate, KeptDatasetAndReportEqualTheSequentialComputation) {
  const auto dir = test::fixture("data/original");
  Dataset kept;
  ValidationReport r = validate_dataset(dir, 0, &kept);
  ValidationReport sequential;
  sequential.dir = dir;
  Dataset loaded = load_dataset(dir, sequential.diag);
  sequential.loaded = true;
  check_consistency(loaded, sequential.diag);
  sequential.stats = compute_stats(loaded);
  EXPECT_EQ(report_without_time(r), report_without_time(sequential));
  EXPECT_EQ(r.diag.n_warnings(), 2u);
  ASSERT_EQ(kept.products().size(), loaded.products().size());
  ASSERT_EQ(kept.users().size(), loaded.users().size());
  for (std::size_t i = 0; i < kept.products().size(); ++i)
    EXPECT_EQ(product_text(kept.products()[i]), product_text(loaded.products()[i]));
  for (UserId u = 0; u < kept.users().size(); ++u)
    EXPECT_EQ(kept.user(u).behaviours.size(), loaded.user(u).behaviours.size());
  // a second validation into the same place replaces the kept dataset
  EXPECT_EQ(report_without_time(validate_dataset(dir, 0, &kept)), report_without_time(r));
  EXPECT_EQ(kept.products().size(), loaded.products().size());
}

TEST(Validate, VectorisedTokenCountEqualsTheByteLoop) {
  // Every byte class at every offset of the 16-byte blocks, and words that cross block boundaries.
  const std::string alphabet = std::string("aZ09 \n\t\r.,:;-'\"$@[`{~/") + "\x7f\x80\xc3\xa9\xff" + std::string(1, '\0');
  uint64_t state = 42;
  auto next = [&] { state = state * 6364136223846793005ULL + 1442695040888963407ULL; return state >> 33; };
  for (int trial = 0; trial < 4000; ++trial) {
    std::size_t len = next() % 70;
    std::string text;
    bool wordy = next() % 2;
    for (std::size_t i = 0; i < len; ++i)
      text += wordy && next() % 4 ? 'x' : alphabet[next() % alphabet.size()];
    ASSERT_EQ(count_basic_tokens(text), reference_count(text)) << '"' << text << '"';
    ASSERT_EQ(count_basic_tokens(std::string_view(text).substr(len / 3)), reference_count(std::string_view(text).substr(len / 3)));
  }
  std::string long_word(100, 'w');
  EXPECT_EQ(count_basic_tokens(long_word), 1u);
  EXPECT_EQ(count_basic_tokens(long_word + "." + long_word), 3u);
}

}  // namespace
}  // namespace pwab::data
