// src/agents/fc_agent.cpp: the fc agent's prompts, options, factory and per-episode conversation.
#include "agents/fc_agent.h"
#include "agents/agent_options.h"
#include "agents/llm_config.h"
#include "agents/tool_chat_agent.h"

#include <utility>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_writer.h"
#include "core/sys.h"
#include "env/tools.h"
#include "env/agent.h"

namespace fs = std::filesystem;

namespace pwab::agents {

// ------------------------------------------------------------------------------------------------------------
// Prompts (docs/decisions.md §2.5, §4.6a: the same rules in our own words; the marker "Rules:" and tool names exact)
// ------------------------------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kOpening =
    "You act as a personal shopping agent for users: you look products up for them, recommend products to them, "
    "and write product reviews in their name.\n\nRules:\n";

constexpr std::string_view kRuleRequest = "- Every request tells you the user's user_id and what that user is asking for.\n";
constexpr std::string_view kRulePickTool =
    "- Pick the tool best suited to the request and call it to locate the product wanted or to produce the review "
    "wanted.\n";
constexpr std::string_view kRuleToolsVary =
    "- Requests vary, and so does the tool that serves them; the right tool called with well-chosen input gives the "
    "best outcome.\n";
constexpr std::string_view kRuleNoDialogue =
    "- There is no dialogue with the user: derive the best tool call you can from the request as given.\n";
constexpr std::string_view kRuleOneTry =
    "- You have one try only: the task is over the moment you call search_product_by_query, "
    "get_recommendations_by_history or add_product_review.\n";
constexpr std::string_view kRuleScore =
    "- Your score depends on choosing the right tool and, for searches and recommendations, on how high the target "
    "product ranks, or, for reviews, on how closely your text matches the user's actual review.\n";
constexpr std::string_view kRuleMemory =
    "- When memory about the user is provided, use it to make your tool call more personal and precise.\n";
constexpr std::string_view kRuleEarly =
    "- You may finish early; balance the number of steps you take against the quality of the results.\n";
constexpr std::string_view kRuleNoInvention =
    "- Do not invent information that neither the user nor a tool gave you, and keep your own opinions and "
    "suggestions to yourself.\n";
constexpr std::string_view kRuleOneCall =
    "- Each turn contains at most one tool call, and a turn is either a tool call or a message to the user, not "
    "both.\n";
// Task-specific memory prompts only.
constexpr std::string_view kRuleOneCallOnly = "- You get one tool call only, so give it the best input you can.\n";
constexpr std::string_view kRuleGivenTool =
    "- You are told which tool to use: call that one with the most fitting input and do not use the others.\n";
constexpr std::string_view kRuleUseMemory =
    "- Combine the request with the memory provided to work out the best possible tool input.\n";

std::string steps_rule(std::string_view lead, int max_steps) {
  return std::string(lead) + ", but you have at most " + std::to_string(max_steps) +
         " steps in total, and finishing in fewer is better.\n";
}

}  // namespace

std::string fc_system_prompt(data::Track track, int max_steps) {
  std::string p(kOpening);
  p += kRuleRequest;
  p += kRulePickTool;
  p += kRuleToolsVary;
  if (track == data::Track::kSingleTurn) {
    p += kRuleNoDialogue;
    p += kRuleOneTry;
    p += kRuleScore;
    p += kRuleMemory;
    return p;
  }
  p += steps_rule("- You may talk with the user to ask for more details or for feedback", max_steps);
  p += "- Solve the user's task accurately and efficiently; spend your effort on good tool calls rather than on "
       "repeated replies to the user.\n";
  p += "- When you are sure your tool input cannot get any better, you may finish the task by calling 'stop'.\n";
  p += "- Call 'stop' right away once the user wants to move on or says they are satisfied.\n";
  p += kRuleScore;
  p += kRuleEarly;
  p += kRuleNoInvention;
  p += kRuleOneCall;
  p += kRuleMemory;
  return p;
}

std::string taskspec_system_prompt(data::Track track, int max_steps) {
  std::string p(kOpening);
  p += kRuleRequest;
  if (track == data::Track::kSingleTurn) {
    p += kRulePickTool;
    p += kRuleNoDialogue;
    p += kRuleOneCallOnly;
    p += kRuleGivenTool;
    p += kRuleUseMemory;
    return p;
  }
  p += "- Use the tools to find the product, or write the review, that the user's request is about.\n";
  p += kRuleGivenTool;
  p += kRuleUseMemory;
  p += steps_rule("- You may use 'respond' to ask the user for more details or for feedback", max_steps);
  p += "- Solve the user's task accurately and efficiently; spend your effort on improving the tool calls rather "
       "than on repeated replies to the user.\n";
  p += "- Your score depends, for searches and recommendations, on how high the target product ranks, and, for "
       "reviews, on how closely your text matches the user's actual review.\n";
  p += "- When you are sure your inputs to the task tools cannot get any better, you may finish the task by calling "
       "'stop'.\n";
  p += "- Do not invent information that neither the user nor a tool gave you, and keep your own opinions and "
       "recommendations to yourself.\n";
  p += kRuleOneCall;
  return p;
}

// ------------------------------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------------------------------

FcOptions parse_fc_options(const AgentOptions& options, int run_max_steps) {
  OptionReader r("fc", options);
  FcOptions o;
  o.memory = r.memory_strategy();
  o.memory_length = r.memory_length(10);
  o.relevance = r.relevance(o.relevance);
  r.function_model_or_file(o.function_model, o.function_file);
  o.max_steps = r.integer("max_steps", run_max_steps, 1, kMaxOptionCount);
  r.finish();
  return o;
}

// ------------------------------------------------------------------------------------------------------------
// The agent
// ------------------------------------------------------------------------------------------------------------

namespace {

//! The tools the fc agent is offered, computed once.
const std::string& fc_tools_json() {
  static const std::string tools = env::tools_json(/*include_product_details=*/false);
  return tools;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------------
// The factory
// ------------------------------------------------------------------------------------------------------------

FcAgentFactory::FcAgentFactory(FcOptions options, const AgentContext& context)
    : options_(std::move(options)), context_(context) {
  if (!context_.llm.open)
    throw UsageError("the fc agent needs --model (and an OpenAI-compatible endpoint: --base-url / OPENAI_BASE_URL, "
                     "OPENAI_API_KEY), or --replay with a recorded --llm-cache");
  if (!context_.ds) throw UsageError("fc agent: no dataset");
  const bool retrieval = options_.memory == MemoryStrategy::kRelevant || options_.memory == MemoryStrategy::kTaskSpec;
  if (retrieval && !context_.embedder)
    throw UsageError(std::string("fc agent: ") + std::string(to_string(options_.memory)) + " memory needs an embedder");
  if (options_.memory == MemoryStrategy::kTaskSpec)
    predictor_ = FunctionPredictor::make(options_.function_model, options_.function_file, context_, "fc agent");
  if (retrieval && options_.relevance == RelevanceText::kCompact)
    vectors_ = std::make_unique<BehaviourVectors>(*context_.ds, *context_.embedder);
}

FcAgentFactory::~FcAgentFactory() = default;

std::string FcAgentFactory::config_json() const {
  const LlmAccess& llm = context_.llm;
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("agent").value("fc");
  write_llm_config(w, llm);
  w.key("memory").value(to_string(options_.memory));
  w.key("memory_length").value(options_.memory_length);
  w.key("relevance").value(options_.relevance == RelevanceText::kFull ? "full" : "compact");
  w.key("prompts").value(kFcPromptsVersion);
  w.key("max_steps").value(options_.max_steps);
  std::string function_model = "none";
  if (options_.memory == MemoryStrategy::kTaskSpec)
    function_model = predictor_->description();
  w.key("function_model").value(function_model);
  w.key("embedder").value(context_.embedder ? context_.embedder->name() : std::string());
  w.end_object();
  return out;
}

std::unique_ptr<env::Agent> FcAgentFactory::make(const data::Task& task) const {
  auto model = context_.llm.open(data::task_key(task), llm::Role::kAgent);
  if (!model) throw UsageError("fc agent: the run's LLM access gave no model");
  // An LLM function predictor asks the episode's model first; its tokens count with the first step.
  auto system = [this](const data::Task& t, data::Track track, llm::ChatModel& llm) {
    FunctionGuess guess;
    if (predictor_) guess = predictor_->predict(t.instruction, &llm);
    return SystemPrompt{system_message(t, track, guess.function), guess.prompt_tokens, guess.completion_tokens};
  };
  return std::make_unique<ToolChatAgent>(system, context_.llm, fc_tools_json(), std::move(model));
}

std::string FcAgentFactory::predicted_function(const data::Task& task) const {
  if (!predictor_) return {};
  return predictor_->predict(task.instruction, nullptr).function;
}

std::string FcAgentFactory::system_message(const data::Task& task, data::Track track,
                                           std::string_view predicted_function) const {
  const data::Dataset& ds = *context_.ds;
  MemoryOptions mo;
  mo.k = options_.memory_length;
  mo.relevance = options_.relevance;
  mo.cache = vectors_.get();
  mo.run_seed = context_.seed;
  if (options_.memory == MemoryStrategy::kTaskSpec) {
    // docs/decisions.md §4.6a: no memory (empty history, or D3's unknown function) keeps the plain prompt with no
    // tool hint.
    TaskSpecMemory m = taskspec_memory(ds, task, predicted_function, mo, *context_.embedder);
    if (m.text == kNoMemory) return fc_system_prompt(track, options_.max_steps);
    return taskspec_system_prompt(track, options_.max_steps) + "\n" + m.text;
  }
  std::string prompt = fc_system_prompt(track, options_.max_steps);
  std::string memory = baseline_memory(ds, task, options_.memory, mo, context_.embedder);
  // docs/decisions.md §4.1: the memory goes at the end of the system prompt unless it is the literal "none".
  if (memory != kNoMemory) prompt += memory;
  return prompt;
}

}  // namespace pwab::agents
