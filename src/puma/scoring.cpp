#include "puma/scoring.h"

#include <fmt/format.h>

#include <set>

#include "agents/puma_prompt.h"
#include "core/text.h"
#include "env/tools.h"
#include "runner/results.h"

namespace pwab::puma {

double score_parameter(const env::Environment& env, const data::Task& task, data::TaskType type,
                       std::string_view parameter) {
  // The same mapping as the runtime agent (a "Say:" or "stop" output is no task call: 0).
  env::Action action = agents::puma_action(parameter, env::task_function(type));
  if (!env::task_type_of_function(action.name)) return 0.0;
  env::ToolOutput output = env.call_tool(action.name, action.arguments_json);
  return env::score_attempt(env.dataset(), task, action.name, output, env.embedder()).result_acc;
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
  if (scored.scores[best] == scored.scores[worst]) return std::nullopt;  // D7: ties give no pair
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

FastTestResult fast_test(const env::Environment& env, const std::vector<const data::Task*>& tasks,
                         const std::map<std::string, std::string, std::less<>>& functions,
                         const std::map<std::string, std::string, std::less<>>& parameters) {
  FastTestResult result;
  std::map<std::string, std::pair<double, double>> sums;
  double f_all = 0, r_all = 0;
  for (const data::Task* task : tasks) {
    std::string type(data::to_string(task->type));
    ++result.by_type[type].total;
    ++result.overall.total;
    auto fn = functions.find(task->instruction);
    auto param = parameters.find(task->instruction);
    if (fn == functions.end() || param == parameters.end()) continue;
    if (env::task_type_of_function(trim(fn->second)) != task->type) continue;  // D3: only the exact tool
    double r = score_parameter(env, *task, task->type, param->second);
    sums[type].first += 1;
    sums[type].second += r;
    f_all += 1;
    r_all += r;
  }
  for (auto& [type, row] : result.by_type) {
    row.function_acc = row.total ? sums[type].first / row.total : 0;
    row.result_acc = row.total ? sums[type].second / row.total : 0;
  }
  if (result.overall.total) {
    result.overall.function_acc = f_all / result.overall.total;
    result.overall.result_acc = r_all / result.overall.total;
  }
  return result;
}

}  // namespace pwab::puma
