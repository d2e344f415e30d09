#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "metrics/metrics.h"

namespace pwab::metrics {
namespace {

using data::TaskType;

// A small hand-made summary, so the goldens do not depend on the bootstrap draws. It has a negative review
// R (cosine similarity can be negative) and a value that rounds (0.2985 -> 0.298 in the table).
Summary small_summary() {
  Summary s;
  s.by_type[type_index(TaskType::kSearch)] = {4, 10, {0.75, 0.5, 1.0}, {0.647, 0.61, 0.68}, {2.5, 2.0, 3.0}};
  s.by_type[type_index(TaskType::kRecommend)] = {2, 6, {0.5, 0.0, 1.0}, {0.025, 0.0, 0.05}, {3.0, 3.0, 3.0}};
  s.by_type[type_index(TaskType::kReview)] = {2, 4, {1.0, 1.0, 1.0}, {-0.125, -0.25, 0.0}, {2.0, 2.0, 2.0}};
  s.overall = {8, 20, {0.75, 0.5, 1.0}, {0.2985, 0.2, 0.4}, {2.5, 2.125, 2.875}};
  s.bootstrap = {.resamples = 1000, .confidence = 0.95, .seed = 1};
  return s;
}

TEST(Format, TableMultiTurn) {
  EXPECT_EQ(format_table(small_summary(), "No Memory"), R"golden(Method    | Search                                                     | Recommendation                                             | Review                                                       | Overall
          | Function Acc        Res Acc             Avg. Steps         | Function Acc        Res Acc             Avg. Steps         | Function Acc        Res Acc               Avg. Steps         | Function Acc        Res Acc             Avg. Steps
No Memory | 0.750 [0.50, 1.00]  0.647 [0.61, 0.68]  2.500 [2.00, 3.00] | 0.500 [0.00, 1.00]  0.025 [0.00, 0.05]  3.000 [3.00, 3.00] | 1.000 [1.00, 1.00]  -0.125 [-0.25, 0.00]  2.000 [2.00, 2.00] | 0.750 [0.50, 1.00]  0.298 [0.20, 0.40]  2.500 [2.12, 2.88]
Tasks     | n = 4                                                      | n = 2                                                      | n = 2                                                        | n = 8
Cells: value [95% CI], percentile bootstrap over tasks (1000 resamples, seed 1).
)golden");
}

TEST(Format, TableSingleTurnHasNoSteps) {
  EXPECT_EQ(format_table(small_summary(), "X", data::Track::kSingleTurn), R"golden(Method | Search                                 | Recommendation                         | Review                                   | Overall
       | Function Acc        Res Acc            | Function Acc        Res Acc            | Function Acc        Res Acc              | Function Acc        Res Acc
X      | 0.750 [0.50, 1.00]  0.647 [0.61, 0.68] | 0.500 [0.00, 1.00]  0.025 [0.00, 0.05] | 1.000 [1.00, 1.00]  -0.125 [-0.25, 0.00] | 0.750 [0.50, 1.00]  0.298 [0.20, 0.40]
Tasks  | n = 4                                  | n = 2                                  | n = 2                                    | n = 8
Cells: value [95% CI], percentile bootstrap over tasks (1000 resamples, seed 1).
)golden");
}

TEST(Format, MarkdownMultiTurn) {
  EXPECT_EQ(format_markdown(small_summary(), "No Memory"), R"golden(| Method | Search Function Acc | Search Res Acc | Search Avg. Steps | Recommendation Function Acc | Recommendation Res Acc | Recommendation Avg. Steps | Review Function Acc | Review Res Acc | Review Avg. Steps | Overall Function Acc | Overall Res Acc | Overall Avg. Steps |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| No Memory | 0.750 [0.50, 1.00] | 0.647 [0.61, 0.68] | 2.500 [2.00, 3.00] | 0.500 [0.00, 1.00] | 0.025 [0.00, 0.05] | 3.000 [3.00, 3.00] | 1.000 [1.00, 1.00] | -0.125 [-0.25, 0.00] | 2.000 [2.00, 2.00] | 0.750 [0.50, 1.00] | 0.298 [0.20, 0.40] | 2.500 [2.12, 2.88] |

Tasks: search 4, recommendation 2, review 2, overall 8. Cells: value [95% CI], percentile bootstrap over tasks (1000 resamples, seed 1).
)golden");
}

TEST(Format, MarkdownSingleTurnEscapesPipes) {
  EXPECT_EQ(format_markdown(small_summary(), "a|b", data::Track::kSingleTurn), R"golden(| Method | Search Function Acc | Search Res Acc | Recommendation Function Acc | Recommendation Res Acc | Review Function Acc | Review Res Acc | Overall Function Acc | Overall Res Acc |
|---|---|---|---|---|---|---|---|---|
| a\|b | 0.750 [0.50, 1.00] | 0.647 [0.61, 0.68] | 0.500 [0.00, 1.00] | 0.025 [0.00, 0.05] | 1.000 [1.00, 1.00] | -0.125 [-0.25, 0.00] | 0.750 [0.50, 1.00] | 0.298 [0.20, 0.40] |

Tasks: search 4, recommendation 2, review 2, overall 8. Cells: value [95% CI], percentile bootstrap over tasks (1000 resamples, seed 1).
)golden");
}

TEST(Format, Csv) {
  EXPECT_EQ(format_csv(small_summary()), R"golden(group,metric,value,ci_low,ci_high,n_tasks
search,f_acc,0.75,0.5,1,4
search,r_acc,0.647,0.61,0.68,4
search,avg_steps,2.5,2,3,4
recommend,f_acc,0.5,0,1,2
recommend,r_acc,0.025,0,0.05,2
recommend,avg_steps,3,3,3,2
review,f_acc,1,1,1,2
review,r_acc,-0.125,-0.25,0,2
review,avg_steps,2,2,2,2
overall,f_acc,0.75,0.5,1,8
overall,r_acc,0.2985,0.2,0.4,8
overall,avg_steps,2.5,2.125,2.875,8
)golden");
}

TEST(Format, Json) {
  std::string json = format_json(small_summary());
  EXPECT_EQ(json, R"golden({
  "bootstrap": {
    "method": "percentile",
    "resamples": 1000,
    "confidence": 0.95,
    "seed": 1
  },
  "groups": {
    "search": {
      "n_tasks": 4,
      "total_steps": 10,
      "f_acc": {
        "value": 0.75,
        "ci_low": 0.5,
        "ci_high": 1.0
      },
      "r_acc": {
        "value": 0.647,
        "ci_low": 0.61,
        "ci_high": 0.68
      },
      "avg_steps": {
        "value": 2.5,
        "ci_low": 2.0,
        "ci_high": 3.0
      }
    },
    "recommend": {
      "n_tasks": 2,
      "total_steps": 6,
      "f_acc": {
        "value": 0.5,
        "ci_low": 0.0,
        "ci_high": 1.0
      },
      "r_acc": {
        "value": 0.025,
        "ci_low": 0.0,
        "ci_high": 0.05
      },
      "avg_steps": {
        "value": 3.0,
        "ci_low": 3.0,
        "ci_high": 3.0
      }
    },
    "review": {
      "n_tasks": 2,
      "total_steps": 4,
      "f_acc": {
        "value": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.0
      },
      "r_acc": {
        "value": -0.125,
        "ci_low": -0.25,
        "ci_high": 0.0
      },
      "avg_steps": {
        "value": 2.0,
        "ci_low": 2.0,
        "ci_high": 2.0
      }
    },
    "overall": {
      "n_tasks": 8,
      "total_steps": 20,
      "f_acc": {
        "value": 0.75,
        "ci_low": 0.5,
        "ci_high": 1.0
      },
      "r_acc": {
        "value": 0.2985,
        "ci_low": 0.2,
        "ci_high": 0.4
      },
      "avg_steps": {
        "value": 2.5,
        "ci_low": 2.125,
        "ci_high": 2.875
      }
    }
  }
}
)golden");
  auto parsed = nlohmann::json::parse(json);
  EXPECT_EQ(parsed["groups"]["overall"]["r_acc"]["value"].get<double>(), 0.2985);
}

TEST(Format, Comparison) {
  std::vector<TaskOutcome> a = {{"x", TaskType::kSearch, {{1, 0.5}}, 2}, {"y", TaskType::kSearch, {}, 2},
                                {"z", TaskType::kReview, {{0, 0.9}}, 1}, {"only-a", TaskType::kSearch, {{1, 1}}, 1}};
  std::vector<TaskOutcome> b = {{"only-b", TaskType::kReview, {}, 1}, {"z", TaskType::kReview, {{1, 0.25}}, 3},
                                {"y", TaskType::kSearch, {{0, 1}, {1, 0.5}}, 4}, {"x", TaskType::kSearch, {{1, 1}}, 2}};
  EXPECT_EQ(format_comparison(compare(a, b, {.resamples = 200, .seed = 3}), "no-memory", "relevant"), R"golden(Paired comparison: B = relevant minus A = no-memory
Paired tasks: 3 (only in A: 1, only in B: 1, type differs: 0)
Only in A: only-a
Only in B: only-b
Cells: B - A [95% CI], percentile bootstrap over paired tasks (200 resamples, seed 3).

Group           n  Metric        no-memory  relevant  B - A
Search          2  Function Acc  0.500      1.000     +0.500 [0.00, 1.00]
Search          2  Res Acc       0.250      0.750     +0.500 [0.50, 0.50]
Search          2  Avg. Steps    2.000      3.000     +1.000 [0.00, 2.00]
Recommendation  0  Function Acc  0.000      0.000     +0.000 [0.00, 0.00]
Recommendation  0  Res Acc       0.000      0.000     +0.000 [0.00, 0.00]
Recommendation  0  Avg. Steps    0.000      0.000     +0.000 [0.00, 0.00]
Review          1  Function Acc  0.000      1.000     +1.000 [1.00, 1.00]
Review          1  Res Acc       0.000      0.250     +0.250 [0.25, 0.25]
Review          1  Avg. Steps    1.000      3.000     +2.000 [2.00, 2.00]
Overall         3  Function Acc  0.333      1.000     +0.667 [0.00, 1.00]
Overall         3  Res Acc       0.167      0.583     +0.417 [0.25, 0.50]
Overall         3  Avg. Steps    1.667      3.000     +1.333 [0.00, 2.00]
)golden");
}

}  // namespace
}  // namespace pwab::metrics
