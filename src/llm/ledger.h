// src/llm/ledger.h: tokens and dollars per role, per task and per run, and the `--budget-usd` check.
//
// Prices come from a JSON table (src/llm/default_prices.json is built in; users pass their own file). A
// model the table does not list is *unpriced*: its tokens are counted, its cost is reported as unknown,
// never as $0. Responses replayed from the cache cost nothing; their tokens are counted apart, as cached.
// docs/llm.md "Cost ledger".
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"

namespace pwab::llm {

//! Who made a call: the agent, the user simulator, or anything else (judges, memory updates, embeddings).
enum class Role { kAgent, kUser, kOther };
inline constexpr int kNumRoles = 3;
std::string_view to_string(Role r);
//! "agent" / "user" / "other"; UsageError otherwise.
Role parse_role(std::string_view s);

//! US dollars per one million tokens.
struct Price {
  double prompt_usd_per_1m = 0;
  double completion_usd_per_1m = 0;
};

//! Model name → price. Names match exactly (a dated variant such as "gpt-4o-mini-2024-07-18" needs its own
//! entry). File format (docs/llm.md): {"models": {"<name>": {"prompt": <$ per 1M>, "completion": <$ per 1M>}}}.
class PriceTable {
 public:
  //! The built-in table (src/llm/default_prices.json: the original's prices, docs/decisions.md §4.1).
  static PriceTable builtin();
  //! Reads a price file; DataError naming the file and the entry on any problem.
  static PriceTable load(const std::filesystem::path& file);
  //! Parses price JSON text; `source` names it in errors.
  static PriceTable parse(std::string_view json_text, std::string_view source);

  std::optional<Price> find(std::string_view model) const;
  const std::map<std::string, Price, std::less<>>& entries() const { return entries_; }
  //! Where the table came from ("built-in" or the file path).
  const std::string& source() const { return source_; }

 private:
  std::map<std::string, Price, std::less<>> entries_;
  std::string source_;
};

//! The JSON text of the built-in table.
std::string_view builtin_price_table_json();

//! Totals of some calls.
struct Usage {
  int64_t calls = 0;  //!< calls answered by the API (billed)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_calls = 0;  //!< calls replayed from the cache ($0)
  int64_t cached_prompt_tokens = 0;
  int64_t cached_completion_tokens = 0;
  double priced_cost_usd = 0;                //!< the cost of the billed calls of priced models
  std::vector<std::string> unpriced_models;  //!< models with billed calls and no price (sorted, unique)

  //! Whether the cost is known (no billed call of an unpriced model).
  bool priced() const { return unpriced_models.empty(); }
  //! The cost when known.
  std::optional<double> cost_usd() const;
  Usage& operator+=(const Usage& other);
  //! "$0.001234", "unpriced (m)" or "$0.0012 + unpriced (m1, m2)".
  std::string cost_text() const;
  //! {"calls": .., "prompt_tokens": .., "completion_tokens": .., "cached_calls": .., "cached_prompt_tokens":
  //! .., "cached_completion_tokens": .., "cost_usd": <number or null when unpriced>, "priced_cost_usd": ..,
  //! "unpriced_models": [..]} on one line.
  std::string to_json() const;
  //! Parses to_json() output (DataError on a malformed object).
  static Usage from_json(std::string_view text);
};

//! Tokens and dollars of a whole run: per task and role, per role, in total. Thread-safe.
class Ledger {
 public:
  //! `budget_usd`: the run stops starting tasks once the priced cost reaches it (budget_reached()).
  explicit Ledger(PriceTable prices, std::optional<double> budget_usd = std::nullopt);
  ~Ledger();

  //! Records one call. `task_key` "" = not tied to a task (counted in the run totals only).
  void record(std::string_view task_key, Role role, std::string_view model, int64_t prompt_tokens,
              int64_t completion_tokens, bool from_cache);
  //! Records a chat response (its model, tokens and from_cache).
  void record(std::string_view task_key, Role role, const ChatResponse& response);
  //! Spending carried over from an earlier session of a resumed run: it counts toward the run totals and the
  //! budget, not toward any task.
  void add_prior(Role role, const Usage& usage);

  Usage task(std::string_view task_key, Role role) const;
  Usage task_total(std::string_view task_key) const;
  Usage run(Role role) const;
  Usage run_total() const;
  //! {"agent": <Usage>, "user": <Usage>, "other": <Usage>, "total": <Usage>} for one task, or for the run
  //! when `task_key` is nullopt.
  std::string to_json(std::optional<std::string_view> task_key = std::nullopt) const;

  const PriceTable& prices() const { return prices_; }
  std::optional<double> budget_usd() const { return budget_usd_; }
  //! Whether a budget is set and the run's priced cost has reached it. Tasks already running finish; the
  //! runner starts no new one, and a resumed run picks up the rest (docs/llm.md "Budget").
  bool budget_reached() const;

 private:
  struct Totals;
  PriceTable prices_;
  std::optional<double> budget_usd_;
  mutable std::mutex mu_;
  std::unique_ptr<Totals> totals_;
};

//! A ChatModel that records every response of `inner` in a ledger, under one role and task. Cheap: make one
//! per episode and role. InfraErrors pass through unrecorded (a failed call has no usage).
class MeteredChatModel final : public ChatModel {
 public:
  MeteredChatModel(ChatModel& inner, Ledger& ledger, Role role, std::string task_key);
  ChatResponse chat(const ChatRequest& request) override;
  std::string describe() const override { return inner_.describe(); }

 private:
  ChatModel& inner_;
  Ledger& ledger_;
  Role role_;
  std::string task_key_;
};

}  // namespace pwab::llm
