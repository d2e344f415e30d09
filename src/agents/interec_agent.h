// src/agents/interec_agent.h: the InteRecAgent agent `interecagent` (docs/decisions.md §4.5, decision D10): the
// function-calling agent (four tools, as fc) with a like / dislike / expect profile per user that is
// initialized from the user's history, shown in the system prompt, and updated by the LLM after every task.
//
// Ordering (D10). The tasks of one user run strictly one after another in task order, each reading the profile
// the previous one left; tasks of different users run concurrently. The factory keeps, per user, the queue of
// planned tasks (plan(); by default every task of the split of the first task made) that are not yet applied.
// make() blocks until its task is at the front of its user's queue; the agent's destructor (the runner destroys
// the agent right after the episode, before the record is written) runs the update call, applies it, rewrites
// the memory file and pops the queue. Because the runner hands tasks out in list order (split order), a task's
// earlier planned tasks were handed out before it and are running or waiting on still earlier ones, so the
// oldest unfinished one always runs: no deadlock at any concurrency. A planned task that never reaches make()
// (not in this run) stops being waited for after kInterecGraceSeconds. An episode that throws (destroyed during
// unwinding) releases its turn without an update; the task is not marked applied and a resume reruns it.
// docs/agents/interecagent.md has the prompts, the file format and the deviations.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"
#include "llm/chat.h"

namespace pwab::agents {

//! Changes whenever an InteRecAgent prompt's wording changes (echoed by config_json()).
inline constexpr std::string_view kInterecPromptsVersion = "pwab-interec-prompts/1";
//! The `version` of the memory file.
inline constexpr std::string_view kInterecMemoryVersion = "pwab-interec-memory/1";
//! Expect keeps at most this many entries, the most recently added (docs/decisions.md D10).
inline constexpr std::size_t kInterecExpectCap = 30;
//! How long make() waits for an earlier planned task of the same user to reach make() at all before deciding
//! it is not part of this run (see the file comment).
inline constexpr double kInterecGraceSeconds = 2.0;
//! The initialization reads at most this many of the user's `history`-split behaviours, the last ones
//! (docs/decisions.md §4.5).
inline constexpr std::size_t kInterecInitItems = 200;

//! A user's profile: insertion-ordered lists with set semantics (docs/decisions.md D10).
struct InterecProfile {
  std::vector<std::string> like, dislike, expect;
  bool operator==(const InterecProfile&) const = default;
};

//! The update rule (docs/decisions.md §4.5 with D10's ordered sets): like = (like − u.dislike) ∪ u.like, dislike =
//! (dislike − u.like) ∪ u.dislike, expect ∪= u.expect keeping the last kInterecExpectCap; new entries appended in
//! their order, duplicates dropped.
void apply_interec_update(InterecProfile& profile, const InterecProfile& update);

//! The system prompt (docs/decisions.md §4.5, our own words): the fc opening, "Rules:", 11 rules; the steps rule states
//! `max_steps` in multi-turn and -1 in single-turn (as the original).
std::string interec_system_prompt(data::Track track, int max_steps);

//! The memory appended to the prompt: "\n\n<header>:\n" + "History:\n" + the k most recent visible items
//! ("\n- Title: …\n- Parent Asin: …\n- Main Category: …\n- Rating: …\n- Text: …\n", joined with "\n") +
//! "\nLike:\n" + str(like) + "\nDislike:\n" + str(dislike) + "\nExpect:\n" + str(expect) (Python list reprs).
std::string interec_memory(const data::Dataset& ds, const data::Task& task, const InterecProfile& profile, int k);

//! The deterministic initial profile (`interec_init=heuristic`): over the user's last kInterecInitItems
//! `history`-split behaviours in stored order, rating ≥ 4 likes the product's parent_asin (and takes it out of
//! dislike), rating ≤ 2 dislikes it (and takes it out of like), anything else is skipped; expect is empty.
InterecProfile heuristic_interec_profile(const data::Dataset& ds, data::UserId user);

//! The initialization prompt for one user (docs/decisions.md §4.5 USER_PROFILE_PROMPT in our own words,
//! per-item blocks exact).
std::string interec_init_prompt(const data::Dataset& ds, data::UserId user);
//! The update prompt (docs/decisions.md §4.5 INTEREC_UPDATE_MEM_PROMPT in our own words; item ids and JSON exact) with
//! the serialized conversation.
std::string interec_update_prompt(std::string_view conversation);
//! messages[1:] serialized as docs/decisions.md §4.5: "role:content" for user and tool turns, "assistant:" followed by
//! "Function(arguments='…', name='…')" or the content for assistant turns; joined with "\n".
std::string serialize_interec_conversation(const std::vector<llm::Message>& messages);

//! Parses a model's profile reply: text from the first '{' (when `from_first_brace`), ``` fences and newlines
//! removed, then a JSON object whose like / dislike / expect (each optional) are lists of strings. nullopt when
//! it is not.
std::optional<InterecProfile> parse_interec_profile(std::string_view text, bool from_first_brace);

enum class InterecInit { kLlm, kHeuristic };

struct InterecOptions {
  int memory_length = 10;  //!< docs/decisions.md D1
  int max_steps = 10;      //!< the step budget the multi-turn prompt states
  InterecInit init = InterecInit::kLlm;
  //! The memory file (read on start when present, rewritten after every update); empty = kept in memory only.
  std::filesystem::path memory_file;
};

//! Reads AgentOptions: memory "" or "interecagent", memory_length ≥ 1, extra keys `interec_init` (llm |
//! heuristic), `interec_memory` (PATH) and `max_steps` (default `run_max_steps`, the run's cap). UsageError for
//! anything else.
InterecOptions parse_interec_options(const AgentOptions& options, int run_max_steps = 10);

//! Counters kept in the memory file.
struct InterecStats {
  int64_t n_init_llm = 0;         //!< users initialized by an LLM call
  int64_t n_init_invalid = 0;     //!< of those, replies that were not a profile (the user starts empty)
  int64_t n_init_failed = 0;      //!< init calls that failed (infrastructure; the user starts empty)
  int64_t n_updates = 0;          //!< updates applied
  int64_t n_update_invalid = 0;   //!< update replies that were not a profile (the old profile kept)
  int64_t n_update_failed = 0;    //!< update calls that failed (infrastructure; the old profile kept)
  int64_t n_episode_errors = 0;   //!< episodes that threw: no update, the task stays unapplied
  bool operator==(const InterecStats&) const = default;
};

class InterecAgentFactory final : public AgentFactory {
 public:
  //! UsageError when the context has no LLM or no dataset, or when the memory file is unreadable, malformed,
  //! or was made with another `interec_init`.
  InterecAgentFactory(InterecOptions options, const AgentContext& context);
  ~InterecAgentFactory() override;
  InterecAgentFactory(const InterecAgentFactory&) = delete;
  InterecAgentFactory& operator=(const InterecAgentFactory&) = delete;

  std::string name() const override { return "interecagent"; }
  //! {"agent": "interecagent", "model", "temperature", "max_tokens", "seed", "memory": "interecagent",
  //! "memory_length", "prompts", "max_steps", "interec_init"}. The memory file's path is not part of it.
  std::string config_json() const override;
  //! Waits for the task's turn (see the file comment), initializes the user's profile if needed, and opens the
  //! episode's model under (task key, agent role). The update call is booked under (task key, other).
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  //! Declares the tasks this run will make, in the order the runner hands them out (its to-do list: the
  //! selected tasks minus those already done). Replaces the default plan; call before the first make().
  void plan(const std::vector<const data::Task*>& tasks);
  //! `pwab run` calls this with the tasks it will run: plan(tasks).
  void prepare(const std::vector<const data::Task*>& tasks) override { plan(tasks); }

  //! A user's current profile (empty when not initialized).
  InterecProfile profile(data::UserId user) const;
  //! Whether the task's update has been applied (or given up on after a failed update call).
  bool applied(const std::string& task_key) const;
  InterecStats stats() const;
  //! The memory file's JSON text as it would be written now.
  std::string memory_json() const;

  //! The episode's system message from a profile snapshot.
  std::string system_message(const data::Task& task, data::Track track, const InterecProfile& profile) const;

 private:
  class Agent;

  void ensure_default_plan_locked(data::Split split) const;
  InterecProfile initial_profile(data::UserId user) const;  // no lock held
  void finish(const data::Task& task, bool planned, bool owns_update, const std::vector<llm::Message>* messages,
              bool episode_failed) const;
  void save_locked() const;
  std::string memory_json_locked() const;
  void load();

  InterecOptions options_;
  AgentContext context_;
  std::string tools_json_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool planned_ = false;
  mutable std::map<data::UserId, std::deque<std::string>> queues_;  // planned, unfinished task keys per user
  mutable std::map<data::UserId, InterecProfile> profiles_;         // initialized users
  mutable std::set<std::string> applied_;
  mutable std::set<std::string> started_;  // task keys that entered make()
  mutable InterecStats stats_;
};

}  // namespace pwab::agents
