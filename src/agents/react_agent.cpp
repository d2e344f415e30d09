// src/agents/react_agent.cpp: the ReAct / Reflection prompts, the reply parser, options, factory and episode.
#include "agents/react_agent.h"
#include "agents/agent_options.h"
#include "agents/llm_config.h"
#include "agents/tool_chat_agent.h"

#include <utility>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/json_depth.h"
#include "core/error.h"
#include "core/json_writer.h"
#include "core/text.h"
#include "env/tools.h"
#include "env/agent.h"

namespace fs = std::filesystem;

namespace pwab::agents {

// ------------------------------------------------------------------------------------------------------------
// Prompts (docs/decisions.md §4.3: the same layout and meaning, in our own words)
// ------------------------------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kReactInstruction = R"(
# Instruction:
You are a shopping assistant who personalises its help: serve the user with the tools listed above and respect every rule given above.
Answer each step in the six-line layout shown below and nothing else (do not include the ``` marks):

```
Thought:
A single line of reasoning about the situation that leads to your choice. Nothing more.
Action:
The name of the action to take: one of the "Available tools", or "respond" to send a message to the user.
Arguments:
The action's arguments as a JSON object on one line. For "respond", write the message to the user instead.
```

Only use argument values you actually know; never make up values or leave placeholders.

For instance, if the user asked "How much does a return flight from Paris to Rome cost next Friday?" and this tool were available
```json
{
    "type": "function",
    "function": {
        "name": "find_flight_price",
        "description": "Looks up the cheapest fare for a trip",
        "parameters": {
            "type": "object",
            "properties": {
                "route": {
                    "type": "string",
                    "description": "Origin and destination cities, such as Paris-Rome",
                },
                "trip": {
                    "type": "string",
                    "enum": ["one-way", "return"],
                    "description": "Whether the user travels back as well.",
                },
            },
            "required": ["route", "trip"],
        },
    }
}
```

a good step would be:
```
Thought:
The user wants a fare for a round trip between Paris and Rome, so find_flight_price with a return trip answers it.
Action:
find_flight_price
Arguments:
{"route": "Paris-Rome", "trip": "return"}
```

Be helpful and keep to the rules at every step.
Work out which kind of task the user is asking for and use the tool made for it.
Calling the wrong tool scores nothing, however good its result would have been.
)";

constexpr std::string_view kReflectionHead = R"(
What follows is the record of an earlier attempt of yours at a task you were given in an environment.
During an attempt you could call tools and give them concrete parameters.
Now think about what the user said in response to that attempt.
Look again at the tool you picked and at the parameters you gave it.
Find what went wrong, in the choice of tool or in its parameters.
Write a brief new plan that corrects those mistakes, so that next time you choose the right tool and give it fitting parameters.

Instruction:
)";

constexpr std::string_view kCorrection =
    "Your last reply did not follow the required format. Reply again with exactly one step: a line \"Thought:\" "
    "and your reasoning, a line \"Action:\" and the action's name, a line \"Arguments:\" and its JSON arguments (or, "
    "for respond, your message to the user).";

}  // namespace

std::string_view react_instruction() { return kReactInstruction; }

std::string reflection_prompt(std::string_view instruction, std::string_view actions, std::string_view feedback) {
  std::string p(kReflectionHead);
  p += instruction;
  p += "\n\nYour action:\n";
  p += actions;
  p += "\n\nUser feedback:\n";
  p += feedback;
  return p;
}

// ------------------------------------------------------------------------------------------------------------
// Parsing
// ------------------------------------------------------------------------------------------------------------

namespace {

enum class Marker { kNone, kThought, kAction, kArguments };

struct Line {
  Marker marker = Marker::kNone;
  std::string rest;  // the text after the marker's colon (or the whole line when not a marker)
};

//! Classifies one line: a marker word (any case) after optional spaces, '*', '#', '-', '>' and '`', then
//! optional spaces or '*', then ':'.
Line classify(std::string_view raw) {
  Line out;
  out.rest = std::string(raw);
  std::size_t i = 0;
  while (i < raw.size() && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '*' || raw[i] == '#' || raw[i] == '-' ||
                            raw[i] == '>' || raw[i] == '`'))
    ++i;
  std::string lower = ascii_lower(raw.substr(i));
  static const std::pair<std::string_view, Marker> kWords[] = {
      {"thought", Marker::kThought}, {"action input", Marker::kArguments}, {"arguments", Marker::kArguments},
      {"action", Marker::kAction}};
  for (const auto& [word, marker] : kWords) {
    if (!lower.starts_with(word)) continue;
    std::size_t j = word.size();
    while (j < lower.size() && (lower[j] == ' ' || lower[j] == '*' || lower[j] == '_')) ++j;
    if (j < lower.size() && lower[j] == ':') {
      std::size_t k = j + 1;
      while (k < lower.size() && (lower[k] == '*' || lower[k] == '_')) ++k;  // "**Action:**"
      out.marker = marker;
      out.rest = std::string(trim(raw.substr(i + k)));
      return out;
    }
  }
  return out;
}

bool is_fence(std::string_view line) { return trim(line).starts_with("```"); }

//! The first balanced JSON object in `s` (strings and escapes respected); npos-length when none closes.
std::string_view first_object(std::string_view s) {
  std::size_t start = s.find('{');
  if (start == std::string_view::npos) return {};
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = start; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{') ++depth;
    else if (c == '}' && --depth == 0) return s.substr(start, i - start + 1);
  }
  return {};
}

std::string strip_name(std::string_view s) {
  s = trim(s);
  while (!s.empty() && (s.front() == '`' || s.front() == '*' || s.front() == '"' || s.front() == '\'')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '`' || s.back() == '*' || s.back() == '"' || s.back() == '\'' || s.back() == '.'))
    s.remove_suffix(1);
  s = trim(s);
  // "search_product_by_query({...})" or "stop()": keep the name only.
  if (std::size_t p = s.find('('); p != std::string_view::npos) s = trim(s.substr(0, p));
  return std::string(s);
}

}  // namespace

ReactParse parse_react_reply(std::string_view reply) {
  std::vector<Line> lines;
  for (std::size_t pos = 0; pos <= reply.size();) {
    std::size_t nl = reply.find('\n', pos);
    if (nl == std::string_view::npos) nl = reply.size();
    std::string_view raw = reply.substr(pos, nl - pos);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (!is_fence(raw)) lines.push_back(classify(raw));
    pos = nl + 1;
  }
  std::size_t action_at = lines.size();
  for (std::size_t i = lines.size(); i-- > 0;)
    if (lines[i].marker == Marker::kAction) {
      action_at = i;
      break;
    }
  if (action_at == lines.size()) return {std::nullopt, "no \"Action:\" line"};
  std::size_t args_at = lines.size();
  for (std::size_t i = action_at + 1; i < lines.size(); ++i)
    if (lines[i].marker == Marker::kArguments) {
      args_at = i;
      break;
    }
  // The name: the first non-empty text after the Action marker, before the Arguments marker (or any marker).
  std::string name;
  for (std::size_t i = action_at; i < lines.size() && name.empty(); ++i) {
    if (i > action_at && lines[i].marker != Marker::kNone) break;
    name = strip_name(lines[i].rest);
  }
  if (name.empty()) return {std::nullopt, "the \"Action:\" line names no action"};
  // The arguments text: everything after the Arguments marker up to a following Thought/Action marker.
  std::string args;
  bool have_args = args_at < lines.size();
  if (have_args) {
    for (std::size_t i = args_at; i < lines.size(); ++i) {
      if (i > args_at && lines[i].marker != Marker::kNone) break;
      if (i > args_at || !lines[i].rest.empty()) {
        if (!args.empty()) args += '\n';
        args += lines[i].rest;
      }
    }
    args = std::string(trim(args));
  }

  if (ascii_lower(name) == env::kRespond) {
    if (args.empty()) return {std::nullopt, "respond without a message after \"Arguments:\""};
    std::string message = args;
    nlohmann::json j = parse_json_or_discarded(args);
    if (j.is_string()) message = j.get<std::string>();
    else if (j.is_object() && j.contains("content") && j["content"].is_string()) message = j["content"].get<std::string>();
    return {respond_action(message), {}};
  }
  for (const env::ToolSpec& t : env::tool_specs())
    if (ascii_lower(name) == ascii_lower(t.name)) name = std::string(t.name);
  const env::ToolSpec* spec = env::find_tool(name);
  std::string_view object = first_object(args);
  if (object.empty()) {
    // A tool that takes nothing (stop), or an unknown name the environment will reject anyway.
    if (args.empty() && (!spec || spec->params.empty())) return {env::Action{name, "{}"}, {}};
    return {std::nullopt, have_args ? "the arguments of '" + name + "' are not a JSON object"
                                    : "no \"Arguments:\" line for '" + name + "'"};
  }
  nlohmann::json j = parse_json_or_discarded(object);
  if (j.is_discarded() || !j.is_object())
    return {std::nullopt, "the arguments of '" + name + "' are not valid JSON"};
  return {env::Action{name, std::string(object)}, {}};
}

// ------------------------------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------------------------------

ReactOptions parse_react_options(const AgentOptions& options, bool reflection, int run_max_steps) {
  OptionReader r(reflection ? "reflection" : "react", options);
  ReactOptions o;
  o.reflection = reflection;
  o.memory = r.memory_strategy();
  o.memory_length = r.memory_length(10);
  o.relevance = r.relevance(o.relevance);
  o.function_model = r.function_model(o.function_model);
  o.max_steps = r.integer("max_steps", run_max_steps, 1, kMaxOptionCount);
  o.parse_retries = r.integer("parse_retries", o.parse_retries, 0, 10);
  r.finish();
  return o;
}

// ------------------------------------------------------------------------------------------------------------
// The agent
// ------------------------------------------------------------------------------------------------------------

namespace {

class ReactAgent final : public env::Agent {
 public:
  ReactAgent(const ReactAgentFactory& factory, const LlmAccess& access, std::unique_ptr<llm::ChatModel> model,
             std::unique_ptr<llm::ChatModel> reflector)
      : factory_(factory), access_(access), model_(std::move(model)), reflector_(std::move(reflector)) {}

  void begin(const data::Task& task, const std::string& first_observation, data::Track track) override {
    instruction_ = task.instruction;
    // An LLM function predictor asks the episode's model first; its tokens count with the first step.
    FunctionGuess guess;
    if (const FunctionPredictor* p = factory_.predictor()) guess = p->predict(task.instruction, model_.get());
    prior_prompt_tokens_ = guess.prompt_tokens;
    prior_completion_tokens_ = guess.completion_tokens;
    messages_ = {llm::Message::system(factory_.system_message(task, track, guess.function)),
                 llm::Message::user(first_observation)};
  }

  env::AgentStep next(const std::string& observation) override {
    if (pending_ == Pending::kToolResult) {
      messages_.push_back(llm::Message::user("API output: " + observation));
    } else if (pending_ == Pending::kUserReply) {
      messages_.push_back(llm::Message::user(observation));
      if (reflector_) reflect();
    }
    pending_ = Pending::kNothing;

    env::AgentStep step;
    step.prompt_tokens = std::exchange(prior_prompt_tokens_, 0);
    step.completion_tokens = std::exchange(prior_completion_tokens_, 0);
    llm::ChatRequest req;
    req.model = access_.model;
    req.messages = messages_;
    req.temperature = access_.temperature.value_or(0.0);
    req.max_tokens = access_.max_tokens;
    req.seed = access_.seed;
    std::string text;
    ReactParse parsed;
    for (int attempt = 0;; ++attempt) {
      llm::ChatResponse r = model_->chat(req);  // llm::InfraError propagates: the runner marks the task errored
      step.prompt_tokens += static_cast<int>(r.prompt_tokens);
      step.completion_tokens += static_cast<int>(r.completion_tokens);
      text = r.message.content;
      parsed = parse_react_reply(text);
      if (parsed.action || attempt >= factory_.options().parse_retries) break;
      // Re-ask: the bad reply and a correction, as a new sample so a record/replay cache keeps both answers.
      req.messages = messages_;
      req.messages.push_back(llm::Message::assistant(text));
      req.messages.push_back(llm::Message::user(std::string(kCorrection)));
      req.sample = attempt + 1;
    }
    // Only the accepted (or the last) reply stays in the conversation, as the raw completion (docs/decisions.md §4.3).
    messages_.push_back(llm::Message::assistant(text));
    if (parsed.action) {
      step.action = std::move(*parsed.action);
    } else {
      // Every re-ask failed: the raw text goes out as a text reply, which the environment scores like any
      // text reply (single-turn: [0, 0] and the episode ends; multi-turn: the user reads it).
      step.action = respond_action(text);
    }
    pending_ = step.action.name == env::kRespond ? Pending::kUserReply : Pending::kToolResult;
    return step;
  }

 private:
  enum class Pending { kNothing, kToolResult, kUserReply };

  //! docs/decisions.md §4.3: one system-only call at the API's default temperature; its text joins the conversation as
  //! an assistant message. Booked by `reflector_` under role "other"; not a step.
  void reflect() {
    std::string actions;
    for (std::size_t i = 1; i + 1 < messages_.size(); ++i) actions += messages_[i].role + ":" + messages_[i].content + "\n";
    llm::ChatRequest req;
    req.model = access_.model;
    req.messages = {llm::Message::system(reflection_prompt(instruction_, actions, messages_.back().content))};
    req.max_tokens = access_.max_tokens;
    req.seed = access_.seed;
    llm::ChatResponse r = reflector_->chat(req);
    messages_.push_back(llm::Message::assistant(r.message.content));
  }

  const ReactAgentFactory& factory_;
  const LlmAccess& access_;
  std::unique_ptr<llm::ChatModel> model_;
  std::unique_ptr<llm::ChatModel> reflector_;  // null for react
  std::string instruction_;
  std::vector<llm::Message> messages_;
  Pending pending_ = Pending::kNothing;
  int prior_prompt_tokens_ = 0, prior_completion_tokens_ = 0;
};

const std::string& react_tools_json() {
  static const std::string tools = env::tools_json(/*include_product_details=*/false);
  return tools;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------------
// The factory
// ------------------------------------------------------------------------------------------------------------

ReactAgentFactory::ReactAgentFactory(ReactOptions options, const AgentContext& context)
    : options_(std::move(options)), context_(context) {
  const std::string who = name() + " agent";
  if (!context_.llm.open)
    throw UsageError("the " + who + " needs --model (and an OpenAI-compatible endpoint: --base-url / "
                     "OPENAI_BASE_URL, OPENAI_API_KEY), or --replay with a recorded --llm-cache");
  if (!context_.ds) throw UsageError(who + ": no dataset");
  const bool retrieval = options_.memory == MemoryStrategy::kRelevant || options_.memory == MemoryStrategy::kTaskSpec;
  if (retrieval && !context_.embedder)
    throw UsageError(who + ": " + std::string(to_string(options_.memory)) + " memory needs an embedder");
  if (options_.memory == MemoryStrategy::kTaskSpec)
    predictor_ = FunctionPredictor::make(options_.function_model, {}, context_, who);
  if (retrieval && options_.relevance == RelevanceText::kCompact)
    vectors_ = std::make_unique<BehaviourVectors>(*context_.ds, *context_.embedder);
}

ReactAgentFactory::~ReactAgentFactory() = default;

std::string ReactAgentFactory::config_json() const {
  const LlmAccess& llm = context_.llm;
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("agent").value(name());
  write_llm_config(w, llm);
  w.key("memory").value(to_string(options_.memory));
  w.key("memory_length").value(options_.memory_length);
  w.key("relevance").value(options_.relevance == RelevanceText::kFull ? "full" : "compact");
  w.key("prompts").value(std::string(kReactPromptsVersion) + "+" + std::string(kFcPromptsVersion));
  w.key("max_steps").value(options_.max_steps);
  w.key("parse_retries").value(options_.parse_retries);
  w.key("function_model").value(predictor_ ? predictor_->description() : std::string("none"));
  w.key("embedder").value(context_.embedder ? context_.embedder->name() : std::string());
  w.end_object();
  return out;
}

std::unique_ptr<env::Agent> ReactAgentFactory::make(const data::Task& task) const {
  const std::string key = data::task_key(task);
  auto model = context_.llm.open(key, llm::Role::kAgent);
  if (!model) throw UsageError(name() + " agent: the run's LLM access gave no model");
  std::unique_ptr<llm::ChatModel> reflector;
  if (options_.reflection) {
    reflector = context_.llm.open(key, llm::Role::kOther);
    if (!reflector) throw UsageError(name() + " agent: the run's LLM access gave no model");
  }
  return std::make_unique<ReactAgent>(*this, context_.llm, std::move(model), std::move(reflector));
}

std::string ReactAgentFactory::system_message(const data::Task& task, data::Track track,
                                              std::string_view predicted_function) const {
  const data::Dataset& ds = *context_.ds;
  MemoryOptions mo;
  mo.k = options_.memory_length;
  mo.relevance = options_.relevance;
  mo.cache = vectors_.get();
  mo.run_seed = context_.seed;
  std::string tools = "\n# Available tools\n" + react_tools_json() + std::string(kReactInstruction);
  if (options_.memory == MemoryStrategy::kTaskSpec) {
    TaskSpecMemory m = taskspec_memory(ds, task, predicted_function, mo, *context_.embedder);
    if (m.text == kNoMemory) return fc_system_prompt(track, options_.max_steps) + tools;
    return taskspec_system_prompt(track, options_.max_steps) + tools + "\n" + m.text;
  }
  std::string prompt = fc_system_prompt(track, options_.max_steps) + tools;
  std::string memory = baseline_memory(ds, task, options_.memory, mo, context_.embedder);
  if (memory != kNoMemory) prompt += memory;
  return prompt;
}

}  // namespace pwab::agents
