// src/agents/puma_prompt.h: PUMA's prompts, memory and output mapping, as ONE code path for the SFT data, the
// DPO data, offline generation and the runtime `puma` agent (docs/decisions.md §4.6b, §5.1, §5.2; decision D9).
//
// The training layout of §5.2 is the only template: a first line (our own words), "### Instruction:" directly
// followed by the instruction (plus the product block for review tasks), a line of two spaces, "Memory: ",
// "Tool: ", and "### Tool Parameter:\n", after which the model writes the parameter. The memory is the task's
// most relevant visible behaviours rendered for the task type (task_memory.h, no header, recommend items newest
// first so the newest survive the cut), cut to a token budget. The only differences between paths are the
// values filled in: ground truth in training, predictions at inference (an unknown tool follows D3).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/task_memory.h"
#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "tok/tokenizer.h"

namespace pwab::agents {

//! Changes whenever a PUMA prompt's wording or layout, or the mapping of its output to actions, changes: a model is
//! trained for one version, and run manifests echo it. 2: recommendation numbers (puma_action, issue 40).
inline constexpr std::string_view kPumaPromptsVersion = "pwab-puma-prompts/2";

//! The function-identification prompt (docs/decisions.md §5.1 layout, first line ours), ending with "### Tool:\n".
std::string puma_function_prompt(std::string_view instruction);

//! The product a review task is about, as the prompt shows it (docs/decisions.md §4.6b; labels exact, lead-in ours):
//! "\nProduct in question:\nTitle: …\nPrice: …\nStore: …\nMain Category: …\n" (values as Python's str()).
std::string puma_product_block(const data::Product& product);

//! The instruction part of the parameter prompt: the instruction, then the product block when `type` is review.
std::string puma_instruction_text(const data::Dataset& ds, const data::Task& task, std::optional<data::TaskType> type);

//! The parameter prompt (docs/decisions.md §5.2 layout, first line ours), ending with "### Tool Parameter:\n".
std::string puma_param_prompt(std::string_view instruction_text, std::string_view memory, std::string_view tool);

//! The text the model generated after a prompt, as the parameter: the part after the last "### Tool
//! Parameter:\n" (or "### Tool:\n" for function prompts) when a server echoed the prompt, trimmed.
std::string puma_generated_part(std::string_view generated, std::string_view marker);

//! The function a completion of the function prompt names: its first line after "### Tool:\n", trimmed.
std::string puma_function_from_completion(std::string_view generated);

//! Cuts text to a number of model tokens, as the model's tokenizer counts them.
class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  //! The longest prefix of `text` that is at most `max_tokens` tokens once the model's BOS token is counted
  //! (docs/decisions.md §5.2 step 3: 768 → 767 content tokens). Never splits a UTF-8 character.
  virtual std::string truncate(std::string_view text, int max_tokens) const = 0;
  //! For manifests, e.g. "approximate-llama/1" or "sentencepiece <hash>".
  virtual std::string describe() const = 0;
};

//! A stand-in for the LLaMA-2 tokenizer when the model's own is not given: each run of letters counts
//! 1 + (length − 1) / 6 tokens, each digit, newline, punctuation mark or other non-ASCII character one, spaces
//! none. Within ~15% of LLaMA-2's count on English product text (docs/agents/puma.md).
std::unique_ptr<TokenCounter> approximate_token_counter();
//! The approximate count of `text` (no BOS).
int approximate_token_count(std::string_view text);
//! The model's own count (tok::truncate_to_tokens: BOS counted, decoded without special tokens). Long texts
//! are first cut to a generous approximate prefix at a space, so a 100-item memory is not encoded whole.
std::unique_ptr<TokenCounter> tokenizer_token_counter(std::shared_ptr<const tok::Tokenizer> tokenizer);

struct PumaMemoryOptions {
  int k = 100;           //!< relevant behaviours retrieved (docs/decisions.md §5.2: mem_length 100)
  int max_tokens = 768;  //!< the memory's token budget, BOS included (docs/decisions.md §5.2: mem_token_length 768)
  RelevanceText relevance = RelevanceText::kFull;
  const BehaviourVectors* cache = nullptr;  //!< for kCompact
  //! How a recommendation memory shows its items (task_memory.h RecommendLayout): the original's title, category
  //! and ASIN, or one short "ASIN (category)" line each, so that a small budget still shows the history the label
  //! copies (docs/puma.md "Recommendation memory").
  RecommendLayout recommend_layout = RecommendLayout::kFull;
  int recommend_max_tokens = 0;  //!< the recommendation memory's budget; 0: max_tokens
};

//! The token budget of a memory for the task type `type` (recommend_max_tokens when set, else max_tokens).
int puma_memory_budget(const PumaMemoryOptions& options, std::optional<data::TaskType> type);

//! "full" / "asins" / "numbered", and back (UsageError naming `what` for anything else).
std::string_view to_string(RecommendLayout layout);
RecommendLayout parse_recommend_layout(std::string_view text, std::string_view what);

//! PUMA's memory of `task` for the task type `type`: the k most relevant visible behaviours rendered by
//! render_task_memory (no header, recommend newest first), cut by `counter` to the budget. "none" when the
//! history is empty, `type` is unset (an unknown function, docs/decisions.md D3) or k is 0 (no memory: the ablation
//! "w/o task-specific memory").
std::string puma_memory(const data::Dataset& ds, const data::Task& task, std::optional<data::TaskType> type,
                        const embed::Embedder& embedder, const PumaMemoryOptions& options,
                        const TokenCounter& counter);

//! The ASINs a recommendation parameter may name by number: the task's visible history, newest first, so that
//! "1" is the newest (RecommendLayout::kNumbered numbers its lines so).
std::vector<std::string> puma_references(const data::Dataset& ds, const data::Task& task);
//! The same for a parameter of the function of `type`: empty unless it is recommendation (only there do numbers
//! name items; elsewhere a number is text).
std::vector<std::string> puma_references(const data::Dataset& ds, const data::Task& task,
                                         std::optional<data::TaskType> type);

//! Maps a generated parameter to the environment action (docs/decisions.md §4.6b, D2, D3): "Say: …" → respond with
//! the text, "stop…" → stop; otherwise by the predicted function's type: search → {"query"}, review → {"review"},
//! recommend → {"product_sequence"} split on ',' and trimmed, in the given order, empty pieces dropped; a piece
//! that is a number from 1 to references.size() (at most 4 digits, no leading zero, so never an ISBN-10 ASIN)
//! stands for references[n − 1], any other piece for itself. A function naming no task tool becomes an action of
//! that name (the environment answers "Unknown action": a wrong function, never review).
env::Action puma_action(std::string_view parameter, std::string_view predicted_function,
                        const std::vector<std::string>& references = {});

}  // namespace pwab::agents
