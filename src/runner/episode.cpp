// The episode loop of docs/decisions.md §3.3, written once for every agent.
#include "runner/episode.h"

#include <chrono>
#include <utility>

#include "core/error.h"
#include "env/tools.h"

namespace pwab::runner {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int loop_bound(int max_steps_flag, bool react_style) {
  // docs/decisions.md §3.3: "max_steps if > 0 else 10" for function-calling agents and PUMA; ReAct uses 3
  // when max_steps = -1.
  if (max_steps_flag > 0) return max_steps_flag;
  return react_style ? 3 : 10;
}

metrics::TaskOutcome EpisodeResult::outcome(std::string task_key) const {
  metrics::TaskOutcome o;
  o.task_key = std::move(task_key);
  o.type = type;
  o.attempts = attempts;
  o.steps = steps;
  return o;
}

namespace {

void check_options(const EpisodeOptions& options, const env::UserChannel* user) {
  if (options.max_steps < 1) throw UsageError("episode max_steps must be at least 1");
  // docs/decisions.md §3.3: run.py refuses a user simulator in the single-turn track (max_steps -1 with
  // user_mode != "no").
  if (options.track == data::Track::kSingleTurn && user != nullptr)
    throw UsageError("the single-turn track takes no user simulator");
}

}  // namespace

Episode::Episode(const env::Environment& env, const data::Task& task, env::UserChannel* user,
                 const EpisodeOptions& options)
    : session_((check_options(options, user), env), task, user),  // checked before anything is built
      options_(options),
      user_(user) {
  result_.type = task.type;
}

const std::string& Episode::reset() {
  if (started_) throw UsageError("the episode has already been reset");
  auto t = Clock::now();
  result_.first_observation = session_.reset();
  result_.seconds_env += seconds_since(t);
  started_ = true;
  return result_.first_observation;
}

EpisodeStep Episode::step(const AgentStep& decision) {
  if (!started_) throw UsageError("the episode has not been reset");
  if (finished_) throw UsageError("the episode has already finished (" + result_.ending + ")");
  ++result_.steps;
  result_.prompt_tokens += decision.prompt_tokens;
  result_.completion_tokens += decision.completion_tokens;

  auto t = Clock::now();
  EpisodeStep out{session_.step(decision.action), false};
  result_.seconds_env += seconds_since(t);
  const env::StepResult& step = out.result;

  if (step.done) {
    // docs/decisions.md §3.3: every done step records (res[0], res[1]), whatever set done. Done comes only from the
    // three task functions (with or without an argument error) and from a user observation equal to
    // "Error: ###STOP###"; the Session already gives the Error observations [0, 0] (§2.1 step 5), so they are
    // recorded as [0, 0].
    result_.attempts.push_back({step.reward.function_acc, step.reward.result_acc});
    // The user hears of attempts whose tool actually ran (an argument error tells it nothing about the
    // result). The scripted user reacts to them; the LLM user of the original sees none of this.
    if (user_ != nullptr && step.scored) user_->note_attempt(decision.action.name, step.reward);
    // docs/decisions.md §3.3 single-turn: the first done step ends the episode; multi-turn: record and continue.
    if (options_.track == data::Track::kSingleTurn) {
      finished_ = true;
      result_.ending = decision.action.name == env::kRespond ? "respond" : "task_function";
    }
  } else if (decision.action.name == env::kStop) {
    // docs/decisions.md §3.3: the loop breaks on the action name "stop" (the env does not set done for it),
    // with nothing recorded.
    finished_ = true;
    result_.ending = "stop";
  }
  // Otherwise (details tool, unknown tool, a respond with malformed arguments, a multi-turn user reply) go on,
  // up to max_steps agent calls (docs/decisions.md §3.3).
  if (!finished_ && result_.steps >= options_.max_steps) {
    finished_ = true;
    result_.ending = "step_cap";
  }
  out.finished = finished_;
  return out;
}

EpisodeResult Episode::result() const {
  EpisodeResult r = result_;
  r.actions = session_.actions();
  return r;
}

EpisodeResult run_episode(const env::Environment& env, const data::Task& task, Agent& agent, env::UserChannel* user,
                          const EpisodeOptions& options) {
  Episode episode(env, task, user, options);
  const std::string& first_observation = episode.reset();

  auto t = Clock::now();
  agent.begin(task, first_observation, options.track);
  episode.add_agent_seconds(seconds_since(t));

  std::string observation;  // empty on the first next()
  // docs/decisions.md §3.3: at most max_steps iterations, each one agent (LLM) call -> action -> env.step.
  while (!episode.finished()) {
    t = Clock::now();
    AgentStep decision = agent.next(observation);
    episode.add_agent_seconds(seconds_since(t));
    observation = episode.step(decision).result.observation;
  }
  return episode.result();
}

}  // namespace pwab::runner
