// src/agents/puma_agent.h: the PUMA agent `puma` at inference time (docs/decisions.md §4.6b, decisions D1–D3, D9).
//
// Per episode: the task function is predicted once (by default with PUMA's function prompt sent to the run's
// model), the task-specific memory is built for it (the 100 most relevant visible behaviours, cut to 768
// tokens), and every step sends the parameter prompt (puma_prompt.h, the template training uses) as a raw-text
// completion to the run's model: a server that serves the fine-tuned model (vLLM with the LoRA adapter, or
// `pwab puma serve`) or any OpenAI-compatible model. The generated text is mapped to one action: "Say: …" →
// respond, "stop" → stop, otherwise the predicted tool with the text as its parameter. In multi-turn the
// conversation so far (the agent's calls and messages, the user's replies) follows the instruction in the
// prompt, so the model can act on the simulator's feedback. docs/agents/puma.md has the prompts and options.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"
#include "agents/function_predictor.h"
#include "agents/puma_prompt.h"
#include "llm/chat.h"

namespace pwab::agents {

//! Everything that changes the puma agent's behaviour besides the LLM settings (echoed by config_json()).
struct PumaOptions {
  bool memory = true;             //!< `--memory taskspec` (default) or `none` (the prompt's memory is "none")
  PumaMemoryOptions memory_options{};  //!< k = `--memory-length` (default 100), max_tokens = `memory_tokens`
  FunctionModel function_model = FunctionModel::kPuma;
  std::filesystem::path function_file;  //!< with FunctionModel::kFile
  int max_new_tokens = 256;       //!< docs/decisions.md §5.4: max_new_tokens of the parameter (overridden by the run's
                                  //!< max_tokens)
  //! A model directory (or tokenizer.model / tokenizer.json) whose tokenizer counts the memory budget; empty =
  //! the approximate LLaMA count.
  std::filesystem::path tokenizer;
  //! `rollouts=PATH`: append every completion the agent asks for (function and parameters) as one JSONL line of
  //! token ids, loss mask and sampling log-probabilities (format pwab-rollout/1, docs/agents/puma.md); the model
  //! must report its tokens (a local model, or a /v1/completions server with return_token_ids). Empty = none.
  std::filesystem::path rollouts;
  //! `copy_search=true`: on the single-turn track, the search query is decoded from the prompt's own words
  //! (llm::ChatRequest::prompt_words_only; docs/puma.md "Copy-constrained search queries"), as `pwab puma`'s cpu
  //! preset evaluates its models. Needs a model that honours it: --local-model.
  bool copy_search = false;
};

//! One completion as an RL engine trains on it: a line of format pwab-rollout/1 ({"format", "task", "episode",
//! "turn", "kind": "function" | "parameter", "prompt_ids", "completion_ids", "loss_mask", "logprobs", "text"}),
//! the loss mask 0 over the prompt's ids and 1 over the completion's, the log-probabilities 0 over the prompt.
std::string rollout_line(std::string_view task, std::string_view episode, int turn, std::string_view kind,
                         const llm::TokenTrace& tokens, std::string_view text);

//! Reads AgentOptions: memory "" | taskspec | none, memory_length ≥ 1 (default 100), and the extra keys
//! `memory_tokens` (≥ 1, default 768), `recommend_memory` (full | asins | numbered), `recommend_memory_tokens` (0 = memory_tokens),
//! `relevance` (full | compact), `function_model` (puma | fasttext | keywords
//! | llm), `function_file` (PATH), `max_new_tokens`, `tokenizer` (PATH), `rollouts` (PATH), `copy_search` (true | false). UsageError for anything
//! else.
PumaOptions parse_puma_options(const AgentOptions& options);

//! One turn of a multi-turn conversation as the PUMA prompt shows it.
struct PumaTurn {
  std::string speaker;  //!< "Agent" or "User"
  std::string text;
};
//! The conversation so far as appended to the instruction: "" with no turns, else "\n\nConversation so far:\n"
//! and one "<speaker>: <text>" line per turn.
std::string puma_dialogue_text(const std::vector<PumaTurn>& turns);

//! The puma agent's side of one episode without its model: when it stops without asking the model, the
//! conversation its prompts show, and how the model's text becomes an action. PumaAgent drives it with the run's
//! LLM; PUMA's multi-turn RL (puma/rl.h) with its own sampling, so both act exactly alike.
class PumaDialogue {
 public:
  //! `references`: what a recommendation's numbers name (puma_references; empty: numbers stand for themselves).
  explicit PumaDialogue(std::string function, std::vector<std::string> references = {})
      : function_(std::move(function)), references_(std::move(references)) {}
  //! Takes the observation of the previous action (the user's reply after a respond joins the conversation) and
  //! says whether the agent stops now without asking the model: docs/decisions.md D3, after the one call a function
  //! that names no task tool got ("Unknown action").
  bool stops_after(const std::string& observation);
  //! The action for the model's generated text (the parameter after "### Tool Parameter:\n" when a server echoed
  //! the prompt), recorded in the conversation.
  env::Action act(std::string_view generated);
  const std::vector<PumaTurn>& turns() const { return turns_; }
  const std::string& function() const { return function_; }

 private:
  std::string function_;
  std::vector<std::string> references_;
  std::vector<PumaTurn> turns_;
  bool last_was_respond_ = false;
};

class PumaAgentFactory final : public AgentFactory {
 public:
  //! UsageError without an LLM, dataset or (with memory) embedder, or when the function file cannot be read.
  //! `counter` cuts the memory to its token budget (when null: the tokenizer of options.tokenizer, else the
  //! approximate LLaMA count). A tokenizer that cannot be loaded is a UsageError naming the path.
  PumaAgentFactory(PumaOptions options, const AgentContext& context, std::unique_ptr<TokenCounter> counter = {});
  ~PumaAgentFactory() override;
  PumaAgentFactory(const PumaAgentFactory&) = delete;
  PumaAgentFactory& operator=(const PumaAgentFactory&) = delete;

  //! Where a traced model appends its rollout lines (PumaOptions::rollouts).
  using RolloutLogAccess = std::function<void(const std::string& line)>;

  std::string name() const override { return "puma"; }
  //! {"agent": "puma", "model", "temperature", "max_tokens", "seed", "memory", "memory_length", "memory_tokens",
  //! "token_counter", "relevance", "prompts", "function_model", "embedder", "max_new_tokens"}.
  std::string config_json() const override;
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  const PumaOptions& options() const { return options_; }
  const FunctionPredictor& predictor() const { return *predictor_; }
  //! The task's memory for a predicted function ("none" without memory, for an unknown function or an empty
  //! visible history).
  std::string memory(const data::Task& task, std::string_view predicted_function) const;
  //! What the numbers of a recommendation parameter name for a predicted function (puma_references when it is the
  //! recommendation tool, else none).
  std::vector<std::string> references(const data::Task& task, std::string_view predicted_function) const;
  //! The parameter prompt of a step: the instruction (+ product block for review) + the dialogue so far.
  std::string prompt(const data::Task& task, std::string_view predicted_function, std::string_view memory,
                     const std::vector<PumaTurn>& dialogue) const;

 private:
  PumaOptions options_;
  AgentContext context_;
  std::unique_ptr<TokenCounter> counter_;
  std::unique_ptr<FunctionPredictor> predictor_;
  std::unique_ptr<BehaviourVectors> vectors_;
  struct RolloutLog;
  std::shared_ptr<RolloutLog> rollouts_;  // options.rollouts, open for appending
};

}  // namespace pwab::agents
