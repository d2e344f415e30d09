#include "agents/puma_agent.h"
#include "agents/agent_options.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "agents/llm_config.h"
#include "core/error.h"
#include "core/json_writer.h"
#include "core/text.h"
#include "env/tools.h"
#include "env/agent.h"

namespace pwab::agents {
namespace {

constexpr std::string_view kWho = "puma agent";

// How an action appears in the conversation the prompt shows: what the agent did, in one line.
std::string describe_action(const env::Action& action, std::string_view parameter) {
  if (action.name == env::kRespond) return "Say: " + std::string(trim(trim(parameter).substr(4)));
  return "called " + action.name + " with: " + std::string(trim(parameter));
}

}  // namespace

struct PumaAgentFactory::RolloutLog {
  explicit RolloutLog(const std::filesystem::path& path) : path(path), file(std::fopen(path.c_str(), "ab")) {
    if (!file) throw UsageError(std::string(kWho) + ": cannot open the rollouts file " + path.string());
  }
  ~RolloutLog() {
    if (file) std::fclose(file);
  }
  void append(const std::string& line) {
    std::lock_guard lock(mu);
    if (std::fwrite(line.data(), 1, line.size(), file) != line.size() || std::fflush(file) != 0)
      throw Error(std::string(kWho) + ": cannot write the rollouts file " + path.string());
  }
  std::filesystem::path path;
  std::FILE* file;
  std::mutex mu;
  std::atomic<uint64_t> episodes{0};
};

namespace {

// The agent's model with every raw-text completion's tokens asked for and logged (PumaOptions::rollouts): the
// function completion the predictor asks for and each parameter completion of the episode.
class TracingModel final : public llm::ChatModel {
 public:
  TracingModel(std::unique_ptr<llm::ChatModel> inner, PumaAgentFactory::RolloutLogAccess log, std::string task,
               std::string episode)
      : inner_(std::move(inner)), log_(std::move(log)), task_(std::move(task)), episode_(std::move(episode)) {}

  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    if (!request.prompt) return inner_->chat(request);
    llm::ChatRequest traced = request;
    traced.return_tokens = true;
    llm::ChatResponse r = inner_->chat(traced);
    if (!r.tokens)
      throw UsageError(std::string(kWho) + ": rollouts need the model's token ids, and " + inner_->describe() +
                       " reported none (serve it with `pwab lm serve`, vLLM >= 0.10.2, or --local-model)");
    const bool function = request.prompt->ends_with("### Tool:\n");
    log_(rollout_line(task_, episode_, turn_++, function ? "function" : "parameter", *r.tokens, r.message.content));
    return r;
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::unique_ptr<llm::ChatModel> inner_;
  PumaAgentFactory::RolloutLogAccess log_;
  std::string task_, episode_;
  int turn_ = 0;
};

class PumaAgent final : public env::Agent {
 public:
  PumaAgent(const PumaAgentFactory& factory, const LlmAccess& access, std::unique_ptr<llm::ChatModel> model)
      : factory_(factory), access_(access), model_(std::move(model)) {}

  void begin(const data::Task& task, const std::string& first_observation, data::Track track) override {
    (void)first_observation;
    track_ = track;
    task_ = &task;
    FunctionGuess guess = factory_.predictor().predict(task.instruction, model_.get());
    dialogue_ = PumaDialogue(guess.function, factory_.references(task, guess.function));
    prior_prompt_tokens_ = guess.prompt_tokens;
    prior_completion_tokens_ = guess.completion_tokens;
    memory_ = factory_.memory(task, guess.function);
  }

  env::AgentStep next(const std::string& observation) override {
    if (dialogue_.stops_after(observation)) {
      env::AgentStep stop;
      stop.action = {std::string(env::kStop), "{}"};
      return stop;
    }
    llm::ChatRequest req;
    req.model = access_.model;
    req.prompt = factory_.prompt(*task_, dialogue_.function(), memory_, dialogue_.turns());
    req.temperature = access_.temperature.value_or(0.0);  // docs/decisions.md §5.4: greedy
    req.max_tokens = access_.max_tokens.value_or(factory_.options().max_new_tokens);
    req.seed = access_.seed;
    // Multi-turn parameters may be a question to the user, whose words the prompt does not hold: left free, as
    // pwab puma's RL leaves them (rl.h RlEpisode::asks_search_query).
    req.prompt_words_only = factory_.options().copy_search && track_ == data::Track::kSingleTurn &&
                            trim(dialogue_.function()) == env::kSearch;
    llm::ChatResponse r = model_->chat(req);  // llm::InfraError propagates: the runner marks the task errored

    env::AgentStep step;
    step.prompt_tokens = static_cast<int>(r.prompt_tokens) + std::exchange(prior_prompt_tokens_, 0);
    step.completion_tokens = static_cast<int>(r.completion_tokens) + std::exchange(prior_completion_tokens_, 0);
    step.action = dialogue_.act(r.message.content);
    return step;
  }

 private:
  const PumaAgentFactory& factory_;
  const LlmAccess& access_;
  std::unique_ptr<llm::ChatModel> model_;
  const data::Task* task_ = nullptr;
  data::Track track_ = data::Track::kSingleTurn;
  PumaDialogue dialogue_{""};
  std::string memory_;
  int prior_prompt_tokens_ = 0, prior_completion_tokens_ = 0;
};

}  // namespace

PumaOptions parse_puma_options(const AgentOptions& options) {
  OptionReader r("puma", options);
  PumaOptions o;
  o.memory = r.memory({"taskspec", "none"}) == "taskspec";
  PumaMemoryOptions& m = o.memory_options;
  m.k = r.memory_length(100);  // PUMA's own default, not D1's 10 (docs/decisions.md)
  m.max_tokens = r.integer("memory_tokens", m.max_tokens, 1, kMaxOptionCount);
  m.recommend_layout = r.choice("recommend_memory", m.recommend_layout,
                                {{"full", RecommendLayout::kFull},
                                 {"asins", RecommendLayout::kAsins},
                                 {"numbered", RecommendLayout::kNumbered}});
  m.recommend_max_tokens = r.integer("recommend_memory_tokens", m.recommend_max_tokens, 0, kMaxOptionCount);
  m.relevance = r.relevance(m.relevance);
  r.function_model_or_file(o.function_model, o.function_file);
  o.max_new_tokens = r.integer("max_new_tokens", o.max_new_tokens, 1, 100000);
  if (auto dir = r.path("tokenizer")) o.tokenizer = *dir;
  if (auto file = r.path("rollouts")) o.rollouts = *file;
  o.copy_search = r.flag("copy_search", o.copy_search);
  r.finish();
  return o;
}

bool PumaDialogue::stops_after(const std::string& observation) {
  // The user's answer to a respond comes back as the observation; tool results are not shown (the model was
  // trained on prompts without them), only that the call was made.
  if (last_was_respond_) turns_.push_back({"User", observation});
  // docs/decisions.md D3: with a function that names no task tool the agent cannot complete the task; after the one
  // call the environment answered "Unknown action", it stops instead of asking the model again and again.
  return !turns_.empty() && !env::task_type_of_function(trim(function_));
}

env::Action PumaDialogue::act(std::string_view generated) {
  std::string parameter = puma_generated_part(generated, "### Tool Parameter:\n");
  env::Action action = puma_action(parameter, function_, references_);
  last_was_respond_ = action.name == env::kRespond;
  turns_.push_back({"Agent", describe_action(action, parameter)});
  return action;
}

std::string puma_dialogue_text(const std::vector<PumaTurn>& turns) {
  if (turns.empty()) return {};
  std::string out = "\n\nConversation so far:\n";
  for (const PumaTurn& t : turns) out += t.speaker + ": " + t.text + "\n";
  return out;
}

PumaAgentFactory::PumaAgentFactory(PumaOptions options, const AgentContext& context,
                                   std::unique_ptr<TokenCounter> counter)
    : options_(std::move(options)), context_(context), counter_(std::move(counter)) {
  if (!context_.llm.open)
    throw UsageError("the puma agent needs --model (an OpenAI-compatible server with /v1/completions that serves "
                     "the PUMA model, e.g. vLLM with the LoRA adapter), or --replay with a recorded --llm-cache");
  if (!context_.ds) throw UsageError("puma agent: no dataset");
  if (options_.memory && !context_.embedder) throw UsageError("puma agent: task-specific memory needs an embedder");
  if (!counter_ && !options_.tokenizer.empty()) {
    try {
      counter_ = tokenizer_token_counter(tok::load_tokenizer(options_.tokenizer));
    } catch (const Error& e) {
      throw UsageError(std::string(kWho) + ": tokenizer: " + e.what());
    }
  }
  if (!counter_) counter_ = approximate_token_counter();
  predictor_ = FunctionPredictor::make(options_.function_model, options_.function_file, context_, kWho);
  if (!options_.rollouts.empty()) rollouts_ = std::make_shared<RolloutLog>(options_.rollouts);
  if (options_.memory && options_.memory_options.relevance == RelevanceText::kCompact) {
    vectors_ = std::make_unique<BehaviourVectors>(*context_.ds, *context_.embedder);
    options_.memory_options.cache = vectors_.get();
  }
}

PumaAgentFactory::~PumaAgentFactory() = default;

std::string rollout_line(std::string_view task, std::string_view episode, int turn, std::string_view kind,
                         const llm::TokenTrace& tokens, std::string_view text) {
  const std::size_t n_prompt = tokens.prompt_ids.size(), n_completion = tokens.completion_ids.size();
  std::vector<int> mask(n_prompt, 0);
  mask.resize(n_prompt + n_completion, 1);  // the model's own tokens only
  std::vector<float> logprobs(n_prompt, 0.0f);
  logprobs.insert(logprobs.end(), tokens.logprobs.begin(), tokens.logprobs.end());
  nlohmann::json j = {{"format", "pwab-rollout/1"}, {"task", task},      {"episode", episode},
                      {"turn", turn},               {"kind", kind},      {"prompt_ids", tokens.prompt_ids},
                      {"completion_ids", tokens.completion_ids},        {"loss_mask", mask},
                      {"logprobs", logprobs},       {"text", text}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string PumaAgentFactory::config_json() const {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("agent").value("puma");
  write_llm_config(w, context_.llm);
  w.key("memory").value(options_.memory ? "taskspec" : "none");
  w.key("memory_length").value(options_.memory_options.k);
  w.key("memory_tokens").value(options_.memory_options.max_tokens);
  w.key("recommend_memory").value(std::string(to_string(options_.memory_options.recommend_layout)));
  w.key("recommend_memory_tokens").value(options_.memory_options.recommend_max_tokens);
  w.key("token_counter").value(counter_->describe());
  w.key("relevance").value(options_.memory_options.relevance == RelevanceText::kFull ? "full" : "compact");
  w.key("prompts").value(kPumaPromptsVersion);
  w.key("function_model").value(predictor_->description());
  w.key("embedder").value(context_.embedder && options_.memory ? context_.embedder->name() : std::string());
  w.key("max_new_tokens").value(options_.max_new_tokens);
  if (options_.copy_search) w.key("copy_search").value(true);  // absent when off: older manifests stay the same
  w.end_object();
  return out;
}

std::unique_ptr<env::Agent> PumaAgentFactory::make(const data::Task& task) const {
  auto model = context_.llm.open(data::task_key(task), llm::Role::kAgent);
  if (!model) throw UsageError("puma agent: the run's LLM access gave no model");
  if (rollouts_) {
    const uint64_t n = rollouts_->episodes++;
    model = std::make_unique<TracingModel>(std::move(model),
                                           [log = rollouts_](const std::string& line) { log->append(line); },
                                           data::task_key(task), data::task_key(task) + "#" + std::to_string(n));
  }
  return std::make_unique<PumaAgent>(*this, context_.llm, std::move(model));
}

std::string PumaAgentFactory::memory(const data::Task& task, std::string_view predicted_function) const {
  if (!options_.memory) return "none";
  return puma_memory(*context_.ds, task, env::task_type_of_function(trim(predicted_function)), *context_.embedder,
                     options_.memory_options, *counter_);
}

std::vector<std::string> PumaAgentFactory::references(const data::Task& task,
                                                      std::string_view predicted_function) const {
  return puma_references(*context_.ds, task, env::task_type_of_function(trim(predicted_function)));
}

std::string PumaAgentFactory::prompt(const data::Task& task, std::string_view predicted_function,
                                     std::string_view memory, const std::vector<PumaTurn>& dialogue) const {
  std::string_view function = trim(predicted_function);
  std::string instruction =
      puma_instruction_text(*context_.ds, task, env::task_type_of_function(function)) + puma_dialogue_text(dialogue);
  return puma_param_prompt(instruction, memory, function);
}

}  // namespace pwab::agents
