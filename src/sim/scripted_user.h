// src/sim/scripted_user.h: the scripted user simulator, the offline stand-in for the LLM user (docs/decisions.md §3.4).
//
// A ScriptedUser answers the agent's `respond` messages for one task. Its answers are hints drawn from the
// task's target product (category, price band, kind, attributes, features, store) or, for review tasks, from
// the true review (verdict, aspects praised and criticised, length and tone). Each hint is given at most once,
// in a fixed order of informativeness unless the agent's question asks for a particular kind. It never reveals
// the target's title or parent ASIN. After each scored attempt (note_attempt) the next reply reacts to it. The
// wording follows the profile's tone and interaction complexity. Everything is deterministic per seed; the
// policy is documented in docs/simulator.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "data/dataset.h"
#include "env/environment.h"

namespace pwab::sim {

//! What a hint is about (also what a question can ask for).
enum class HintKind : uint8_t { kCategory, kPrice, kKind, kDetail, kFeature, kBrand, kSentiment, kAspect, kStyle };
std::string_view to_string(HintKind k);

//! One piece of information the user can give: a clause such as "it should cost under $30".
struct Hint {
  HintKind kind = HintKind::kCategory;
  std::string key;     //!< for kDetail the lower-case detail key ("color"); otherwise empty
  std::string clause;  //!< lower-case-first clause, no final punctuation
  bool used = false;
};

class ScriptedUser final : public env::UserChannel {
 public:
  //! `ds` and `task` must outlive the simulator. The seed is mixed with the task's split and index.
  ScriptedUser(const data::Dataset& ds, const data::Task& task, uint64_t seed);

  //! The user's reply to an agent message (a `respond`). Never contains the target's title or parent ASIN, nor
  //! four consecutive words of the title, and is never the stop sentinel.
  std::string reply(const std::string& agent_message) override;
  //! Called by the runner after each scored task-function attempt; the next reply reacts to it (a wrong
  //! function, a miss or low rank with a new clue, or satisfaction and a wish to stop).
  void note_attempt(std::string_view function, const env::Reward& reward) override;
  //! Clues given so far, in order (for tests and the results file).
  const std::vector<std::string>& clues_given() const { return clues_given_; }
  //! Every hint prepared for this task, in the fixed order (for tests).
  const std::vector<Hint>& hints() const { return hints_; }

  //! True if `text` contains the title, the parent ASIN, or any 4 consecutive words of the title
  //! (case-insensitive, words = runs of letters and digits).
  static bool leaks_title(std::string_view text, const data::Product& target);

 private:
  enum class Feedback : uint8_t { kNone, kWrongFunction, kMissed, kLow, kSatisfied };
  enum class Talk : uint8_t { kLow, kMedium, kHigh };

  void build_product_hints();
  void build_review_hints();
  void add_hint(HintKind kind, std::string key, std::string clause);
  //! The index of the hint the question asks for, if any unused one matches.
  std::optional<std::size_t> route(std::string_view message) const;
  std::optional<std::size_t> next_unused() const;
  //! Marks the hint used and records it as a clue; returns its clause.
  std::string take(std::size_t i);
  std::string opener();
  std::string sentence(std::string clause);
  std::string feedback_text(Feedback f);

  const data::Dataset& ds_;
  const data::Task& task_;
  const data::Product& target_;
  Rng rng_;
  Talk talk_ = Talk::kMedium;
  bool warm_ = false;   // enthusiastic / positive tone: friendlier words, exclamation marks
  bool terse_ = false;  // critical / concise / direct tone: no pleasantries
  bool wordy_ = false;  // detailed / descriptive tone: an extra remark where the length allows
  std::vector<Hint> hints_;
  std::vector<std::string> clues_given_;
  Feedback pending_ = Feedback::kNone;
  bool satisfied_ = false;
  int n_replies_ = 0;
};

}  // namespace pwab::sim
