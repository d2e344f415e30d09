// bench/serve/ws_load.h: many OpenEnv WebSocket sessions at once against `pwab serve`, as the rollout workers of
// an RL engine drive it: each session plays episodes from a shared list (reset, then its steps), optionally
// waiting a think time before each step (the policy generating its next action), and every step's latency is
// measured by the client. One client thread (asio) carries every session.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace pwab::bench {

//! One episode as messages: the reset and the steps, and the reward its last step must carry.
struct ScriptedEpisode {
  std::string reset;               //!< {"type": "reset", "data": {...}}
  std::vector<std::string> steps;  //!< {"type": "step", "data": {...}}
  double expected_reward = 0;
};

struct LoadOptions {
  int port = 0;
  int sessions = 1000;
  //! Mean think time before each step, seconds (drawn uniformly from [0, 2 × mean]); 0 = none.
  double think_mean_s = 0;
};

struct LoadResult {
  double seconds = 0;  //!< from the moment every session is connected until the last episode ends
  std::size_t steps = 0, resets = 0, episodes = 0;
  std::vector<double> step_latency_s;   //!< client-side, send to answer, per step
  std::vector<double> step_done_at_s;   //!< when each step's answer arrived, seconds since the start
  std::vector<double> reset_latency_s;
  std::size_t failures = 0;             //!< sessions that failed (connect, an error answer, a closed socket)
  std::size_t wrong_rewards = 0;        //!< episodes whose final reward or done flag differed from the script
  std::string first_failure;
};

//! Plays every episode once across the sessions (each session takes the next unplayed one).
LoadResult run_ws_load(const std::vector<ScriptedEpisode>& episodes, const LoadOptions& options);

//! Steps per second in the steady part of a run: between the moments the 10% and the 90% marks of its steps
//! were answered (the start, when every session resets at once, and the tail, when sessions run out of episodes,
//! are left out).
double steady_steps_per_s(const LoadResult& result);
//! The latencies of the steps answered in that steady part.
std::vector<double> steady_step_latencies(const LoadResult& result);

}  // namespace pwab::bench
