// src/serve/reward.h: `POST /v1/reward`: the benchmark's reward of finished single-turn rollouts, with no episode.
//
// An RL engine that samples a whole single-turn answer (a function and its parameter) needs only its reward. The
// endpoint takes, per rollout, a task and either the function and parameter or the raw completion text, and
// answers function and result accuracy exactly as `pwab puma fast-test` scores them (F = 1 iff the function is
// the task's own tool; R = the parameter executed with it: the target's rank score for search and
// recommendation, the similarity with the true review for review; a malformed parameter scores 0):
//   {"task": "test/17", "function": "search_product_by_query", "parameter": "wireless earbuds"}
//   {"task": "test/17", "completion": "search_product_by_query\n### Tool Parameter:\nwireless earbuds"}
//   -> {"task", "function", "parameter", "function_acc", "result_acc", "reward"}      (reward = result_acc)
// A JSON array of such objects is a batch, answered by an array in the same order; an item that cannot be scored
// (an unknown task, a missing field) is {"task", "error": {"code", "message"}} there and the others are scored. A
// single request for an unknown task is a 404 unknown_task.
// OpenRLHF's remote reward model posts {"query": [prompt + response], "prompts": [prompt], "labels": [label]}
// (openrlhf/utils/agent.py); with the label the task key, the response (the query after its prompt) is scored
// as a completion and the answer is {"rewards": [...], "scores": [...] (the same, clamped to [0, 1] for OpenRLHF's
// dynamic filtering), "extra_logs": {"function_acc": [...], "result_acc": [...]}}. How a completion is read is puma::parse_completion (scoring.h); the scoring itself lives
// above this layer and is handed in as RewardFunctions.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "data/dataset.h"

namespace pwab::serve {

struct RolloutScore {
  std::string function;   //!< as read from the rollout
  std::string parameter;  //!< as read from the rollout
  double function_acc = 0;
  double result_acc = 0;
};

//! How rollouts are read and scored (puma/scoring.h supplies the benchmark's own).
struct RewardFunctions {
  //! A function and parameter as a model wrote them (each cleaned as the puma agent cleans its completions).
  std::function<RolloutScore(const data::Task&, std::string_view function, std::string_view parameter)> score;
  //! One completion text holding both.
  std::function<RolloutScore(const data::Task&, std::string_view completion)> score_completion;
  explicit operator bool() const { return score && score_completion; }
};

class RewardEndpoint {
 public:
  //! Both must outlive the endpoint.
  RewardEndpoint(const data::Dataset& dataset, RewardFunctions functions);
  //! The answer to a request body (one object, an array, or OpenRLHF's shape). Throws RequestError for a
  //! malformed request or, for a single rollout, an unknown task.
  nlohmann::json answer(const nlohmann::json& body) const;
  //! Rollouts in a body (1 for an object), to decide where to run it.
  static std::size_t size_of(const nlohmann::json& body);

 private:
  nlohmann::json score_one(const nlohmann::json& item) const;
  nlohmann::json openrlhf(const nlohmann::json& body) const;

  const data::Dataset& dataset_;
  RewardFunctions functions_;
};

}  // namespace pwab::serve
