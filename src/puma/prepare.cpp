#include "puma/prepare.h"
#include "core/json_depth.h"

#include <nlohmann/json.hpp>

#include "agents/heuristic_policy.h"
#include "agents/task_memory.h"
#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "env/tools.h"
#include "runner/results.h"

namespace pwab::puma {
namespace {

using nlohmann::json;

// The memory of docs/decisions.md §5.2 without the token cut (what the LLM labeler reads) and with it (what the
// prompt carries).
struct TaskMemory {
  std::string full, cut;
};

TaskMemory task_memory(const data::Dataset& ds, const data::Task& task, const embed::Embedder& embedder,
                       const agents::TokenCounter& counter, const agents::PumaMemoryOptions& options) {
  agents::PumaMemoryOptions uncut = options;
  uncut.max_tokens = 1 << 30;
  TaskMemory m;
  m.full = agents::puma_memory(ds, task, task.type, embedder, uncut, counter);
  m.cut = m.full == "none" ? m.full : counter.truncate(m.full, agents::puma_memory_budget(options, task.type));
  return m;
}

}  // namespace

SearchLabeler heuristic_search_labeler(const data::Dataset& ds, const embed::Embedder& embedder) {
  return [&ds, &embedder](const data::Task& task, std::string_view) {
    agents::RelevanceOptions ro;
    ro.k = 10;
    std::vector<agents::MemoryItem> memory =
        agents::relevant_items(ds, task.user, ds.visible_history(task), task.instruction, embedder, ro);
    return agents::build_search_query(task.instruction, memory, agents::Clues{}, agents::HeuristicPolicy{});
  };
}

std::string search_label_prompt(std::string_view instruction, std::string_view full_memory) {
  std::string p = "You are a shopping assistant who finds products for a particular user.\n\nRules:\n";
  p += "- You receive one request from the user.\n";
  p += "- Find the product with the tool, which takes a single free-text query.\n";
  p += "- Write the best query you can from the request together with the memory of the user.\n";
  p += "- Details from the memory can make the query better.\n";
  p += "- You call the tool exactly once, so the query has to be your best.\n";
  p += "- The tool is fixed; all you supply is its input.\n";
  p += "- Reply with the query alone: no tool name, no extra information, no explanation.\n\n";
  p += "Instruction: ";
  p += instruction;
  p += "\n\nMemory: ";
  p += full_memory;
  p += "\n\nTool: search_product_by_query\n";
  return p;
}

SearchLabeler llm_search_labeler(llm::ChatModel& model, std::string model_name) {
  return [&model, name = std::move(model_name)](const data::Task& task, std::string_view full_memory) {
    llm::ChatRequest req;
    req.model = name;
    req.messages = {llm::Message::system(search_label_prompt(task.instruction, full_memory))};
    req.temperature = 0.0;
    llm::ChatResponse r = model.chat(req);
    return std::string(trim(r.message.content));
  };
}

std::vector<Example> function_examples(const data::Dataset& ds, data::Split split) {
  std::vector<Example> out;
  for (const data::Task& task : ds.tasks(split)) {
    Example e;
    e.task = runner::task_key(task);
    e.instruction = task.instruction;
    e.type = task.type;
    e.prompt = agents::puma_function_prompt(task.instruction);
    e.target = std::string(env::task_function(task.type));
    out.push_back(std::move(e));
  }
  return out;
}

std::string recommend_label(const data::Dataset& ds, const data::Task& task, const PrepareOptions& options,
                            bool* fallback) {
  if (fallback) *fallback = false;
  const std::string& category = ds.product(task.target_product).main_category;
  std::vector<const data::Behaviour*> history = ds.visible_history(task);
  // Numbered: the item's number in the memory, 1 for the newest (task_memory.h RecommendLayout::kNumbered).
  const bool numbered = options.memory.recommend_layout == agents::RecommendLayout::kNumbered;
  std::vector<std::string> same, any;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const data::Product& p = ds.product(history[i]->product);
    std::string item = numbered ? std::to_string(history.size() - i) : p.parent_asin;
    any.push_back(item);
    if (p.main_category == category) same.push_back(std::move(item));
  }
  std::vector<std::string>* chosen = &same;
  if (same.empty()) {
    if (options.recommend_fallback == RecommendFallback::kSkip || any.empty()) return {};
    chosen = &any;  // docs/decisions.md D8 (a): never the target's own ASIN
    if (fallback) *fallback = true;
  }
  std::size_t n = std::min(chosen->size(), static_cast<std::size_t>(std::max(1, options.recommend_length)));
  std::string label;
  for (std::size_t i = chosen->size() - n; i < chosen->size(); ++i) {
    if (!label.empty()) label += ", ";
    label += (*chosen)[i];
  }
  return label;
}

std::vector<Example> param_examples(const data::Dataset& ds, data::Split split, const embed::Embedder& embedder,
                                    const agents::TokenCounter& counter, const SearchLabeler& search_labeler,
                                    const PrepareOptions& options, PrepareReport* report) {
  PrepareReport local;
  PrepareReport& rep = report ? *report : local;
  std::vector<Example> out;
  for (const data::Task& task : ds.tasks(split)) {
    ++rep.tasks;
    TaskMemory memory = task_memory(ds, task, embedder, counter, options.memory);
    std::string target;
    switch (task.type) {
      case data::TaskType::kSearch:
        if (split == data::Split::kTest) {
          target = ds.product(task.target_product).title;  // a placeholder: only the evaluation loss reads it
        } else {
          target = search_labeler(task, memory.full);
        }
        break;
      case data::TaskType::kRecommend: {
        bool fallback = false;
        target = recommend_label(ds, task, options, &fallback);
        rep.recommend_fallbacks += fallback;
        break;
      }
      case data::TaskType::kReview: target = task.target_review.text; break;
    }
    if (target.empty()) {
      ++rep.skipped;
      continue;
    }
    Example e;
    e.task = runner::task_key(task);
    e.instruction = task.instruction;
    e.type = task.type;
    e.memory = memory.cut;
    e.prompt = agents::puma_param_prompt(agents::puma_instruction_text(ds, task, task.type), memory.cut,
                                         env::task_function(task.type));
    e.target = std::move(target);
    out.push_back(std::move(e));
    ++rep.examples;
  }
  return out;
}

void write_examples(const std::filesystem::path& file, const std::vector<Example>& examples) {
  std::string text;
  for (const Example& e : examples) {
    json j = {{"task", e.task},     {"instruction", e.instruction}, {"type", std::string(data::to_string(e.type))},
              {"prompt", e.prompt}, {"target", e.target},           {"memory", e.memory}};
    text += j.dump(-1, ' ', false, json::error_handler_t::replace);
    text += '\n';
  }
  write_file_atomic(file, text);
}

std::vector<Example> read_examples(const std::filesystem::path& file) {
  std::string text = read_file(file);
  std::vector<Example> out;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    auto where = [&] { return file.string() + " line " + std::to_string(line_no) + ": "; };
    json j = parse_json_or_discarded(line);
    if (j.is_discarded() || !j.is_object()) throw DataError(where() + "not a JSON object");
    Example e;
    for (auto [field, slot] : {std::pair{"task", &e.task}, std::pair{"instruction", &e.instruction},
                               std::pair{"prompt", &e.prompt}, std::pair{"target", &e.target},
                               std::pair{"memory", &e.memory}}) {
      auto it = j.find(field);
      if (it == j.end() || !it->is_string()) throw DataError(where() + "field '" + field + "' is missing or not a string");
      *slot = it->get<std::string>();
    }
    auto type = j.find("type");
    std::optional<data::TaskType> t =
        type != j.end() && type->is_string() ? data::parse_task_type(type->get<std::string>()) : std::nullopt;
    if (!t) throw DataError(where() + "field 'type' is not search, recommend or review");
    e.type = *t;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace pwab::puma
