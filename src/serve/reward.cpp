// The reward endpoint: requests read and checked here, rollouts scored by the functions handed in (reward.h).
#include "serve/reward.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "serve/episode_service.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

RequestError bad(const std::string& message) { return RequestError(400, "bad_request", message); }

const std::string* string_field(const Json& item, const char* key) {
  auto it = item.find(key);
  if (it == item.end() || it->is_null()) return nullptr;
  if (!it->is_string())
    throw bad(fmt::format("reward: '{}' must be a string{}, got {}", key,
                          std::string_view(key) == "parameter" ? " or an array of ASIN strings" : "", it->type_name()));
  return it->get_ptr<const std::string*>();
}

Json score_json(const std::string& task, const RolloutScore& s) {
  return {{"task", task},
          {"function", s.function},
          {"parameter", s.parameter},
          {"function_acc", s.function_acc},
          {"result_acc", s.result_acc},
          {"reward", s.result_acc}};
}

bool is_openrlhf(const Json& body) { return body.is_object() && body.contains("query"); }

//! The response of an OpenRLHF query: the text after its prompt (the decoded prompt tokens may differ from the
//! prompt by a leading BOS, so the prompt's last occurrence counts), with end-of-sequence tokens cut off.
std::string response_of(std::string_view query, std::string_view prompt) {
  if (!prompt.empty()) {
    auto at = query.rfind(prompt);
    if (at != std::string_view::npos) query.remove_prefix(at + prompt.size());
  }
  for (bool cut = true; cut;) {
    cut = false;
    while (!query.empty() && (query.back() == ' ' || query.back() == '\n' || query.back() == '\r' || query.back() == '\t'))
      query.remove_suffix(1);
    for (std::string_view eos : {"</s>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<eos>"})
      if (query.size() >= eos.size() && query.substr(query.size() - eos.size()) == eos) {
        query.remove_suffix(eos.size());
        cut = true;
      }
  }
  return std::string(query);
}

}  // namespace

RewardEndpoint::RewardEndpoint(const data::Dataset& dataset, RewardFunctions functions)
    : dataset_(dataset), functions_(std::move(functions)) {}

std::size_t RewardEndpoint::size_of(const Json& body) {
  if (body.is_array()) return body.size();
  if (is_openrlhf(body) && body["query"].is_array()) return body["query"].size();
  return 1;
}

Json RewardEndpoint::score_one(const Json& item) const {
  if (!item.is_object()) throw bad(fmt::format("reward: a rollout is a JSON object, got {}", item.type_name()));
  for (const auto& [key, value] : item.items())
    if (key != "task" && key != "function" && key != "parameter" && key != "completion")
      throw bad(fmt::format("reward: unknown field '{}' (known: task, function, parameter, completion)", key));
  const std::string* key = string_field(item, "task");
  if (!key) throw bad("reward: 'task' is required (\"test/17\")");
  const data::Task& task = find_task(dataset_, *key);
  const std::string* completion = string_field(item, "completion");
  const std::string* function = string_field(item, "function");
  // The parameter is text, or, as a tool call of get_recommendations_by_history carries its product_sequence, a
  // JSON array of ASINs: joined with ", ", the form the puma agent's completions give it (puma::parse_completion).
  std::string joined;
  const std::string* parameter = nullptr;
  if (auto p = item.find("parameter"); p != item.end() && p->is_array()) {
    for (const Json& asin : *p) {
      if (!asin.is_string())
        throw bad(fmt::format("reward: 'parameter' as an array holds ASIN strings, got an element of type {}",
                              asin.type_name()));
      if (!joined.empty()) joined += ", ";
      joined += asin.get_ref<const std::string&>();
    }
    parameter = &joined;
  } else {
    parameter = string_field(item, "parameter");
  }
  if (completion && (function || parameter))
    throw bad("reward: give either 'completion' or 'function' and 'parameter', not both");
  if (completion) return score_json(*key, functions_.score_completion(task, *completion));
  if (!function || !parameter)
    throw bad("reward: give 'function' and 'parameter' (or the raw 'completion' text)");
  return score_json(*key, functions_.score(task, *function, *parameter));
}

Json RewardEndpoint::openrlhf(const Json& body) const {
  for (const auto& [key, value] : body.items())
    if (key != "query" && key != "prompts" && key != "labels")
      throw bad(fmt::format("reward: unknown field '{}' in OpenRLHF's request (query, prompts, labels)", key));
  const Json& queries = body["query"];
  const Json prompts = body.value("prompts", Json::array());
  const Json labels = body.value("labels", Json());
  if (!queries.is_array() || !prompts.is_array() || !labels.is_array())
    throw bad("reward: OpenRLHF's request has arrays 'query', 'prompts' and 'labels'");
  if (labels.size() != queries.size() || (!prompts.empty() && prompts.size() != queries.size()))
    throw bad(fmt::format("reward: {} queries, {} prompts and {} labels; each query needs its prompt and its label "
                          "(the task key, e.g. \"train/17\": `python3 -m pwab.rl.dataset` writes such rows)",
                          queries.size(), prompts.size(), labels.size()));
  Json rewards = Json::array(), scores = Json::array(), function_acc = Json::array(), result_acc = Json::array();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    if (!queries[i].is_string() || !labels[i].is_string() || (!prompts.empty() && !prompts[i].is_string()))
      throw bad(fmt::format("reward: query, prompt and label {} must be strings", i));
    const data::Task& task = find_task(dataset_, labels[i].get<std::string>());
    std::string response = response_of(queries[i].get<std::string>(), prompts.empty() ? "" : prompts[i].get<std::string>());
    RolloutScore s = functions_.score_completion(task, response);
    rewards.push_back(s.result_acc);
    // OpenRLHF filters groups on scores in [0, 1]; a review's similarity can dip just below 0.
    scores.push_back(std::clamp(s.result_acc, 0.0, 1.0));
    function_acc.push_back(s.function_acc);
    result_acc.push_back(s.result_acc);
  }
  return {{"rewards", std::move(rewards)},
          {"scores", std::move(scores)},
          {"extra_logs", {{"function_acc", std::move(function_acc)}, {"result_acc", std::move(result_acc)}}}};
}

Json RewardEndpoint::answer(const Json& body) const {
  if (is_openrlhf(body)) return openrlhf(body);
  if (!body.is_array()) return score_one(body);
  Json out = Json::array();
  for (const Json& item : body) {
    try {
      out.push_back(score_one(item));
    } catch (const RequestError& e) {
      Json failed = {{"error", {{"code", e.code}, {"message", e.what()}}}};
      if (item.is_object() && item.contains("task")) failed["task"] = item["task"];
      out.push_back(std::move(failed));
    }
  }
  return out;
}

}  // namespace pwab::serve
