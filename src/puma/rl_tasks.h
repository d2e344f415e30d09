// src/puma/rl_tasks.h: the benchmark's tasks as RL episodes (puma/rl.h), with the benchmark's own reward.
//
// Single-turn: an episode is one parameter prompt of the prepared data (the ground-truth tool, the task-specific
// memory: what the sample step samples from), and its reward is the completion executed with the task's true
// function exactly as the score step and the fast test score it (score_parameter: rank of the target, review
// similarity; a malformed parameter is an error observation and 0); the function prompt may come first, as a turn of
// its own reward (function accuracy). Multi-turn: an episode is the puma agent in the
// multi-turn track against the scripted user, the model writing the function first and then every step's
// parameter with the conversation in its prompt (agents::PumaDialogue, the agent's own logic), under the runner's
// rules (runner::Episode: step cap, endings, attempts); its reward is the benchmark's score of the episode, the best
// attempt whose function was right (metrics::score_task).
#pragma once
#include <memory>
#include <vector>

#include "agents/puma_prompt.h"
#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "puma/prepare.h"
#include "puma/rl.h"

namespace pwab::puma {

//! One single-turn episode per example (its prompt; its task by key in `ds`). With `with_function` the episode
//! first samples the function prompt, a turn rewarded by function accuracy alone (RlEpisode::turn_reward), which
//! keeps the function where SFT left it while the parameters train. With `distinct_reviews` a review's reward is
//! its similarity times its share of distinct word 3-grams (core/text.h), so that saying one thing again is not a
//! way to a higher reward (docs/puma.md, "Reviews that repeat themselves"); the benchmark's own score is unchanged.
//! The environment and dataset must outlive the tasks.
RlTasks single_turn_rl_tasks(const env::Environment& env, const std::vector<Example>& examples,
                             bool with_function = false, bool distinct_reviews = false);

//! What multi-turn episodes need besides the tasks; every pointer must outlive the tasks.
struct MultiTurnWorld {
  const env::Environment* env = nullptr;
  const embed::Embedder* embedder = nullptr;
  agents::PumaMemoryOptions memory{};                    //!< the memory the model was trained with
  std::shared_ptr<const agents::TokenCounter> counter;   //!< the model's tokenizer
  int max_steps = 10;                                    //!< the multi-turn track's step cap
};
//! One multi-turn episode per task; the scripted user of an episode draws from the episode's seed.
RlTasks multi_turn_rl_tasks(const MultiTurnWorld& world, const std::vector<const data::Task*>& tasks);

}  // namespace pwab::puma
