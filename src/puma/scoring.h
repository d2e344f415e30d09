// src/puma/scoring.h: scoring generated parameters by executing them in the environment (docs/decisions.md §3.5, §5.5;
// decisions D2, D3, D7): the offline "fast test" of a PUMA model and the DPO candidate scores and pairs.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "env/environment.h"

namespace pwab::puma {

//! The task a key such as "train/12" (data::task_key) names; DataError for a malformed key or one past the tasks.
const data::Task& task_of_key(const data::Dataset& ds, const std::string& key);

//! Result accuracy of `parameter` executed as a call of `type`'s task function for `task`: the rank score of the
//! target for search (the text is the query) and recommendation (split on ',', trimmed, order and duplicates
//! kept, docs/decisions.md D2; numbers name the visible history as agents::puma_action says), the similarity with the true review for review. An error output scores 0.
double score_parameter(const env::Environment& env, const data::Task& task, data::TaskType type,
                       std::string_view parameter);

//! A single-turn rollout's function and parameter, as read from what a model wrote, and their scores.
struct RolloutReward {
  std::string function;
  std::string parameter;
  double function_acc = 0;  //!< 1 iff `function` is exactly the task's own tool
  double result_acc = 0;    //!< score_parameter with the task's tool when the function is right, else 0
};

//! The fast test's score of one rollout (docs/decisions.md D3): the function cleaned as puma_function_from_completion
//! cleans a function completion (its first line after an echoed "### Tool:\n", trimmed), the parameter as
//! puma_generated_part does (after an echoed "### Tool Parameter:\n", trimmed).
RolloutReward rollout_reward(const env::Environment& env, const data::Task& task, std::string_view function,
                             std::string_view parameter);

//! The function and parameter one completion text holds: a Hermes-style tool call (`<tool_call>{"name",
//! "arguments"}</tool_call>`, or that JSON object alone) names the function and carries the parameter in its
//! arguments (query; product_sequence, a list joined with ", "; review); otherwise the function is the first line
//! after the last "### Tool:\n" (or, when the text holds none, its first line) and the parameter the text after
//! the last "### Tool Parameter:\n" (or, when it holds none, everything after the function's line).
std::pair<std::string, std::string> parse_completion(std::string_view completion);

//! rollout_reward of parse_completion(completion).
RolloutReward completion_reward(const env::Environment& env, const data::Task& task, std::string_view completion);

//! One task's candidates, deduplicated (first occurrence kept, as the original's dict collapses equal strings),
//! with their scores in that order.
struct ScoredCandidates {
  std::string task;
  std::vector<std::string> candidates;
  std::vector<double> scores;
};
//! Scores every candidate with the scorer of the task's true type (docs/decisions.md §3.5 DPO mode: no function check).
ScoredCandidates score_candidates(const env::Environment& env, const data::Task& task,
                                  const std::vector<std::string>& candidates);

//! A DPO preference pair.
struct PreferencePair {
  std::string chosen, rejected;
  double chosen_score = 0, rejected_score = 0;
};
//! docs/decisions.md §5.5 with D7: chosen = the first candidate with the highest score, rejected = the last with the
//! lowest; none when they tie (one candidate, or all scores equal).
std::optional<PreferencePair> preference_pair(const ScoredCandidates& scored);

//! The fast test's per-type and overall averages (the original's table: Total, Tool Accuracy Avg, Result Avg).
struct FastTestRow {
  int total = 0;
  double function_acc = 0;
  double result_acc = 0;
};
//! One task of a fast test.
struct FastTestTask {
  std::string task;  //!< runner::task_key
  data::TaskType type = data::TaskType::kSearch;
  std::string function;  //!< the predicted function ("" when the task had no prediction)
  double f = 0, r = 0;
};
struct FastTestResult {
  std::map<std::string, FastTestRow> by_type;  //!< "search", "recommend", "review"
  FastTestRow overall;
  std::vector<FastTestTask> tasks;  //!< per task, in the order given
  //! The original's grid as text.
  std::string table() const;
  //! The rows recomputed from `tasks`.
  static FastTestResult from_tasks(std::vector<FastTestTask> tasks);
};

//! Predictions in the original's layout, by instruction: `{instruction: text}` or `{instruction: [text, ...]}`.
using Predictions = std::map<std::string, std::vector<std::string>, std::less<>>;
//! Reads a functions or params file of the original (test_llama.py's output). DataError naming the file and the
//! instruction for anything else.
Predictions read_predictions(const std::filesystem::path& file);

//! The offline fast test (docs/decisions.md §3.5, D3): for each task, the predicted function (F = 1 iff it is exactly
//! the true type's tool, trimmed; anything else F = R = 0) and its parameter, scored by score_parameter. A task missing
//! from `functions` or `parameters` scores 0.
FastTestResult fast_test(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                         const std::map<std::string, std::string, std::less<>>& functions,
                         const std::map<std::string, std::string, std::less<>>& parameters);

//! The original test.py on candidate lists (docs/decisions.md §3.5): the first function of each task; with several
//! parameter candidates the score kept is the last candidate's that found the target (search, recommendation) or the
//! last candidate's similarity (review), as test.py keeps them, not the best.
FastTestResult fast_test_candidates(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                                    const Predictions& functions, const Predictions& parameters);

//! test.py's DPO mode (docs/decisions.md §3.5): every candidate of every task scored with the task's true type, no
//! function check: {instruction: {candidate: score}} as JSON text (equal candidates collapse, as in the original).
std::string score_all_candidates_json(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                                      const Predictions& parameters);

}  // namespace pwab::puma
