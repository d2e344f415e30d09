// Scoring generated parameters in the environment: each task type, outputs that are no task call, candidate
// deduplication, preference pairs with D7's tie rule and the fast test with D3's exact function names
// (docs/decisions.md).
#include "puma/scoring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agents/fc_test_util.h"
#include "agents/puma_prompt.h"
#include "core/error.h"
#include "core/sys.h"
#include "support/test_support.h"

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
  // Numbers name the visible history, newest first, as in the agent (agents::puma_action).
  const std::vector<std::string> refs = agents::puma_references(ds(), task(1));
  auto number = [&](std::string_view asin) {
    return std::to_string(std::find(refs.begin(), refs.end(), asin) - refs.begin() + 1);
  };
  ASSERT_LT(std::stoul(number("B0SHIRT001")), refs.size() + 1);
  EXPECT_DOUBLE_EQ(score_parameter(w.env, task(1), data::TaskType::kRecommend,
                                   number("B0KETTLE01") + ", " + number("B0SHIRT001")),
                   1.0);
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
  // docs/decisions.md D7: ties and single candidates give no pair.
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
      {task(2).instruction, "add_review"},  // docs/decisions.md D3: not review, a wrong function
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

TEST(PumaScoring, FastTestOnCandidateListsKeepsWhatTestPyKeeps) {
  World w;
  std::vector<const data::Task*> tasks = {&task(0), &task(2)};
  Predictions functions = {{task(0).instruction, {"search_product_by_query", "add_product_review"}},
                           {task(2).instruction, {"add_product_review"}}};
  // search: the last candidate that found the target (a trailing miss does not erase it); review: the last
  // candidate's similarity, not the best one.
  Predictions params = {{task(0).instruction, {"red kettle", "Say: which colour?"}},
                        {task(2).instruction, {"A great kettle.", "Nice socks."}}};
  FastTestResult r = fast_test_candidates(w.env, tasks, functions, params);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].task, "test/0");
  EXPECT_EQ(r.tasks[0].function, "search_product_by_query");  // the first function counts
  EXPECT_DOUBLE_EQ(r.tasks[0].r, 0.5);
  EXPECT_DOUBLE_EQ(r.tasks[1].f, 1.0);
  EXPECT_DOUBLE_EQ(r.tasks[1].r, 0.0);
  EXPECT_DOUBLE_EQ(r.overall.result_acc, 0.25);

  // test.py's DPO mode: every candidate with the true type's scorer, equal strings collapsed.
  Predictions dpo = {{task(2).instruction, {"A great kettle.", "Nice socks.", "A great kettle."}}};
  auto scored = nlohmann::json::parse(score_all_candidates_json(w.env, tasks, dpo));
  EXPECT_EQ(scored[task(2).instruction].size(), 2u);
  EXPECT_DOUBLE_EQ(scored[task(2).instruction]["A great kettle."].get<double>(), 1.0);
}

TEST(PumaScoring, PredictionFilesInTheOriginalsLayout) {
  pwab::test::TempDir dir;
  write_file_atomic(dir / "p.json", R"({"find a kettle": ["red kettle", "kettle"], "review it": "Great."})");
  Predictions p = read_predictions(dir / "p.json");
  EXPECT_EQ(p["find a kettle"], (std::vector<std::string>{"red kettle", "kettle"}));
  EXPECT_EQ(p["review it"], (std::vector<std::string>{"Great."}));
  write_file_atomic(dir / "bad.json", R"({"find a kettle": [1, 2]})");
  try {
    read_predictions(dir / "bad.json");
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("find a kettle"), std::string::npos) << e.what();
  }
  write_file_atomic(dir / "list.json", R"(["not", "an object"])");
  EXPECT_THROW(read_predictions(dir / "list.json"), DataError);
  EXPECT_THROW(read_predictions(dir / "missing.json"), Error);
}

}  // namespace
}  // namespace pwab::puma
