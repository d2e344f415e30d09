// src/agents/react_agent.h: the text-protocol agents `react` and `reflection` (docs/decisions.md §4.3; the paper's rows
// "ReAct" and "Reflection").
//
// No native tools: the system message is the environment's prompt (fc_system_prompt), the tool schemas as JSON
// under "# Available tools", an instruction describing the Thought / Action / Arguments reply format, then the
// memory (memory.h, every option including none). Each next() asks the model for one reply in that format and
// turns it into one action (parse_react_reply); a reply that cannot be parsed is re-asked with a short
// correction up to `parse_retries` times (each re-ask a new sample, so a cache does not replay the bad reply),
// after which the last reply's text is sent as a `respond` (the model's failure, scored by the environment as
// any text reply). Tool results come back as a user message "API output: <observation>", user answers as the
// plain text. `reflection` adds, after each user reply, an extra LLM call (not a step; booked under role
// "other") whose text is appended to the conversation as an assistant message. docs/agents/react.md.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agents/agent.h"
#include "agents/fc_agent.h"
#include "agents/function_classifier.h"
#include "agents/memory.h"
#include "env/environment.h"

namespace pwab::agents {

//! Changes whenever a ReAct or reflection prompt's wording changes (echoed by config_json()).
inline constexpr std::string_view kReactPromptsVersion = "pwab-react-prompts/1";

//! The format instruction appended after the tool list (our own words; markers Thought:/Action:/Arguments:,
//! "respond" and "Available tools" exact). Starts with "\n", ends with "\n".
std::string_view react_instruction();
//! The reflection prompt with its three sections filled: the instruction, the conversation so far, the feedback.
std::string reflection_prompt(std::string_view instruction, std::string_view actions, std::string_view feedback);

//! The outcome of parsing one reply.
struct ReactParse {
  std::optional<env::Action> action;  //!< set when the reply could be parsed
  std::string problem;                //!< why not (empty when parsed)
};
//! Parses a reply in the Thought / Action / Arguments format (rules in docs/agents/react.md): code fences and
//! prose around the block are ignored; markers are matched case-insensitively at a line start (after spaces,
//! `*`, `#`, `-`), with or without text after the colon; the last Action marker and the first Arguments marker
//! after it count. `respond` (any case) takes the text after Arguments as the message ({"content": ...}, or a
//! JSON string / {"content": "..."} as written); a tool takes the first balanced JSON object after Arguments
//! (text after it is ignored); a tool without arguments (e.g. stop) may leave them out. Tool names matching a
//! known tool case-insensitively are canonicalised; unknown names pass through (the environment answers
//! "Unknown action <name>").
ReactParse parse_react_reply(std::string_view reply);

//! Everything that changes the react / reflection agents' behaviour besides the LLM settings.
struct ReactOptions {
  bool reflection = false;  //!< the `reflection` agent: a reflection after each user reply
  MemoryStrategy memory = MemoryStrategy::kNone;
  int memory_length = 10;  //!< docs/decisions.md D1
  RelevanceText relevance = RelevanceText::kFull;
  FunctionModel function_model = FunctionModel::kKeywords;  //!< taskspec memory only
  int max_steps = 10;      //!< the step budget the multi-turn prompt states
  int parse_retries = 2;   //!< re-asks after an unparseable reply (0..10)
};

//! Reads AgentOptions: memory "" (none) | none | random | last | relevant | taskspec, memory_length ≥ 1, extra keys
//! `relevance` (full | compact), `function_model` (fasttext | keywords | llm | puma), `max_steps` (default
//! `run_max_steps`, the run's cap), `parse_retries`. UsageError for anything else.
ReactOptions parse_react_options(const AgentOptions& options, bool reflection, int run_max_steps = 10);

class ReactAgentFactory final : public AgentFactory {
 public:
  //! UsageError without an LLM or dataset, or when relevant / taskspec memory has no embedder.
  ReactAgentFactory(ReactOptions options, const AgentContext& context);
  ~ReactAgentFactory() override;
  ReactAgentFactory(const ReactAgentFactory&) = delete;
  ReactAgentFactory& operator=(const ReactAgentFactory&) = delete;

  std::string name() const override { return options_.reflection ? "reflection" : "react"; }
  std::string config_json() const override;
  //! Single-turn runs get the loop bound 3 (docs/decisions.md §3.3).
  bool react_style() const override { return true; }
  //! Opens the episode's agent model (role agent) and, for reflection, a second one (role other).
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  //! The episode's system message: prompt, "\n# Available tools\n", the tools JSON, react_instruction(), then the
  //! memory (left out when it is "none"; taskspec uses its own prompt and "\n" + memory for `predicted_function`).
  //! The two-argument form predicts the function itself (offline predictors only).
  std::string system_message(const data::Task& task, data::Track track, std::string_view predicted_function) const;
  std::string system_message(const data::Task& task, data::Track track) const {
    return system_message(task, track, predictor_ ? predictor_->predict(task.instruction, nullptr).function : "");
  }
  //! The task-function predictor of taskspec memory (null otherwise).
  const FunctionPredictor* predictor() const { return predictor_.get(); }
  const ReactOptions& options() const { return options_; }

 private:
  ReactOptions options_;
  AgentContext context_;
  std::unique_ptr<FunctionPredictor> predictor_;
  std::unique_ptr<BehaviourVectors> vectors_;
};

}  // namespace pwab::agents
