// The episode loop of reference §3.3, written once for every agent.
#include "runner/episode.h"

#include <chrono>
#include <utility>

#include "core/error.h"
#include "env/tools.h"
#include "sim/scripted_user.h"

namespace pwab::runner {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int loop_bound(int max_steps_flag, bool react_style) {
  // §3.3: "max_steps if > 0 else 10" for function-calling agents and PUMA; ReAct uses 3 when max_steps = -1.
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

EpisodeResult run_episode(const env::Environment& env, const data::Task& task, Agent& agent, env::UserChannel* user,
                          const EpisodeOptions& options) {
  if (options.max_steps < 1) throw UsageError("episode max_steps must be at least 1");
  // §3.3: run.py refuses a user simulator in the single-turn track (max_steps -1 with user_mode != "no").
  if (options.track == Track::kSingleTurn && user != nullptr)
    throw UsageError("the single-turn track takes no user simulator");
  const bool single_turn = options.track == Track::kSingleTurn;
  auto* scripted = dynamic_cast<sim::ScriptedUser*>(user);

  EpisodeResult result;
  result.type = task.type;
  env::Session session(env, task, user);

  auto t = Clock::now();
  result.first_observation = session.reset();
  result.seconds_env += seconds_since(t);

  t = Clock::now();
  agent.begin(task, result.first_observation, options.track);
  result.seconds_agent += seconds_since(t);

  std::string observation;  // empty on the first next()
  result.ending = "step_cap";
  // §3.3: at most max_steps iterations, each one agent (LLM) call -> action -> env.step.
  while (result.steps < options.max_steps) {
    t = Clock::now();
    AgentStep decision = agent.next(observation);
    result.seconds_agent += seconds_since(t);
    ++result.steps;
    result.prompt_tokens += decision.prompt_tokens;
    result.completion_tokens += decision.completion_tokens;

    t = Clock::now();
    env::StepResult step = session.step(decision.action);
    result.seconds_env += seconds_since(t);
    observation = step.observation;

    if (step.done) {
      // §3.3: every done step records (res[0], res[1]), whatever set done. Done comes only from the three task
      // functions (with or without an argument error) and from a user observation equal to "Error: ###STOP###";
      // the Session already gives the Error observations [0, 0] (§2.1 step 5), so they are recorded as [0, 0].
      result.attempts.push_back({step.reward.function_acc, step.reward.result_acc});
      // The scripted user reacts to attempts whose tool actually ran (an argument error tells it nothing about
      // the result); the LLM user of the original sees none of this, so the scores are unaffected.
      if (scripted != nullptr && step.scored) scripted->note_attempt(decision.action.name, step.reward);
      if (single_turn) {
        // §3.3 single-turn: the first done step ends the episode.
        result.ending = decision.action.name == env::kRespond ? "respond" : "task_function";
        break;
      }
      // §3.3 multi-turn: record and continue.
      continue;
    }
    // §3.3: the loop breaks on the action name "stop" (the env does not set done for it), with nothing recorded.
    if (decision.action.name == env::kStop) {
      result.ending = "stop";
      break;
    }
    // Details tool, unknown tool, a respond with malformed arguments, or (multi-turn) a user reply: go on.
  }
  result.actions = session.actions();
  return result;
}

}  // namespace pwab::runner
