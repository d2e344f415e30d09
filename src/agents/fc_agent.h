// src/agents/fc_agent.h: the GPT function-calling agent `fc` (docs/decisions.md §4.2) with the memory baselines none /
// random / last / relevant and task-specific memory (§4.6a, the "PUMA (gpt)" row).
//
// An episode is a ToolChatAgent conversation (tool_chat_agent.h) with the tools the environment offers (search,
// recommend, review, stop: the details tool is left out, as the original does) and a system message that is the
// prompt with the memory appended unless it is "none". The model comes from AgentContext::llm, metered under the
// task's key and the agent role. docs/agents/fc.md has the prompts, renderings and deviations.
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "agents/agent.h"
#include "agents/function_predictor.h"
#include "agents/memory.h"
#include "agents/task_memory.h"

namespace pwab::agents {

//! Changes whenever a prompt's wording changes (echoed by config_json(), so a resume refuses a mix).
inline constexpr std::string_view kFcPromptsVersion = "pwab-fc-prompts/1";

//! The environment's system prompt (docs/decisions.md §2.5, our own words): an opening line, a blank line, "Rules:" and
//! the rules, ending with a newline. Multi-turn states the step budget `max_steps`.
std::string fc_system_prompt(data::Track track, int max_steps);
//! The prompt that replaces it under task-specific memory (docs/decisions.md §4.6a, our own words); same layout.
std::string taskspec_system_prompt(data::Track track, int max_steps);

//! Everything that changes the fc agent's behaviour besides the LLM settings (echoed by config_json()).
struct FcOptions {
  MemoryStrategy memory = MemoryStrategy::kNone;
  int memory_length = 10;  //!< docs/decisions.md D1
  RelevanceText relevance = RelevanceText::kFull;  //!< relevant and taskspec retrieval text (kFull: the original)
  FunctionModel function_model = FunctionModel::kFastText;
  //! kFile: a JSON object instruction → tool name, or → a list whose first element is the tool name (the
  //! original's function file). An instruction it does not hold, or any other value, is an unknown function.
  std::filesystem::path function_file;
  int max_steps = 10;  //!< the step budget the multi-turn prompts state
};

//! Reads AgentOptions: memory "" (none) | none | random | last | relevant | taskspec, memory_length ≥ 1, and the
//! extra keys `relevance` (full | compact), `function_model` (fasttext | keywords | llm | puma), `function_file` (PATH, sets
//! function_model to file) and `max_steps` (default `run_max_steps`, the run's cap). UsageError for anything else.
FcOptions parse_fc_options(const AgentOptions& options, int run_max_steps = 10);

class FcAgentFactory final : public AgentFactory {
 public:
  //! UsageError when the context has no LLM (`llm.open` empty) or no dataset, when relevant or taskspec memory
  //! has no embedder, or when the function file cannot be read. Taskspec trains or loads the function classifier
  //! under context.cache_dir.
  FcAgentFactory(FcOptions options, const AgentContext& context);
  ~FcAgentFactory() override;
  FcAgentFactory(const FcAgentFactory&) = delete;  // its agents point into it
  FcAgentFactory& operator=(const FcAgentFactory&) = delete;

  std::string name() const override { return "fc"; }
  //! {"agent": "fc", "model", "temperature", "max_tokens", "seed", "memory", "memory_length", "relevance",
  //! "prompts", "function_model", "embedder", "max_steps"}.
  std::string config_json() const override;
  //! Opens the episode's model: context.llm.open(data::task_key(task), llm::Role::kAgent).
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  //! The task-function predictor of taskspec memory (null otherwise).
  const FunctionPredictor* predictor() const { return predictor_.get(); }
  //! The task function predicted for taskspec memory without an LLM call ("" when memory is not taskspec;
  //! UsageError for the llm and puma predictors, which need the episode's model: see FunctionPredictor).
  std::string predicted_function(const data::Task& task) const;
  //! The episode's system message: the prompt, then the memory unless it is "none" (baselines: prompt + memory;
  //! taskspec: its own prompt + "\n" + memory for `predicted_function`, or the plain prompt when the memory is
  //! "none"). The two-argument form predicts the function itself (offline predictors only).
  std::string system_message(const data::Task& task, data::Track track, std::string_view predicted_function) const;
  std::string system_message(const data::Task& task, data::Track track) const {
    return system_message(task, track, predicted_function(task));
  }
  const FcOptions& options() const { return options_; }

 private:
  FcOptions options_;
  AgentContext context_;
  std::unique_ptr<FunctionPredictor> predictor_;
  std::unique_ptr<BehaviourVectors> vectors_;
};

}  // namespace pwab::agents
