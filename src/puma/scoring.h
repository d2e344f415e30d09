// src/puma/scoring.h: scoring generated parameters by executing them in the environment (reference §3.5, §5.5;
// decisions D2, D3, D7): the offline "fast test" of a PUMA model and the DPO candidate scores and pairs.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "env/environment.h"

namespace pwab::puma {

//! Result accuracy of `parameter` executed as a call of `type`'s task function for `task`: the rank score of the
//! target for search (the text is the query) and recommendation (split on ',', trimmed, order and duplicates
//! kept, D2), the similarity with the true review for review. An error output scores 0.
double score_parameter(const env::Environment& env, const data::Task& task, data::TaskType type,
                       std::string_view parameter);

//! One task's candidates, deduplicated (first occurrence kept, as the original's dict collapses equal strings),
//! with their scores in that order.
struct ScoredCandidates {
  std::string task;
  std::vector<std::string> candidates;
  std::vector<double> scores;
};
//! Scores every candidate with the scorer of the task's true type (§3.5 DPO mode: no function check).
ScoredCandidates score_candidates(const env::Environment& env, const data::Task& task,
                                  const std::vector<std::string>& candidates);

//! A DPO preference pair.
struct PreferencePair {
  std::string chosen, rejected;
  double chosen_score = 0, rejected_score = 0;
};
//! §5.5 with D7: chosen = the first candidate with the highest score, rejected = the last with the lowest; none
//! when they tie (one candidate, or all scores equal).
std::optional<PreferencePair> preference_pair(const ScoredCandidates& scored);

//! The fast test's per-type and overall averages (the original's table: Total, Tool Accuracy Avg, Result Avg).
struct FastTestRow {
  int total = 0;
  double function_acc = 0;
  double result_acc = 0;
};
struct FastTestResult {
  std::map<std::string, FastTestRow> by_type;  //!< "search", "recommend", "review"
  FastTestRow overall;
  //! The original's grid as text.
  std::string table() const;
};

//! The offline fast test (§3.5, D3): for each task, the predicted function (F = 1 iff it is exactly the true
//! type's tool, trimmed; anything else F = R = 0) and its parameter, scored by score_parameter. A task missing
//! from `functions` or `parameters` scores 0.
FastTestResult fast_test(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                         const std::map<std::string, std::string, std::less<>>& functions,
                         const std::map<std::string, std::string, std::less<>>& parameters);

}  // namespace pwab::puma
