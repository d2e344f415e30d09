// src/agents/memory.h: the memory of the GPT function-calling agent: the baselines none / random / last /
// relevant (docs/decisions.md §4.2) and task-specific memory (§4.6a, the "PUMA (gpt)" row), k items each (D1).
//
// Every strategy reads only the task's visible history (Dataset::visible_history: behaviours strictly before the
// task, all splits, stored order) and returns the text appended to the end of the agent's system prompt. The
// baselines render each chosen behaviour with pretty_history (task_memory.h) under a one-line header that says
// how the items were chosen; task-specific memory uses task_memory.h's per-function layout. The literal "none"
// means "no memory": the prompt is left as it is. docs/agents/fc.md shows every rendering.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/task_memory.h"
#include "data/dataset.h"
#include "embed/embedder.h"

namespace pwab::agents {

//! `--memory` of the fc agent.
enum class MemoryStrategy { kNone, kRandom, kLast, kRelevant, kTaskSpec };
std::string_view to_string(MemoryStrategy s);
//! "none" | "random" | "last" | "relevant" | "taskspec" ("" = none); UsageError otherwise.
MemoryStrategy parse_memory_strategy(std::string_view s);

//! The memory text that stands for "no memory" (the original's literal 'none').
inline constexpr std::string_view kNoMemory = "none";

//! The header of a baseline memory: a leading "\n", one sentence naming what the agent remembers of the user
//! with a parenthetical on how the items were picked and ordered, then ":\n\n". Empty for none and taskspec.
std::string_view memory_header(MemoryStrategy s);

//! The k most recent behaviours, newest first (stable: equal timestamps keep their stored order).
std::vector<const data::Behaviour*> last_memory(const std::vector<const data::Behaviour*>& history, int k);

//! The seed of a task's random memory: a mix of the run seed and the task's split and index, so a run draws the
//! same items for a task whatever the concurrency or the order tasks run in.
uint64_t random_memory_seed(uint64_t run_seed, const data::Task& task);
//! min(k, n) distinct behaviours drawn uniformly without replacement from the history sorted newest first, in
//! the order drawn (as Python's random.sample), with a generator seeded by `seed`.
std::vector<const data::Behaviour*> random_memory(const std::vector<const data::Behaviour*>& history, int k,
                                                  uint64_t seed);

//! The header, then pretty_history(item, i) of each item numbered 0.. in the given order, joined with "\n".
//! With no items: the header alone. `s` is random, last or relevant.
std::string render_baseline_memory(const data::Dataset& ds, MemoryStrategy s,
                                   const std::vector<const data::Behaviour*>& items);

struct MemoryOptions {
  int k = 10;  //!< memory length (docs/decisions.md D1); at least 1
  //! What relevance compares the instruction with: the item's pretty_history rendering (the original, default)
  //! or task_memory.h's compact text (cached per behaviour when `cache` is set).
  RelevanceText relevance = RelevanceText::kFull;
  const BehaviourVectors* cache = nullptr;
  uint64_t run_seed = 0;  //!< random memory (random_memory_seed)
};

//! The memory text of a baseline strategy (none, random, last, relevant) for `task`: "none" for none, else
//! render_baseline_memory of the chosen items (the header alone on an empty history). `embedder` is needed by
//! relevant only (UsageError when null).
std::string baseline_memory(const data::Dataset& ds, const data::Task& task, MemoryStrategy s,
                            const MemoryOptions& options, const embed::Embedder* embedder);

//! Task-specific memory for a predicted function.
struct TaskSpecMemory {
  //! The task type the predicted function solves; empty when the prediction names none of the three task
  //! functions (docs/decisions.md D3: never mapped to review).
  std::optional<data::TaskType> type;
  std::vector<MemoryItem> items;  //!< the k most relevant behaviours, best first
  //! render_task_memory(items, type): the three-line header and the items joined with "|"; "none" when the
  //! history is empty or the function is unknown.
  std::string text;
};

//! docs/decisions.md §4.6a: the k visible-history items most relevant to the instruction (as relevant memory), rendered
//! for the task type of `predicted_function` (surrounding whitespace ignored). An unknown function or an empty
//! history gives "none", never an error. `embedder` must not be null.
TaskSpecMemory taskspec_memory(const data::Dataset& ds, const data::Task& task, std::string_view predicted_function,
                               const MemoryOptions& options, const embed::Embedder& embedder);

}  // namespace pwab::agents
