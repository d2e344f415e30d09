// src/puma/dialogue_data.h: multi-turn SFT examples, made from a teacher agent's own multi-turn episodes against the
// scripted user (issue 40; docs/puma.md "Multi-turn data").
//
// PUMA's single-turn examples teach one call per task, so a model trained on them alone never answers the user nor
// stops: every multi-turn episode runs to the step cap repeating its call. Here a teacher (the heuristic agent, which
// calls, asks for feedback, folds the user's answer into the next call and stops once the user is satisfied) plays
// each train task in the multi-turn track, and every one of its steps after the first becomes an example: the prompt
// the puma agent would see at that step (the ground-truth tool, the task's memory, the conversation so far as
// agents::PumaDialogue writes it), and the teacher's action as PUMA writes actions (agents::puma_action's inverse):
// the parameter of a call, "Say: …" for a respond, "stop". The first step is left out: its prompt is the
// single-turn prompt, whose example (the call) is already in the parameter data.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/puma_agent.h"
#include "agents/puma_prompt.h"
#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "puma/prepare.h"

namespace pwab::puma {

struct DialogueOptions {
  int max_steps = 10;  //!< the multi-turn track's step cap (docs/decisions.md §3.3)
  uint64_t seed = 1;   //!< the scripted user's seed (mixed with each task's key, sim::ScriptedUser)
};

//! What the teacher's episodes gave.
struct DialogueReport {
  int episodes = 0;
  int examples = 0;
  int skipped = 0;    //!< episodes left out: the teacher called a tool other than the task's function
  int calls = 0;      //!< examples whose target is a call's parameter
  int responds = 0;   //!< "Say: …"
  int stops = 0;      //!< "stop"
  int teacher_steps = 0;  //!< the teacher's steps over all its episodes (Avg. Steps = teacher_steps / episodes)
};

//! The text PUMA writes for a recorded action of a task of type `type` (the inverse of agents::puma_action): a
//! search query, the ASINs joined with ", " (the last `recommend_length`, as recommend_label keeps them), the review
//! text, "Say: " + the message of a respond, or "stop". With `references` (a numbered recommendation memory,
//! agents::puma_references), an ASIN among them is written as its number (1 + its first place) instead. Nullopt for
//! any other tool or malformed arguments.
std::optional<std::string> puma_text_of_action(const env::Action& action, data::TaskType type, int recommend_length,
                                               const std::vector<std::string>& references = {});

//! The teacher's multi-turn episodes of `tasks` (one each, in order) turned into examples (the task's key, its
//! type, the prompt, the target, the memory). Deterministic for a deterministic teacher and the same seed.
std::vector<Example> dialogue_examples(const env::Environment& env, const agents::AgentFactory& teacher,
                                       const std::vector<const data::Task*>& tasks, const embed::Embedder& embedder,
                                       const agents::TokenCounter& counter, const PrepareOptions& prepare,
                                       const DialogueOptions& options, DialogueReport* report = nullptr);

}  // namespace pwab::puma
