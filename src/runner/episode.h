// src/runner/episode.h: the one episode loop every agent runs under (docs/decisions.md §3.3; code practices §5,
// §9 item 1).
//
// An agent only decides the next action from the latest observation; the runner owns reset, the step cap,
// which calls end the episode, which calls are recorded as scored attempts, and step counting, so endings and
// step counts are identical for every agent in the paper's tables. The rules per track are in docs/runner.md.
#pragma once
#include <string>
#include <vector>

#include "data/types.h"
#include "env/agent.h"
#include "env/environment.h"
#include "metrics/metrics.h"

namespace pwab::runner {

// The agent interface lives in env/agent.h; these names keep runner:: callers working.
using AgentStep = env::AgentStep;
using Agent = env::Agent;

//! The original's loop bound (docs/decisions.md §3.3): `max_steps` when positive; otherwise (single-turn, max_steps =
//! −1) 10 for function-calling agents and PUMA, 3 for ReAct-style agents.
int loop_bound(int max_steps_flag, bool react_style);

struct EpisodeOptions {
  data::Track track = data::Track::kSingleTurn;
  //! At most this many agent calls. Single-turn: 10 for function-calling agents, 3 for ReAct (loop_bound());
  //! multi-turn: the run's max_steps (the scripts use 10). Must be ≥ 1.
  int max_steps = 10;
};

struct EpisodeResult {
  data::TaskType type = data::TaskType::kSearch;  //!< the task's type (for outcome())
  std::string first_observation;                  //!< what reset() returned
  std::vector<env::ActionRecord> actions;         //!< every executed action, from the Session
  std::vector<metrics::Attempt> attempts;         //!< every recorded (done) step's [function_acc, result_acc]
  int steps = 0;                                  //!< agent next() calls (= LLM calls)
  //! Why the loop ended: "task_function" or "respond" (single-turn done), "stop" (the agent's stop), or
  //! "step_cap" (max_steps agent calls used).
  std::string ending;
  double seconds_env = 0;    //!< wall time in Session::reset / step (user simulator replies included)
  double seconds_agent = 0;  //!< wall time in Agent::begin / next
  int prompt_tokens = 0;
  int completion_tokens = 0;

  //! The metrics input for this episode: its attempts, type and step count.
  metrics::TaskOutcome outcome(std::string task_key) const;
};

//! What Episode::step() did: the environment's result and whether the episode is now over.
struct EpisodeStep {
  env::StepResult result;
  bool finished = false;
};

//! One episode of one task, driven from outside one action at a time: the rules of docs/decisions.md §3.3 (step cap,
//! which calls end the episode, which are recorded as attempts, the endings per track) without the agent, so that
//! run_episode and the served episodes of `pwab serve` follow exactly the same rules. Not thread-safe: one
//! caller at a time. `env`, `task` and `user` must outlive it.
class Episode {
 public:
  //! The same checks as run_episode: max_steps < 1, or a user in the single-turn track, is a UsageError.
  Episode(const env::Environment& env, const data::Task& task, env::UserChannel* user, const EpisodeOptions& options);

  //! Starts the episode and returns the first observation. Once, before any step (UsageError otherwise).
  const std::string& reset();
  //! Executes the agent's next action and counts it as one step (tokens included). UsageError before reset()
  //! or once finished().
  EpisodeStep step(const AgentStep& decision);
  //! Ended by a done step in single-turn, a stop, or the step cap.
  bool finished() const { return finished_; }
  bool started() const { return started_; }
  int steps() const { return result_.steps; }
  const EpisodeOptions& options() const { return options_; }
  const data::Task& task() const { return session_.task(); }
  //! Time the agent spent deciding (the runner measures it; a server measures the wait between steps).
  void add_agent_seconds(double seconds) { result_.seconds_agent += seconds; }
  //! The episode so far. Its ending is "" while the episode runs (a caller that stops early names its own).
  EpisodeResult result() const;

 private:
  env::Session session_;
  EpisodeOptions options_;
  env::UserChannel* user_;  // told every scored attempt (UserChannel::note_attempt)
  EpisodeResult result_;
  bool started_ = false;
  bool finished_ = false;
};

//! Runs one episode of `task` (docs/decisions.md §3.3). `user` answers `respond` in the multi-turn track and may be
//! null (each respond then gets "Error: ###STOP###", recorded as a [0, 0] attempt); it is told every scored attempt
//! (UserChannel::note_attempt). The single-turn track takes no user: passing one is a
//! UsageError, as run.py rejects a user simulator with max_steps −1. max_steps < 1 is a UsageError.
EpisodeResult run_episode(const env::Environment& env, const data::Task& task, Agent& agent, env::UserChannel* user,
                          const EpisodeOptions& options);

}  // namespace pwab::runner
