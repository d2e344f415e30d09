#include "llm/ledger.h"
#include "core/json_depth.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/sys.h"
#include "core/text.h"

namespace pwab::llm {
namespace {

using nlohmann::json;

constexpr const char* kPriceUnit = "usd_per_1m_tokens";

std::string money(double usd) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "$%.6f", usd);
  return buf;
}

void add_unique(std::vector<std::string>& into, const std::vector<std::string>& from) {
  for (const std::string& m : from)
    if (std::find(into.begin(), into.end(), m) == into.end()) into.push_back(m);
  std::sort(into.begin(), into.end());
}

}  // namespace

std::string_view to_string(Role r) {
  switch (r) {
    case Role::kAgent:
      return "agent";
    case Role::kUser:
      return "user";
    case Role::kOther:
      return "other";
  }
  return "other";
}

Role parse_role(std::string_view s) {
  if (s == "agent") return Role::kAgent;
  if (s == "user") return Role::kUser;
  if (s == "other") return Role::kOther;
  throw UsageError("unknown LLM role '" + std::string(s) + "' (agent, user, other)");
}

// ---- PriceTable --------------------------------------------------------------------------------------------

PriceTable PriceTable::builtin() { return parse(builtin_price_table_json(), "built-in price table"); }

PriceTable PriceTable::load(const std::filesystem::path& file) {
  std::string text;
  try {
    text = read_file(file);
  } catch (const Error& e) {
    throw DataError(std::string("price table: ") + e.what());
  }
  PriceTable t = parse(text, file.string());
  return t;
}

PriceTable PriceTable::parse(std::string_view json_text, std::string_view source) {
  const std::string src(source);
  json j;
  if (json_nests_deeper_than(json_text)) throw DataError(src + ": " + json_depth_message());
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw DataError(src + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw DataError(src + ": the price table is not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "models") continue;
    if (k == "unit") {
      if (!it->is_string() || it->get<std::string>() != kPriceUnit)
        throw DataError(src + ": \"unit\" must be \"" + kPriceUnit + "\" (got " + it->dump() + ")");
    } else if (k == "note") {
      if (!it->is_string()) throw DataError(src + ": \"note\" must be a string");
    } else {
      throw DataError(src + ": unknown key \"" + k + "\" (expected \"models\", \"unit\", \"note\")");
    }
  }
  auto models = j.find("models");
  if (models == j.end() || !models->is_object()) throw DataError(src + ": no \"models\" object");
  PriceTable t;
  t.source_ = src;
  for (auto it = models->begin(); it != models->end(); ++it) {
    const std::string where = src + ": models[\"" + it.key() + "\"]";
    if (it.key().empty()) throw DataError(src + ": models: an empty model name");
    if (!it->is_object())
      throw DataError(where + ": expected an object {\"prompt\": <$ per 1M>, \"completion\": <$ per 1M>}, got " +
                      it->dump());
    Price p;
    for (const char* field : {"prompt", "completion"}) {
      auto v = it->find(field);
      if (v == it->end()) throw DataError(where + ": missing \"" + field + "\"");
      if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
        throw DataError(where + "." + field + ": expected a non-negative number of dollars per 1M tokens, got " +
                        v->dump());
      (std::string_view(field) == "prompt" ? p.prompt_usd_per_1m : p.completion_usd_per_1m) = v->get<double>();
    }
    for (auto f = it->begin(); f != it->end(); ++f)
      if (f.key() != "prompt" && f.key() != "completion")
        throw DataError(where + ": unknown key \"" + f.key() + "\" (expected \"prompt\", \"completion\")");
    t.entries_.emplace(it.key(), p);
  }
  return t;
}

std::optional<Price> PriceTable::find(std::string_view model) const {
  auto it = entries_.find(model);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

// ---- Usage -------------------------------------------------------------------------------------------------

std::optional<double> Usage::cost_usd() const {
  if (!priced()) return std::nullopt;
  return priced_cost_usd;
}

Usage& Usage::operator+=(const Usage& o) {
  calls += o.calls;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  cached_calls += o.cached_calls;
  cached_prompt_tokens += o.cached_prompt_tokens;
  cached_completion_tokens += o.cached_completion_tokens;
  priced_cost_usd += o.priced_cost_usd;
  add_unique(unpriced_models, o.unpriced_models);
  return *this;
}

std::string Usage::cost_text() const {
  if (priced()) return money(priced_cost_usd);
  std::string models = "unpriced (" + join(unpriced_models, ", ") + ")";
  if (priced_cost_usd > 0) return money(priced_cost_usd) + " + " + models;
  return models;
}

std::string Usage::to_json() const {
  json j = {{"calls", calls},
            {"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"cached_calls", cached_calls},
            {"cached_prompt_tokens", cached_prompt_tokens},
            {"cached_completion_tokens", cached_completion_tokens},
            {"priced_cost_usd", priced_cost_usd},
            {"unpriced_models", unpriced_models}};
  j["cost_usd"] = priced() ? json(priced_cost_usd) : json(nullptr);
  return j.dump();
}

Usage Usage::from_json(std::string_view text) {
  json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object()) throw DataError("LLM usage: not a JSON object");
  Usage u;
  auto num = [&](const char* key, int64_t& into) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number_integer()) throw DataError(std::string("LLM usage: \"") + key + "\" is not an integer");
    into = it->get<int64_t>();
  };
  num("calls", u.calls);
  num("prompt_tokens", u.prompt_tokens);
  num("completion_tokens", u.completion_tokens);
  num("cached_calls", u.cached_calls);
  num("cached_prompt_tokens", u.cached_prompt_tokens);
  num("cached_completion_tokens", u.cached_completion_tokens);
  if (auto it = j.find("priced_cost_usd"); it != j.end()) {
    if (!it->is_number()) throw DataError("LLM usage: \"priced_cost_usd\" is not a number");
    u.priced_cost_usd = it->get<double>();
  }
  if (auto it = j.find("unpriced_models"); it != j.end()) {
    if (!it->is_array()) throw DataError("LLM usage: \"unpriced_models\" is not an array");
    for (const json& m : *it) {
      if (!m.is_string()) throw DataError("LLM usage: \"unpriced_models\" holds a non-string");
      u.unpriced_models.push_back(m.get<std::string>());
    }
    std::sort(u.unpriced_models.begin(), u.unpriced_models.end());
    u.unpriced_models.erase(std::unique(u.unpriced_models.begin(), u.unpriced_models.end()), u.unpriced_models.end());
  }
  return u;
}

// ---- Ledger ------------------------------------------------------------------------------------------------

struct Ledger::Totals {
  std::unordered_map<std::string, std::array<Usage, kNumRoles>> tasks;
  std::array<Usage, kNumRoles> run;
};

Ledger::Ledger(PriceTable prices, std::optional<double> budget_usd)
    : prices_(std::move(prices)), budget_usd_(budget_usd), totals_(std::make_unique<Totals>()) {
  if (budget_usd_ && !(std::isfinite(*budget_usd_) && *budget_usd_ >= 0))
    throw UsageError("the LLM budget must be a non-negative number of dollars");
}

Ledger::~Ledger() = default;

void Ledger::record(std::string_view task_key, Role role, std::string_view model, int64_t prompt_tokens,
                    int64_t completion_tokens, bool from_cache) {
  Usage u;
  if (from_cache) {
    u.cached_calls = 1;
    u.cached_prompt_tokens = prompt_tokens;
    u.cached_completion_tokens = completion_tokens;
  } else {
    u.calls = 1;
    u.prompt_tokens = prompt_tokens;
    u.completion_tokens = completion_tokens;
    if (auto price = prices_.find(model)) {
      u.priced_cost_usd = (static_cast<double>(prompt_tokens) * price->prompt_usd_per_1m +
                           static_cast<double>(completion_tokens) * price->completion_usd_per_1m) /
                          1e6;
    } else {
      u.unpriced_models.emplace_back(model);
    }
  }
  const auto r = static_cast<std::size_t>(role);
  std::lock_guard lock(mu_);
  if (!task_key.empty()) totals_->tasks[std::string(task_key)][r] += u;
  totals_->run[r] += u;
}

void Ledger::record(std::string_view task_key, Role role, const ChatResponse& response) {
  record(task_key, role, response.model, response.prompt_tokens, response.completion_tokens, response.from_cache);
}

void Ledger::add_prior(Role role, const Usage& usage) {
  std::lock_guard lock(mu_);
  totals_->run[static_cast<std::size_t>(role)] += usage;
}

Usage Ledger::task(std::string_view task_key, Role role) const {
  std::lock_guard lock(mu_);
  auto it = totals_->tasks.find(std::string(task_key));
  if (it == totals_->tasks.end()) return {};
  return it->second[static_cast<std::size_t>(role)];
}

Usage Ledger::task_total(std::string_view task_key) const {
  Usage total;
  for (Role r : {Role::kAgent, Role::kUser, Role::kOther}) total += task(task_key, r);
  return total;
}

Usage Ledger::run(Role role) const {
  std::lock_guard lock(mu_);
  return totals_->run[static_cast<std::size_t>(role)];
}

Usage Ledger::run_total() const {
  Usage total;
  for (Role r : {Role::kAgent, Role::kUser, Role::kOther}) total += run(r);
  return total;
}

std::string Ledger::to_json(std::optional<std::string_view> task_key) const {
  json j = json::object();
  Usage total;
  for (Role r : {Role::kAgent, Role::kUser, Role::kOther}) {
    Usage u = task_key ? task(*task_key, r) : run(r);
    total += u;
    j[std::string(to_string(r))] = json::parse(u.to_json());
  }
  j["total"] = json::parse(total.to_json());
  return j.dump();
}

bool Ledger::budget_reached() const {
  if (!budget_usd_) return false;
  return run_total().priced_cost_usd >= *budget_usd_;
}

// ---- MeteredChatModel --------------------------------------------------------------------------------------

MeteredChatModel::MeteredChatModel(ChatModel& inner, Ledger& ledger, Role role, std::string task_key)
    : inner_(inner), ledger_(ledger), role_(role), task_key_(std::move(task_key)) {}

ChatResponse MeteredChatModel::chat(const ChatRequest& request) {
  ChatResponse r = inner_.chat(request);
  ledger_.record(task_key_, role_, r);
  return r;
}

}  // namespace pwab::llm
