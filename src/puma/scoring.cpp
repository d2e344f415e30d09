#include "puma/scoring.h"
#include "core/json_depth.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "agents/puma_prompt.h"
#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "env/tools.h"
#include "runner/results.h"

namespace pwab::puma {

const data::Task& task_of_key(const data::Dataset& ds, const std::string& key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string::npos) throw DataError("not a task key: '" + key + "'");
  const std::string split = key.substr(0, slash);
  const auto& tasks = ds.tasks(split == "train" ? data::Split::kTrain : data::Split::kTest);
  const std::string digits = key.substr(slash + 1);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos ||
      (split != "train" && split != "test"))
    throw DataError("not a task key: '" + key + "'");
  const std::size_t index = std::stoul(digits);
  if (index >= tasks.size()) throw DataError("task key '" + key + "' is past the dataset's tasks");
  return tasks[index];
}

double score_parameter(const env::Environment& env, const data::Task& task, data::TaskType type,
                       std::string_view parameter) {
  // The same mapping as the runtime agent (a "Say:" or "stop" output is no task call: 0).
  // Numbers name the visible history, newest first (agents::puma_action), as in the agent.
  env::Action action =
      agents::puma_action(parameter, env::task_function(type), agents::puma_references(env.dataset(), task, type));
  if (!env::task_type_of_function(action.name)) return 0.0;
  env::ToolOutput output = env.call_tool(action.name, action.arguments_json);
  return env::score_attempt(env.dataset(), task, action.name, output, env.embedder()).result_acc;
}

RolloutReward rollout_reward(const env::Environment& env, const data::Task& task, std::string_view function,
                             std::string_view parameter) {
  RolloutReward out;
  out.function = agents::puma_function_from_completion(function);
  out.parameter = agents::puma_generated_part(parameter, "### Tool Parameter:\n");
  if (env::task_type_of_function(out.function) != task.type) return out;  // docs/decisions.md D3: only the exact tool
  out.function_acc = 1;
  out.result_acc = score_parameter(env, task, task.type, out.parameter);
  return out;
}

RolloutReward completion_reward(const env::Environment& env, const data::Task& task, std::string_view completion) {
  auto [function, parameter] = parse_completion(completion);
  return rollout_reward(env, task, function, parameter);
}

ScoredCandidates score_candidates(const env::Environment& env, const data::Task& task,
                                  const std::vector<std::string>& candidates) {
  ScoredCandidates out;
  out.task = runner::task_key(task);
  std::set<std::string, std::less<>> seen;
  for (const std::string& c : candidates) {
    if (!seen.insert(c).second) continue;
    out.candidates.push_back(c);
    out.scores.push_back(score_parameter(env, task, task.type, c));
  }
  return out;
}

std::optional<PreferencePair> preference_pair(const ScoredCandidates& scored) {
  if (scored.candidates.empty()) return std::nullopt;
  std::size_t best = 0, worst = 0;
  for (std::size_t i = 1; i < scored.scores.size(); ++i) {
    if (scored.scores[i] > scored.scores[best]) best = i;    // the first of the highest
    if (scored.scores[i] <= scored.scores[worst]) worst = i;  // the last of the lowest
  }
  if (scored.scores[best] == scored.scores[worst]) return std::nullopt;  // docs/decisions.md D7: ties give no pair
  return PreferencePair{scored.candidates[best], scored.candidates[worst], scored.scores[best], scored.scores[worst]};
}

std::string FastTestResult::table() const {
  std::string out = fmt::format("{:<10} {:>6} {:>18} {:>11}\n", "Task Type", "Total", "Tool Accuracy Avg",
                                "Result Avg");
  auto row = [&](std::string_view name, const FastTestRow& r) {
    out += fmt::format("{:<10} {:>6} {:>18.4f} {:>11.4f}\n", name, r.total, r.function_acc, r.result_acc);
  };
  for (const char* type : {"search", "recommend", "review"}) {
    auto it = by_type.find(type);
    row(type, it == by_type.end() ? FastTestRow{} : it->second);
  }
  row("overall", overall);
  return out;
}

FastTestResult FastTestResult::from_tasks(std::vector<FastTestTask> tasks) {
  FastTestResult result;
  std::map<std::string, std::pair<double, double>> sums;
  double f_all = 0, r_all = 0;
  for (const FastTestTask& t : tasks) {
    std::string type(data::to_string(t.type));
    ++result.by_type[type].total;
    ++result.overall.total;
    sums[type].first += t.f;
    sums[type].second += t.r;
    f_all += t.f;
    r_all += t.r;
  }
  for (auto& [type, row] : result.by_type) {
    row.function_acc = row.total ? sums[type].first / row.total : 0;
    row.result_acc = row.total ? sums[type].second / row.total : 0;
  }
  if (result.overall.total) {
    result.overall.function_acc = f_all / result.overall.total;
    result.overall.result_acc = r_all / result.overall.total;
  }
  result.tasks = std::move(tasks);
  return result;
}

FastTestResult fast_test(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                         const std::map<std::string, std::string, std::less<>>& functions,
                         const std::map<std::string, std::string, std::less<>>& parameters) {
  Predictions fn, params;
  for (const auto& [k, v] : functions) fn[k] = {v};
  for (const auto& [k, v] : parameters) params[k] = {v};
  return fast_test_candidates(env, tasks, fn, params);
}

FastTestResult fast_test_candidates(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                                    const Predictions& functions, const Predictions& parameters) {
  std::vector<FastTestTask> scored;
  for (const data::Task* task : tasks) {
    FastTestTask t{runner::task_key(*task), task->type, "", 0, 0};
    auto fn = functions.find(task->instruction);
    auto param = parameters.find(task->instruction);
    if (fn != functions.end() && !fn->second.empty()) t.function = std::string(trim(fn->second.front()));
    if (fn != functions.end() && param != parameters.end() && !fn->second.empty() &&
        env::task_type_of_function(t.function) == task->type) {  // docs/decisions.md D3: only the exact tool
      t.f = 1;
      for (const std::string& candidate : param->second) {
        double r = score_parameter(env, *task, task->type, candidate);
        if (task->type == data::TaskType::kReview || r > 0) t.r = r;  // test.py: the last that found the target
      }
    }
    scored.push_back(std::move(t));
  }
  return FastTestResult::from_tasks(std::move(scored));
}

Predictions read_predictions(const std::filesystem::path& file) {
  const std::string text = read_file(file);
  nlohmann::json j = parse_json_or_discarded(text);
  if (j.is_discarded()) throw DataError(file.string() + ": not JSON");
  if (!j.is_object())
    throw DataError(file.string() + ": expected an object {instruction: text or [text, ...]} (the original's "
                    "functions / params file)");
  Predictions out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::vector<std::string>& texts = out[it.key()];
    if (it->is_string()) {
      texts.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const auto& v : *it) {
        if (!v.is_string())
          throw DataError(file.string() + ": the predictions of instruction '" + it.key().substr(0, 60) +
                          "' hold a non-string " + std::string(v.type_name()));
        texts.push_back(v.get<std::string>());
      }
    } else {
      throw DataError(file.string() + ": instruction '" + it.key().substr(0, 60) + "' maps to a " +
                      std::string(it->type_name()) + ", expected a string or a list of strings");
    }
  }
  return out;
}

std::string score_all_candidates_json(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                                      const Predictions& parameters) {
  nlohmann::json out = nlohmann::json::object();
  for (const data::Task* task : tasks) {
    auto it = parameters.find(task->instruction);
    if (it == parameters.end()) continue;
    nlohmann::json scores = nlohmann::json::object();
    for (const std::string& c : it->second) scores[c] = score_parameter(env, *task, task->type, c);
    out[task->instruction] = std::move(scores);
  }
  return out.dump(2) + "\n";
}

}  // namespace pwab::puma
