// src/env/environment.h: the PersonalWAB web environment an agent acts on (docs/decisions.md §2.1, §3.1).
//
// An Environment holds the read-only services (dataset, search, recommender, embedder) and is shared by every
// episode; a Session is one episode of one task: reset() gives the first observation, step() executes one
// action. step() never throws at the agent: bad arguments, unknown tools and failing tools become observations.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "embed/embedder.h"

namespace pwab::env {

//! Product search as the environment needs it: parent ASINs of the top hits, best first.
class SearchBackend {
 public:
  virtual ~SearchBackend() = default;
  virtual std::vector<std::string> search(std::string_view query, int k) const = 0;
};

//! Next-item recommendation: parent ASINs, best first, from a time-ordered ASIN sequence.
class RecommendBackend {
 public:
  virtual ~RecommendBackend() = default;
  virtual std::vector<std::string> recommend(const std::vector<std::string>& sequence, int k) const = 0;
};

struct Reward;

//! Where `respond` goes: the user simulator (multi-turn) or nobody (single-turn).
class UserChannel {
 public:
  virtual ~UserChannel() = default;
  //! The user's reply to the agent's message. "###STOP###" (the sentinel) ends the dialogue.
  virtual std::string reply(const std::string& agent_message) = 0;
  //! Told after each scored task-function attempt (one whose tool ran), before the next reply; a simulator that
  //! reacts to results overrides it. The original's LLM user hears nothing of attempts, hence the default.
  virtual void note_attempt(std::string_view function, const Reward& reward) {}
  //! Facts about this simulator's replies for the results record, a JSON object text, or empty: written as the
  //! record's "user" object (runner::TaskRecord::user_json), e.g. how often the LLM user's leak guard rewrote a
  //! reply. Asked once, after the episode.
  virtual std::string record_json() const { return ""; }
};

//! An action chosen by an agent: a tool name (or "respond") and its arguments as a JSON object text.
struct Action {
  std::string name;
  std::string arguments_json = "{}";
};

//! What a tool returned, before it is shown to the agent (rewards are computed on this, as in the original).
struct ToolOutput {
  enum class Kind { kText, kResults, kReview, kError };
  Kind kind = Kind::kText;
  std::string text;                  //!< kText, kReview (the review text) and kError (the full "Error: ..." line)
  std::vector<std::string> results;  //!< kResults: one rendered product per entry

  //! The observation the agent sees: Python's str() of the output (a list repr, {'review': ...}, or the text).
  std::string observation() const;
};

//! [function accuracy, result accuracy] of one attempt.
struct Reward {
  double function_acc = 0;
  double result_acc = 0;
  bool operator==(const Reward&) const = default;
};

struct StepResult {
  std::string observation;
  Reward reward;
  bool done = false;
  bool scored = false;  //!< a task function ran without error: reward is an attempt's score
};

//! One executed action, kept for the results file.
struct ActionRecord {
  Action action;
  std::string observation;
  Reward reward;
  bool done = false;
  bool scored = false;
};

//! Result accuracy of a ranked list: 1 − (p − 1)/N for the first result containing the target ASIN at 1-based
//! rank p among N results (N is the actual count); 0 if absent or empty (docs/decisions.md D4).
double rank_score(const std::vector<std::string>& results, std::string_view target_asin);

//! The reward of one task-function call, a pure function of the task and the raw output (docs/decisions.md §3.1):
//! function accuracy 1 iff `function` solves the task's type; result accuracy by rank for search and
//! recommendation outputs, by embedding cosine with the true review for review outputs. An error output scores
//! [0, 0].
Reward score_attempt(const data::Dataset& ds, const data::Task& task, std::string_view function,
                     const ToolOutput& output, const embed::Embedder& embedder);

struct EnvironmentOptions {
  int top_k = 10;  //!< results per search or recommendation call
};

class Environment {
 public:
  //! All services must outlive the environment. `search` or `recommend` may be null: calls to that tool then
  //! return an Error observation saying the service is not configured.
  Environment(const data::Dataset& ds, const SearchBackend* search, const RecommendBackend* recommend,
              const embed::Embedder& embedder, EnvironmentOptions options = {});

  const data::Dataset& dataset() const { return ds_; }
  const embed::Embedder& embedder() const { return embedder_; }

  //! Runs one tool (not respond) with JSON arguments; validation errors become kError outputs.
  ToolOutput call_tool(std::string_view name, std::string_view arguments_json) const;

 private:
  ToolOutput run_search(const std::string& query) const;
  ToolOutput run_recommend(const std::vector<std::string>& sequence) const;
  ToolOutput run_details(const std::string& asin) const;
  ToolOutput render_ranked(const std::vector<std::string>& asins, std::string_view header) const;

  //! The fields block of a product as the tools render it (data::product_fields_block), made once.
  const std::string& product_block(data::ProductId id) const;

  const data::Dataset& ds_;
  const SearchBackend* search_;
  const RecommendBackend* recommend_;
  const embed::Embedder& embedder_;
  EnvironmentOptions options_;
  // Search and recommendation answers show the same products again and again, and rendering one (the Python
  // reprs of its lists and details) costs more than finding it: each product's block is kept once made.
  struct ProductBlocks;
  std::shared_ptr<ProductBlocks> blocks_;
};

//! One episode of one task.
class Session {
 public:
  //! `user` may be null (single-turn): a respond then gets "Error: ###STOP###" and ends the episode.
  Session(const Environment& env, const data::Task& task, UserChannel* user = nullptr);

  //! The first user message: "USER <user_id>: <instruction>", plus the product for review tasks.
  std::string reset();
  //! Executes one action (docs/decisions.md §2.1): respond goes to the user; the three task functions end the episode
  //! and are scored; stop and the details tool do not end it (the agent loop decides); anything else is
  //! "Unknown action <name>".
  StepResult step(const Action& action);

  const data::Task& task() const { return task_; }
  const std::vector<ActionRecord>& actions() const { return actions_; }

 private:
  const Environment& env_;
  const data::Task& task_;
  UserChannel* user_;
  std::vector<ActionRecord> actions_;
};

//! The initial observation of a task (also used by agents that build their own prompts).
std::string initial_observation(const data::Dataset& ds, const data::Task& task);

}  // namespace pwab::env
