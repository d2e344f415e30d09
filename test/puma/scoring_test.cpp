// Scoring generated parameters in the environment: each task type, outputs that are no task call, candidate
// deduplication, preference pairs with D7's tie rule, and the fast test with D3's exact function names.
#include "puma/scoring.h"

#include <gtest/gtest.h>

#include "agents/fc_test_util.h"

namespace pwab::puma {
namespace {

const data::Dataset& ds() {
  static const data::Dataset d = agents::fctest::tiny();
  return d;
}
const data::Task& task(uint32_t i) { return ds().tasks(data::Split::kTest)[i]; }

struct World {
  agents::fctest::KeywordEmbedder embedder;
  agents::fctest::FixedSearch search{{"B0KETTLE02", "B0KETTLE01"}};
  agents::fctest::FixedRecommend recommend{{"B0SOCKS001", "B0MUG00001"}};
  env::Environment env{ds(), &search, &recommend, embedder};
};

TEST(PumaScoring, ParametersByType) {
  World w;
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(0), data::TaskType::kSearch, "red kettle"), 0.5);
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(1), data::TaskType::kRecommend, "B0KETTLE01, B0SHIRT001"), 1.0);
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(2), data::TaskType::kReview, "A great kettle."), 1.0);
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(2), data::TaskType::kReview, "Nice socks."), 0.0);
  // No task call: a question or a stop.
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(0), data::TaskType::kSearch, "Say: which colour?"), 0.0);
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(1), data::TaskType::kRecommend, "stop"), 0.0);
}

TEST(PumaScoring, CandidatesAndPreferencePairs) {
  World w;
  ScoredCandidates s = score_candidates(w.env, task(2), {"Nice socks.", "A great kettle.", "Nice socks.", "Mugs."});
  EXPECT_EQ(s.task, "test/2");
  ASSERT_EQ(s.candidates, (std::vector<std::string>{"Nice socks.", "A great kettle.", "Mugs."}));
  EXPECT_EQ(s.scores, (std::vector<double>{0.0, 1.0, 0.0}));
  auto pair = preference_pair(s);
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->chosen, "A great kettle.");
  EXPECT_EQ(pair->rejected, "Mugs.");  // the last of the lowest
  EXPECT_EQ(pair->chosen_score, 1.0);

  ScoredCandidates first_max{"t", {"a", "b", "c"}, {0.7, 0.7, 0.1}};
  EXPECT_EQ(preference_pair(first_max)->chosen, "a");
  // D7: ties and single candidates give no pair.
  EXPECT_FALSE(preference_pair(ScoredCandidates{"t", {"a", "b"}, {0.5, 0.5}}));
  EXPECT_FALSE(preference_pair(ScoredCandidates{"t", {"a"}, {0.9}}));
  EXPECT_FALSE(preference_pair(ScoredCandidates{}));
}

TEST(PumaScoring, FastTestExactFunctionsOnly) {
  World w;
  std::vector<const data::Task*> tasks = {&task(0), &task(1), &task(2), &task(3)};
  std::map<std::string, std::string, std::less<>> functions = {
      {task(0).instruction, " search_product_by_query\n"},
      {task(1).instruction, "get_recommendations_by_history"},
      {task(2).instruction, "add_review"},  // D3: not review, a wrong function
  };
  std::map<std::string, std::string, std::less<>> params = {
      {task(0).instruction, "red kettle"},
      {task(1).instruction, "B0SHIRT001"},
      {task(2).instruction, "A great kettle."},
      {task(3).instruction, "kettle"},  // no function predicted: 0
  };
  FastTestResult r = fast_test(w.env, tasks, functions, params);
  EXPECT_EQ(r.overall.total, 4);
  EXPECT_DOUBLE_EQ(r.overall.function_acc, 0.5);
  EXPECT_DOUBLE_EQ(r.overall.result_acc, (0.5 + 1.0) / 4);
  EXPECT_EQ(r.by_type["search"].total, 2);
  EXPECT_DOUBLE_EQ(r.by_type["search"].function_acc, 0.5);
  EXPECT_DOUBLE_EQ(r.by_type["search"].result_acc, 0.25);
  EXPECT_DOUBLE_EQ(r.by_type["review"].function_acc, 0.0);
  std::string table = r.table();
  EXPECT_NE(table.find("Tool Accuracy Avg"), std::string::npos);
  EXPECT_NE(table.find("overall         4             0.5000      0.3750"), std::string::npos) << table;
}

}  // namespace
}  // namespace pwab::puma
