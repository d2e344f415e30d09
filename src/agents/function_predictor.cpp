#include "agents/function_predictor.h"

#include <nlohmann/json.hpp>

#include "agents/puma_prompt.h"
#include "core/json_depth.h"
#include "core/hash.h"
#include "core/sys.h"
#include "core/text.h"
#include "env/tools.h"

namespace pwab::agents {
namespace fs = std::filesystem;
namespace {

// The prompt version of the chat predictor (echoed by description()).
constexpr std::string_view kChoicePromptVersion = "pwab-function-choice/1";

const std::string_view kTaskTools[] = {env::kSearch, env::kRecommend, env::kAddReview};

std::map<std::string, std::string, std::less<>> read_function_file(const fs::path& file, std::string_view who) {
  std::string text;
  try {
    text = read_file(file);
  } catch (const Error& e) {
    throw UsageError(std::string(who) + ": cannot read function_file: " + e.what());
  }
  nlohmann::json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object())
    throw UsageError(std::string(who) + ": function_file " + file.string() +
                     " is not a JSON object of instruction → tool");
  std::map<std::string, std::string, std::less<>> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const nlohmann::json& v = it.value();
    std::string tool;  // anything else is an unknown function (docs/decisions.md D3), not an error
    if (v.is_string()) tool = v.get<std::string>();
    else if (v.is_array() && !v.empty() && v[0].is_string()) tool = v[0].get<std::string>();
    out.emplace(it.key(), std::move(tool));
  }
  return out;
}

}  // namespace

std::string_view to_string(FunctionModel m) {
  switch (m) {
    case FunctionModel::kFastText: return "fasttext";
    case FunctionModel::kKeywords: return "keywords";
    case FunctionModel::kFile: return "file";
    case FunctionModel::kLlm: return "llm";
    case FunctionModel::kPuma: return "puma";
  }
  return "fasttext";
}

FunctionModel parse_function_model(std::string_view value, std::string_view who) {
  if (value == "fasttext") return FunctionModel::kFastText;
  if (value == "keywords") return FunctionModel::kKeywords;
  if (value == "llm") return FunctionModel::kLlm;
  if (value == "puma") return FunctionModel::kPuma;
  throw UsageError(std::string(who) + ": function_model takes fasttext, keywords, llm or puma (or give "
                   "function_file=PATH), not '" + std::string(value) + "'");
}

std::string function_choice_prompt() {
  std::string p = "You route shopping requests to the one tool that handles them.\n\nTools:\n";
  p += "- search_product_by_query: the user describes a product they want to find.\n";
  p += "- get_recommendations_by_history: the user asks for suggestions based on what they bought before.\n";
  p += "- add_product_review: the user wants to post a review of a product.\n\n";
  p += "Answer with the tool's name and nothing else.\n";
  return p;
}

std::string function_from_answer(std::string_view answer) {
  std::size_t best = std::string_view::npos;
  std::string_view found;
  for (std::string_view tool : kTaskTools) {
    std::size_t at = answer.find(tool);
    if (at < best) best = at, found = tool;
  }
  if (!found.empty()) return std::string(found);
  std::string_view first = trim(answer);
  first = first.substr(0, first.find('\n'));
  return std::string(trim(first));
}

FunctionPredictor::FunctionPredictor(FunctionModel model, const LlmAccess& access) : model_(model), access_(access) {}
FunctionPredictor::~FunctionPredictor() = default;

std::unique_ptr<FunctionPredictor> FunctionPredictor::make(FunctionModel model, const fs::path& function_file,
                                                           const AgentContext& context, std::string_view who) {
  std::unique_ptr<FunctionPredictor> p(new FunctionPredictor(model, context.llm));
  switch (model) {
    case FunctionModel::kFastText: {
      if (!context.ds) throw UsageError(std::string(who) + ": no dataset");
      fs::path cache = context.cache_dir.empty() ? private_cache_dir("agents") : context.cache_dir;
      p->classifier_ = FunctionClassifier::open_or_train(*context.ds, cache);
      break;
    }
    case FunctionModel::kKeywords: p->classifier_ = FunctionClassifier::keyword_rules(); break;
    case FunctionModel::kFile:
      p->file_ = read_function_file(function_file, who);
      p->file_hash_ = to_hex(hash_file(function_file));
      break;
    case FunctionModel::kLlm:
    case FunctionModel::kPuma:
      if (!context.llm.open)
        throw UsageError(std::string(who) + ": function_model=" + std::string(to_string(model)) + " needs --model");
      break;
  }
  return p;
}

FunctionGuess FunctionPredictor::predict(std::string_view instruction, llm::ChatModel* llm) const {
  switch (model_) {
    case FunctionModel::kFastText:
    case FunctionModel::kKeywords: return {classifier_->predict(instruction).function, 0, 0};
    case FunctionModel::kFile: {
      auto it = file_.find(instruction);
      return {it == file_.end() ? std::string() : std::string(trim(it->second)), 0, 0};
    }
    case FunctionModel::kLlm:
    case FunctionModel::kPuma:
      if (!llm) throw UsageError("the " + std::string(to_string(model_)) + " function model needs the episode's LLM");
      return model_ == FunctionModel::kLlm ? ask_chat(instruction, *llm) : ask_puma(instruction, *llm);
  }
  return {};
}

FunctionGuess FunctionPredictor::ask_chat(std::string_view instruction, llm::ChatModel& llm) const {
  llm::ChatRequest req;
  req.model = access_.model;
  req.messages = {llm::Message::system(function_choice_prompt()), llm::Message::user(std::string(instruction))};
  req.temperature = 0.0;  // a classification: the most likely tool
  req.max_tokens = 20;
  req.seed = access_.seed;
  llm::ChatResponse r = llm.chat(req);
  return {function_from_answer(r.message.content), static_cast<int>(r.prompt_tokens),
          static_cast<int>(r.completion_tokens)};
}

FunctionGuess FunctionPredictor::ask_puma(std::string_view instruction, llm::ChatModel& llm) const {
  llm::ChatRequest req;
  req.model = access_.model;
  req.prompt = puma_function_prompt(instruction);
  req.temperature = 0.0;  // docs/decisions.md §5.4: the function is generated greedily
  req.max_tokens = 32;
  req.seed = access_.seed;
  llm::ChatResponse r = llm.chat(req);
  return {puma_function_from_completion(r.message.content), static_cast<int>(r.prompt_tokens),
          static_cast<int>(r.completion_tokens)};
}

std::string FunctionPredictor::description() const {
  switch (model_) {
    case FunctionModel::kFastText:
    case FunctionModel::kKeywords: return classifier_->description();
    case FunctionModel::kFile: return "file " + file_hash_;
    case FunctionModel::kLlm: return "llm " + access_.model + "/" + std::string(kChoicePromptVersion);
    case FunctionModel::kPuma: return "puma " + access_.model + "/" + std::string(kPumaPromptsVersion);
  }
  return {};
}

}  // namespace pwab::agents
