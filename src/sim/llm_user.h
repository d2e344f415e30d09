// src/sim/llm_user.h: the LLM user simulator (`--user-sim llm`), the original's "naive" user (docs/decisions.md §3.4).
//
// An LlmUser answers the agent's `respond` messages for one task by asking a chat model to play the user. The
// model gets a system prompt (in pwab's own words) with the user's rendered profile and the task's target
// product, plus the true review for review tasks, and a role-flipped dialogue: the agent's messages are its
// "user" turns and its own earlier replies are its "assistant" turns. The dialogue opens with a greeting as the
// agent's first turn and the task's instruction as the simulated user's first reply, so the model continues a
// conversation it seems to have started. Requests use temperature 1.0 and at most 150 completion tokens.
// The model is the caller's (normally a MeteredChatModel with role "user", so the ledger sees every call);
// llm::InfraError and llm::ReplayMissError pass through. docs/simulator.md describes the prompt and policy.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "env/environment.h"
#include "llm/chat.h"
#include "sim/leaks.h"

namespace pwab::sim {

//! The stop sentinel a user may say to end the dialogue (only asked for with LlmUserOptions::stop_rule).
inline constexpr const char* kStopSentinel = "###STOP###";

struct LlmUserOptions {
  double temperature = 1.0;    //!< the original's
  int max_tokens = 150;        //!< completion tokens per reply, the original's
  std::optional<int64_t> seed; //!< sent as the request's seed when set (the original sends none)
  //! The cache's sample index (llm::ChatRequest::sample): the trial number when several samples of one
  //! dialogue are wanted. Never sent.
  int sample = 0;
  //! Not in the original (whose user never ends the dialogue, docs/decisions.md §3.4): adds a last rule asking the
  //! model to answer with exactly ###STOP### once satisfied or out of things to say; such a reply is returned as the
  //! bare sentinel, and every later reply is the sentinel without a model call.
  bool stop_rule = false;
  //! Not in the original: 0 = off (a reply that leaks is returned as the model wrote it, and only counted); N > 0
  //! = a reply that leaks (find_leak with leak_rule) is asked again up to N times, each request carrying the
  //! leaked draft and a correction; if every rewrite still leaks, kGuardFallbackReply is said instead.
  int leak_guard = 0;
  LeakRule leak_rule;  //!< what counts as a leak, for n_leaky_replies() and the guard
};

//! Tokens of this simulator's calls (the ledger has the same numbers, and the dollars, when the model is metered).
struct LlmUserUsage {
  int64_t calls = 0;  //!< chat calls made (a retried empty reply counts twice)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_calls = 0;  //!< of those, replayed from the record/replay cache
};

class LlmUser final : public env::UserChannel {
 public:
  //! `ds`, `task` and `model` must outlive the simulator. No model call is made here. Throws UsageError when
  //! `model_name` is empty or max_tokens < 1.
  LlmUser(const data::Dataset& ds, const data::Task& task, llm::ChatModel& model, std::string model_name,
          LlmUserOptions options = {});
  //! The same, owning its model (e.g. the MeteredChatModel made for this task, for a runner::UserMaker).
  LlmUser(const data::Dataset& ds, const data::Task& task, std::unique_ptr<llm::ChatModel> model,
          std::string model_name, LlmUserOptions options = {});

  //! Appends the agent's message as a "user" turn, asks the model, appends its reply as an "assistant" turn and
  //! returns it unchanged. An empty (or all-whitespace) reply is asked once more (as another cache sample, with
  //! seed + 1 when a seed is set); if that is empty too, kFallbackReply is said instead. With leak_guard, a reply
  //! that leaks is rewritten (see LlmUserOptions::leak_guard; rewrite r is cache sample kGuardSampleOffset + r,
  //! with seed + r) and only the accepted reply enters the dialogue. With stop_rule, a reply containing
  //! ###STOP### is returned as exactly "###STOP###" (it gives nothing away, so the guard leaves it alone).
  //! Throws llm::InfraError / ReplayMissError.
  std::string reply(const std::string& agent_message) override;
  //! {"leak_guard": N, "rewrites": R, "guard_fallbacks": F, "leaky_drafts": L} with the guard on; with it off
  //! {"leaky_drafts": L} when some reply leaked, else "" (so a run without the guard and without leaks writes
  //! records exactly as before the guard existed).
  std::string record_json() const override;

  //! The dialogue as the model sees it: system prompt, greeting ("user"), instruction ("assistant"), then the
  //! turns so far (accepted replies only: the guard's leaky drafts and corrections are never kept).
  const std::vector<llm::Message>& messages() const { return messages_; }
  const std::string& system_prompt() const { return messages_.front().content; }
  const LlmUserUsage& usage() const { return usage_; }
  //! Replies that were empty after the retry and replaced by kFallbackReply.
  int n_fallback_replies() const { return n_fallback_; }
  //! Replies whose first draft leaked (find_leak with LlmUserOptions::leak_rule: the target's parent ASIN or a
  //! run of its title's words; for review tasks a run of the true review's words). Without the guard such
  //! replies are returned unchanged, as in the original, and only counted here.
  int n_leaky_replies() const { return n_leaky_; }
  //! Model calls the guard made to rewrite a leaky draft (each counts in usage() too).
  int n_rewrites() const { return n_rewrites_; }
  //! Replies replaced by kGuardFallbackReply because every rewrite still leaked (or came back empty).
  int n_guard_fallbacks() const { return n_guard_fallbacks_; }
  //! Whether the user has said the stop sentinel (stop_rule only).
  bool stopped() const { return stopped_; }

  //! What the simulated user says when the model gave no text twice: neutral, no information.
  static constexpr const char* kFallbackReply =
      "Sorry, I'm not sure what to say to that. Could you put it another way?";
  //! The agent's opening turn in the simulator's dialogue.
  static constexpr const char* kGreeting = "Hi there! How can I help you today?";
  //! Offset added to LlmUserOptions::sample for the retry of an empty reply (a cache then stores both).
  static constexpr int kRetrySampleOffset = 1'000'000;
  //! Offset added to LlmUserOptions::sample, plus the rewrite number (1..leak_guard), for the guard's rewrites:
  //! a record/replay cache keeps every draft apart from the first and from the empty-reply retry.
  static constexpr int kGuardSampleOffset = 2'000'000;
  //! What the simulated user says when every rewrite still leaked: neutral, no information.
  static constexpr const char* kGuardFallbackReply =
      "Hmm, I'd rather not spell it out. What would you suggest, based on what I've told you so far?";
  //! The correction a rewrite request ends with, after the leaked draft, as a "system" turn (never kept in
  //! messages()): for a draft that names the product (ASIN or title words) ...
  static constexpr const char* kProductCorrection =
      "That reply gives the product away: it names it or states its ASIN. Say the same thing again in your own "
      "words, without the product's name, its ASIN or any words copied from its title.";
  //! ... and for a draft that quotes the user's true review (review tasks).
  static constexpr const char* kReviewCorrection =
      "That reply quotes the review you wrote. Say the same thing again in your own words, without copying "
      "phrases from your review.";

 private:
  llm::ChatResponse ask(const std::vector<llm::Message>& messages, int sample, std::optional<int64_t> seed);
  //! What the guard checks: nothing for a reply that will be said as the bare stop sentinel.
  Leak leak_of(const std::string& text) const;
  //! The guard: rewrites of `draft` (which leaked as `leak`) until one is clean, else kGuardFallbackReply.
  std::string rewrite(std::string draft, Leak leak);

  const data::Dataset& ds_;
  const data::Task& task_;
  std::unique_ptr<llm::ChatModel> owned_;
  llm::ChatModel& model_;
  std::string model_name_;
  LlmUserOptions options_;
  std::vector<llm::Message> messages_;
  LlmUserUsage usage_;
  int n_fallback_ = 0;
  int n_leaky_ = 0;
  int n_rewrites_ = 0;
  int n_guard_fallbacks_ = 0;
  bool stopped_ = false;
};

//! The profile block of the simulator prompt (docs/decisions.md §3.4): a leading newline, then 11 lines in file order
//! ("- Gender: …", "- Age: …", "- Occupation: …", "- You are <price archetype>", …, each ending in a newline).
//! A missing field renders empty; a level field (Price Sensitivity, Diversity Preference, Interaction
//! Complexity) that is not High, Medium or Low (case and surrounding spaces ignored) leaves its line out.
std::string render_user_profile(const data::Profile& profile);

//! The product block (docs/decisions.md §2.2): "\n" + data::product_fields_block(p) + "\n".
std::string render_user_product(const data::Product& p);

//! The whole system prompt for `task`: search/recommend tasks name the product wanted; review tasks the product
//! bought and the user's own review (the task's true review text). `stop_rule` adds the ###STOP### rule.
std::string llm_user_system_prompt(const data::Dataset& ds, const data::Task& task, bool stop_rule = false);

}  // namespace pwab::sim
