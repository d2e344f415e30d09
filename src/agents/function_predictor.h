// src/agents/function_predictor.h: which task function an instruction asks for, as task-specific memory and the
// PUMA agent need it before anything else (docs/decisions.md §4.6, §5.1; decision D3).
//
// Five predictors share one interface: the fastText classifier trained on the train split, keyword rules, a
// function file written by another model (the original's `--puma_function_file`), a chat prompt to the run's
// LLM, and PUMA's own function-identification prompt (one template for training and inference, D9) sent as a
// raw-text completion to the run's model. The LLM predictors call the episode's model, so their tokens and cost
// are booked under the task like every other call of the agent.
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "agents/agent.h"
#include "agents/function_classifier.h"
#include "llm/chat.h"

namespace pwab::agents {

//! Which model predicts the task function (`--agent-opt function_model=`).
enum class FunctionModel {
  kFastText,  //!< the heuristic's fastText classifier, trained on the train split (keyword rules without one)
  kKeywords,  //!< keyword rules only
  kFile,      //!< predictions read from `function_file` (e.g. `pwab puma predict` or the original's output)
  kLlm,       //!< a chat prompt to the run's LLM (`--model`) naming the three task tools
  kPuma,      //!< PUMA's function prompt (puma_prompt.h) completed as raw text by the run's model
};

std::string_view to_string(FunctionModel m);
//! "fasttext" | "keywords" | "llm" | "puma" ("file" is chosen by giving function_file); UsageError naming `who`
//! and the choices otherwise.
FunctionModel parse_function_model(std::string_view value, std::string_view who);

//! A prediction and what it cost.
struct FunctionGuess {
  std::string function;  //!< as predicted (trimmed); may name no task tool (docs/decisions.md D3: a wrong function,
                         //!< never review)
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

class FunctionPredictor {
 public:
  //! Builds the predictor: trains or loads the classifier under `cache_dir` (kFastText), reads `function_file`
  //! (kFile: a JSON object instruction → tool name, or → a list whose first element is the tool). UsageError
  //! naming `who` when the file cannot be read or an LLM predictor has no LLM in `context`.
  static std::unique_ptr<FunctionPredictor> make(FunctionModel model, const std::filesystem::path& function_file,
                                                 const AgentContext& context, std::string_view who);
  ~FunctionPredictor();

  FunctionModel model() const { return model_; }
  //! Whether predict() calls an LLM (then it needs the episode's model).
  bool needs_llm() const { return model_ == FunctionModel::kLlm || model_ == FunctionModel::kPuma; }
  //! The function for `instruction`. `llm` is the episode's model (used by kLlm and kPuma only; UsageError when
  //! null then); llm::InfraError passes through. Thread-safe.
  FunctionGuess predict(std::string_view instruction, llm::ChatModel* llm) const;
  //! For manifests: "fasttext <hash>", "keyword rules", "file <hash>", "llm <model>/<prompt version>", "puma
  //! <model>/<prompt version>".
  std::string description() const;

 private:
  FunctionPredictor(FunctionModel model, const LlmAccess& access);
  FunctionGuess ask_chat(std::string_view instruction, llm::ChatModel& llm) const;
  FunctionGuess ask_puma(std::string_view instruction, llm::ChatModel& llm) const;

  FunctionModel model_;
  const LlmAccess& access_;
  std::unique_ptr<FunctionClassifier> classifier_;
  std::map<std::string, std::string, std::less<>> file_;
  std::string file_hash_;
};

//! The chat prompt of the kLlm predictor (our own words): what the three task tools do, and to answer with one
//! tool name only.
std::string function_choice_prompt();
//! The tool a free-text answer names: the first of the three task tool names it contains (earliest position);
//! else the answer's first line, trimmed (an unknown function under docs/decisions.md D3).
std::string function_from_answer(std::string_view answer);

}  // namespace pwab::agents
