// src/puma/prepare.h: PUMA's training data from a dataset's tasks (docs/decisions.md §5.1, §5.2; decisions D8, D9).
//
// Two example sets, both built with the prompt code the runtime agent uses (agents/puma_prompt.h), so training
// and inference see the same text:
// - function identification: the function prompt of the instruction → the ground-truth tool name;
// - parameters: the parameter prompt with the ground-truth tool, the task-specific memory (the 100 most relevant
//   visible behaviours cut to 768 tokens) and, for review, the product block → a pseudo-label: a search query
//   (from an LLM when one is given, else from the heuristic agent's query builder; the target's title on the test
//   split, used for the evaluation loss only), the last 30 same-category ASINs of the visible history for
//   recommendations (D8 when there are none), the true review text for reviews.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/puma_prompt.h"
#include "data/dataset.h"
#include "embed/embedder.h"
#include "llm/chat.h"

namespace pwab::puma {

//! One training or evaluation example: a prompt and the text the model should write after it.
struct Example {
  std::string task;         //!< runner::task_key of the task, e.g. "train/12"
  std::string instruction;
  data::TaskType type = data::TaskType::kSearch;
  std::string prompt;
  std::string target;
  std::string memory;       //!< parameter examples: the memory as cut into the prompt ("" for function examples)
};

//! docs/decisions.md D8: what a recommendation label is when the visible history has nothing of the target's category.
enum class RecommendFallback {
  kRecent,  //!< the most recent visible behaviours of any category (up to 30, time order); skipped when none
  kSkip,    //!< no parameter example for the task
};

struct PrepareOptions {
  agents::PumaMemoryOptions memory{};  //!< k = 100, 768 tokens (docs/decisions.md §5.2)
  RecommendFallback recommend_fallback = RecommendFallback::kRecent;
  int recommend_length = 30;
};

//! What preparation did, for the log and the manifest.
struct PrepareReport {
  int tasks = 0;
  int examples = 0;
  int recommend_fallbacks = 0;  //!< labels taken by the docs/decisions.md D8 fallback
  int skipped = 0;              //!< tasks without an example (docs/decisions.md D8 skip, or no visible history for a
                                //!< fallback)
  int search_labels_llm = 0;
  int search_labels_heuristic = 0;
};

//! Writes a search query for a task given its full (uncut) task-specific memory. Thread-safe.
using SearchLabeler = std::function<std::string(const data::Task& task, std::string_view full_memory)>;

//! The heuristic agent's query for the task (its instruction descriptors; docs/agents/heuristic.md).
SearchLabeler heuristic_search_labeler(const data::Dataset& ds, const embed::Embedder& embedder);

//! docs/decisions.md §5.2's pseudo-labeler: a system-only chat request (our wording of its rules, then the instruction,
//! the memory and the tool) at temperature 0; the reply, trimmed, is the label. `model` must outlive the labeler.
SearchLabeler llm_search_labeler(llm::ChatModel& model, std::string model_name);
//! The labeler's prompt text for one task.
std::string search_label_prompt(std::string_view instruction, std::string_view full_memory);

//! Function-identification examples of a split, in task order.
std::vector<Example> function_examples(const data::Dataset& ds, data::Split split);

//! The recommendation label of `task` (docs/decisions.md §5.2, D8): the parent ASINs of the visible history with the
//! target's main category, stored order, the last `length`, joined with ", ". Empty when none; `fallback` is set when
//! the D8 (a) rule supplied it. With a numbered recommendation memory (options.memory.recommend_layout) each item is
//! written as its place in the visible history counted from the newest (agents::puma_references), not its ASIN.
std::string recommend_label(const data::Dataset& ds, const data::Task& task, const PrepareOptions& options,
                            bool* fallback);

//! Parameter examples of a split, in task order. The search labeler is used on the train split only.
std::vector<Example> param_examples(const data::Dataset& ds, data::Split split, const embed::Embedder& embedder,
                                    const agents::TokenCounter& counter, const SearchLabeler& search_labeler,
                                    const PrepareOptions& options, PrepareReport* report = nullptr);

//! Examples as JSONL (one object per line: task, instruction, type, prompt, target, memory), written atomically.
void write_examples(const std::filesystem::path& file, const std::vector<Example>& examples);
//! Reads write_examples' format; DataError naming the file and line on a malformed record.
std::vector<Example> read_examples(const std::filesystem::path& file);

}  // namespace pwab::puma
