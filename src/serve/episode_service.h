// src/serve/episode_service.h: the benchmark environment as a service of concurrent episodes (`pwab serve`).
//
// An EpisodeService lets an agent that lives outside this process (another language, another machine, an MCP
// client) play PersonalWAB episodes: list tasks, start an episode of a task in a track with a user simulator,
// step it one action at a time, and end it. Each episode runs under runner::Episode, the same rules as `pwab
// run`, and its record is the same TaskRecord, appended to a run directory so `pwab score` works on served runs.
// Requests and answers are JSON values; the class knows nothing of HTTP (http_server.h is one front end). It is
// thread-safe: episodes are independent and each one has its own lock, so hundreds step at once. The API is
// described in docs/serve.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "env/environment.h"
#include "metrics/metrics.h"
#include "runner/episode.h"
#include "runner/results.h"

namespace pwab::serve {

//! A request the service refuses. `status` is the HTTP status a front end answers with: 400 bad request, 404
//! unknown task or episode, 402 the budget is spent (budget_reached), 409 episode already finished or a (task, trial) already recorded or being played
//! (already_recorded, in_progress), 413 too large, 429 too many sessions. `code` is a
//! short machine-readable name ("unknown_episode"), what() the message for people.
struct RequestError : Error {
  RequestError(int status, std::string code, const std::string& message)
      : Error(message), status(status), code(std::move(code)) {}
  int status;
  std::string code;
};

//! The task named "<split>/<index>" ("test/17"): 400 bad_request for a malformed key, 404 unknown_task past the
//! split's end.
const data::Task& find_task(const data::Dataset& ds, std::string_view key);

//! A user simulator for one task (the service owns what it returns). `ledger_key` names the episode in the cost
//! ledger (its id), so that usage_json can report what this episode's user spent.
using UserFactory =
    std::function<std::unique_ptr<env::UserChannel>(const data::Task&, uint64_t seed, const std::string& ledger_key)>;

struct ServiceOptions {
  //! Episodes open at once; a start beyond it first drops idle ones, then answers 429.
  std::size_t max_sessions = 1000;
  //! The most bytes of actions (name and arguments) and observations one episode may hold: a step that would go
  //! over it is refused (413 episode_too_large) and changes nothing. Bounds an episode's memory and its record line.
  std::size_t max_episode_bytes = 16 << 20;
  //! Seconds without a request after which an episode is dropped by expire_idle().
  double idle_timeout_s = 900;
  //! The seed of the scripted user when a start request gives none (as `pwab run --seed`).
  uint64_t seed = 0;
  //! The step cap when a start request gives none, per track; as `pwab run` for function-calling agents.
  int default_max_steps_single = 10;
  int default_max_steps_multi = 10;
  //! The largest max_steps a start request may ask for.
  int max_steps_limit = 1000;
  //! The most tasks one list_tasks answer holds.
  std::size_t max_list_limit = 1000;
  //! user_sim "llm": the LLM user simulator, when the server was given a model; null = "llm" is refused.
  UserFactory llm_user;
  //! Whether the LLM user's priced spending has reached the budget (`--budget-usd`); null = no budget. Once it
  //! has, episodes with the LLM user are not started and their respond steps (which would call it) are refused
  //! (402 budget_reached); everything that costs nothing goes on.
  std::function<bool()> budget_reached;
  //! The usage JSON of one ledger key (an episode id) for its record's `usage`; null = none recorded.
  std::function<std::string(const std::string& ledger_key)> usage_json;
  //! Monotonic seconds; the steady clock when empty. Tests of expiry pass a hand-moved clock.
  std::function<double()> clock;
  //! Where the service reports a failure of its own that a client gets as a 500 (a record the run directory
  //! could not take, e.g. a full disk): one line each, for the operator's log. Null = not reported.
  std::function<void(const std::string& line)> log;
};

//! Where records go: one run directory per track, since `pwab score` reads one track per directory. Either may
//! be null (that track is not recorded); both may be the same directory.
struct RecordSinks {
  runner::RunDirectory* single_turn = nullptr;
  runner::RunDirectory* multi_turn = nullptr;
};

class EpisodeService {
 public:
  //! The largest "trial" a start request may name.
  static constexpr int64_t kMaxTrial = 999'999;

  //! `env` (and its dataset) must outlive the service. `out`, when given, is the run directory where every
  //! episode's record is appended (both tracks), as `pwab run` writes them.
  EpisodeService(const env::Environment& env, ServiceOptions options, runner::RunDirectory* out = nullptr);
  EpisodeService(const env::Environment& env, ServiceOptions options, RecordSinks sinks);
  ~EpisodeService();
  EpisodeService(const EpisodeService&) = delete;
  EpisodeService& operator=(const EpisodeService&) = delete;

  //! The dataset's size, every tool's OpenAI schema, the tracks, user simulators, limits and open sessions.
  nlohmann::json info() const;
  //! {"split": "test", "offset": 0, "limit": 100, "history": false} (all optional) -> {"split", "offset", "total",
  //! "tasks": [{"task": "test/17", "user_id", "instruction", "history"?}]}: with "history" each task carries the
  //! user's visible behaviours (as start gives them), what an RL prompt's memory is built from. Never the type,
  //! target or ground truth.
  nlohmann::json list_tasks(const nlohmann::json& query) const;
  //! {"task": "test/17", "track": "single"|"multi", "user_sim": "none"|"scripted"|"llm", "max_steps"?, "seed"?,
  //! "history"? (false leaves it out), "trial"? (0; "next": the lowest trial of the task neither recorded nor
  //! being played), "episode_id"? (the client's own id: 1-128 of [A-Za-z0-9_-], 409 episode_exists if open),
  //! "idle_timeout_s"? (this episode's, at most the server's: an engine that abandons rollouts unannounced)} -> {"episode_id", "task", "trial", "track", "user_sim", "seed",
  //! "max_steps", "observation", "tools", "history": [...]}. With a run directory for the track, a (task, trial)
  //! that already has a clean record there, or is being played in another open episode, is refused (409
  //! already_recorded / in_progress): no replay replaces a finished record. The history is what an agent's memory may use: the user's
  //! behaviours before the task (asin, title, the user's own rating, review and timestamp).
  nlohmann::json start(const nlohmann::json& request);
  //! {"name", "arguments": {...} or "<JSON text>", "usage"?: {"prompt_tokens", "completion_tokens"}} (or an
  //! OpenAI tool call {"function": {"name", "arguments"}}) -> {"observation", "reward": {"function_acc",
  //! "result_acc"}, "done", "scored", "steps", "finished", "ending" (once finished)}. A finished episode's
  //! record is appended to the run directory at this step.
  nlohmann::json step(std::string_view episode_id, const nlohmann::json& action);
  //! Finalises and removes the episode: {"record": <TaskRecord JSON without "type" and "target_asin">, "score":
  //! {"f", "r"}}. An episode ended
  //! before it finished gets the ending "client_end" and is recorded then.
  nlohmann::json end(std::string_view episode_id);
  //! end() without building the record's JSON: the episode's score, and its record when asked.
  metrics::TaskScore finish(std::string_view episode_id, runner::TaskRecord* record = nullptr);
  //! The episode so far (no target): ids, options, steps, the actions with observations and rewards, attempts.
  nlohmann::json state(std::string_view episode_id) const;
  //! Whether a request on this episode may wait: its user is an LLM, or its track is recorded (the record is
  //! fsynced when the episode finishes or ends). Front ends run such requests off their I/O threads.
  bool may_block(std::string_view episode_id) const;
  //! Drops an open episode at once, as expiry does: an unfinished one leaves no record and frees its (task,
  //! trial); a finished one was recorded when it finished. False when there is no such open episode.
  bool drop(std::string_view episode_id);
  //! Drops episodes idle longer than the timeout (not ones in the middle of a request); returns how many.
  //! Finished episodes were recorded when they finished; unfinished ones are dropped without a record.
  std::size_t expire_idle();
  //! Episodes open now.
  std::size_t n_sessions() const;
  //! The environment episodes are played in.
  const env::Environment& environment() const { return env_; }

 private:
  struct Slot;
  std::shared_ptr<Slot> find(std::string_view episode_id) const;
  double now() const;
  std::string new_episode_id();
  runner::RunDirectory* sink(data::Track track) const;
  void record(Slot& slot, runner::TaskRecord record);
  void claim(Slot& slot, runner::RunDirectory* dir, const std::string& key, bool next_trial);
  static void check_episode_id(std::string_view id);
  void release(Slot& slot);

  const env::Environment& env_;
  ServiceOptions options_;
  RecordSinks sinks_;
  mutable std::shared_mutex mu_;  // guards slots_ (each Slot has its own lock for its episode)
  // Looked up by the string_view a request carries, without making a string of it.
  struct IdHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  std::unordered_map<std::string, std::shared_ptr<Slot>, IdHash, std::equal_to<>> slots_;
  std::mutex claims_mu_;  // guards claims_
  std::set<std::tuple<const runner::RunDirectory*, std::string, int>> claims_;  // (dir, task, trial) being played
  std::map<std::pair<const runner::RunDirectory*, std::string>, int> next_trial_hint_;  // for "trial": "next"
};

}  // namespace pwab::serve
