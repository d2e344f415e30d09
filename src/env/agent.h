// src/env/agent.h: what an agent is to the environment: something that picks the next action of an episode.
//
// Agents (src/agents/), the runner (src/runner/) and the server (src/serve/) all meet here, below the runner,
// so the runner can build agents without agents depending on it. The episode rules that drive an Agent are in
// runner/episode.h.
#pragma once
#include <string>

#include "data/types.h"
#include "env/environment.h"
#include "data/track.h"

namespace pwab::env {

//! What an agent decides after seeing the conversation so far: a tool call, or a text reply as the action
//! named "respond" with arguments {"content": <text>}. Token counts are those of the LLM call that produced it.
struct AgentStep {
  Action action;
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

//! One instance per episode.
class Agent {
 public:
  virtual ~Agent() = default;
  //! Called once, before the first next(), with the task and the environment's first observation.
  virtual void begin(const data::Task& task, const std::string& first_observation, data::Track track) = 0;
  //! The next action given the previous action's observation (empty on the first call). One call = one step
  //! (one LLM call).
  virtual AgentStep next(const std::string& observation) = 0;
};

}  // namespace pwab::env
