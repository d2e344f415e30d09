#include "agents/puma_prompt.h"

#include "agents/tool_chat_agent.h"
#include "core/error.h"
#include "core/json_writer.h"
#include "core/text.h"
#include "env/tools.h"

namespace pwab::agents {
namespace {

constexpr std::string_view kParamMarker = "### Tool Parameter:\n";

bool is_ascii_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Bytes in the UTF-8 character that starts with `lead` (1 for a stray continuation byte, so scanning goes on).
std::size_t utf8_length(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

// Walks `text` in approximate tokens; returns the byte length of the longest prefix of at most `budget` tokens.
// With budget < 0 the whole text is taken, and `count` says how many tokens it has.
std::size_t approximate_prefix(std::string_view text, int budget, int& count) {
  count = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    std::size_t end = i;
    int cost = 0;
    if (c == ' ' || c == '\t' || c == '\r') {
      end = i + 1;  // sentencepiece folds spaces into the next piece
    } else if (is_ascii_letter(c)) {
      while (end < text.size() && is_ascii_letter(static_cast<unsigned char>(text[end]))) ++end;
      cost = 1 + static_cast<int>(end - i - 1) / 6;
    } else {
      end = std::min(text.size(), i + utf8_length(c));
      cost = 1;
    }
    if (budget >= 0 && count + cost > budget) {
      // A long word may be cut between its pieces of 6 letters.
      if (is_ascii_letter(c) && count < budget) return i + static_cast<std::size_t>(budget - count) * 6;
      return i;
    }
    count += cost;
    i = end;
  }
  return text.size();
}

class ApproximateTokenCounter final : public TokenCounter {
 public:
  std::string truncate(std::string_view text, int max_tokens) const override {
    int count = 0;
    std::size_t keep = approximate_prefix(text, std::max(0, max_tokens - 1), count);  // the BOS takes one
    return std::string(text.substr(0, keep));
  }
  std::string describe() const override { return "approximate-llama/1"; }
};

class TokenizerCounter final : public TokenCounter {
 public:
  explicit TokenizerCounter(std::shared_ptr<const tok::Tokenizer> t) : tokenizer_(std::move(t)) {}
  std::string truncate(std::string_view text, int max_tokens) const override {
    const std::size_t budget = static_cast<std::size_t>(std::max(1, max_tokens));
    // The approximate count is within a small factor of LLaMA's; twice the budget plus a margin, ended at a
    // space, holds the first `budget` tokens whenever the approximation is not off by more than that.
    int count = 0;
    std::size_t keep = approximate_prefix(text, 2 * max_tokens + 64, count);
    if (keep < text.size()) {
      std::size_t space = text.rfind(' ', keep);
      std::string_view prefix = text.substr(0, space == std::string_view::npos || space == 0 ? keep : space);
      if (tokenizer_->encode(prefix, true, false).size() > budget) return tok::truncate_to_tokens(*tokenizer_, prefix, budget);
    }
    return tok::truncate_to_tokens(*tokenizer_, text, budget);
  }
  std::string describe() const override {
    return std::string(tokenizer_->backend()) + " " + tokenizer_->fingerprint();
  }

 private:
  std::shared_ptr<const tok::Tokenizer> tokenizer_;
};

std::string store_text(const data::Product& p) { return p.store ? *p.store : std::string("None"); }

std::string string_field_json(std::string_view key, std::string_view text) {
  std::string out;
  JsonWriter(out).begin_object().key(key).value(text).end_object();
  return out;
}

}  // namespace

std::string puma_function_prompt(std::string_view instruction) {
  std::string p = "Below is an instruction that describes a task; name the tool that carries out the request.\n";
  p += "### Instruction: ";
  p += instruction;
  p += "\n\n### Tool:\n";
  return p;
}

std::string puma_product_block(const data::Product& product) {
  return "\nProduct in question:\nTitle: " + product.title + "\nPrice: " + product.price.str() +
         "\nStore: " + store_text(product) + "\nMain Category: " + product.main_category + "\n";
}

std::string puma_instruction_text(const data::Dataset& ds, const data::Task& task,
                                  std::optional<data::TaskType> type) {
  std::string text = task.instruction;
  if (type == data::TaskType::kReview) text += puma_product_block(ds.product(task.target_product));
  return text;
}

std::string puma_param_prompt(std::string_view instruction_text, std::string_view memory, std::string_view tool) {
  // The first line ends with a space, as the original's does: the layout, not the wording, is what a trained
  // model depends on.
  std::string p = "Below is an instruction that describes a task; write the tool parameter that carries out the "
                  "request. \n";
  p += "### Instruction:";
  p += instruction_text;
  p += "\n  \nMemory: ";
  p += memory;
  p += "\n\nTool: ";
  p += tool;
  p += "\n\n";
  p += kParamMarker;
  return p;
}

std::string puma_generated_part(std::string_view generated, std::string_view marker) {
  std::size_t at = generated.rfind(marker);
  if (at != std::string_view::npos) generated.remove_prefix(at + marker.size());
  return std::string(trim(generated));
}

std::string puma_function_from_completion(std::string_view generated) {
  std::string text = puma_generated_part(generated, "### Tool:\n");
  return std::string(trim(std::string_view(text).substr(0, text.find('\n'))));
}

std::unique_ptr<TokenCounter> approximate_token_counter() { return std::make_unique<ApproximateTokenCounter>(); }

std::unique_ptr<TokenCounter> tokenizer_token_counter(std::shared_ptr<const tok::Tokenizer> tokenizer) {
  if (!tokenizer) throw UsageError("tokenizer_token_counter: no tokenizer");
  return std::make_unique<TokenizerCounter>(std::move(tokenizer));
}

int approximate_token_count(std::string_view text) {
  int count = 0;
  approximate_prefix(text, -1, count);
  return count;
}

std::string puma_memory(const data::Dataset& ds, const data::Task& task, std::optional<data::TaskType> type,
                        const embed::Embedder& embedder, const PumaMemoryOptions& options,
                        const TokenCounter& counter) {
  if (!type || options.k <= 0) return "none";
  std::vector<const data::Behaviour*> history = ds.visible_history(task);
  if (history.empty()) return "none";
  RelevanceOptions ro;
  ro.k = options.k;
  ro.text = options.relevance;
  ro.cache = options.cache;
  std::vector<MemoryItem> items = relevant_items(ds, task.user, history, task.instruction, embedder, ro);
  TaskMemoryStyle style;
  style.header = false;
  style.recommend_newest_first = true;  // the newest items survive the cut (docs/decisions.md §5.2 step 2)
  style.recommend_layout = options.recommend_layout;
  style.history_size = history.size();
  return counter.truncate(render_task_memory(items, *type, style), puma_memory_budget(options, type));
}

int puma_memory_budget(const PumaMemoryOptions& options, std::optional<data::TaskType> type) {
  if (type == data::TaskType::kRecommend && options.recommend_max_tokens > 0) return options.recommend_max_tokens;
  return options.max_tokens;
}

std::string_view to_string(RecommendLayout layout) {
  switch (layout) {
    case RecommendLayout::kFull: return "full";
    case RecommendLayout::kAsins: return "asins";
    case RecommendLayout::kNumbered: return "numbered";
  }
  return "full";
}

RecommendLayout parse_recommend_layout(std::string_view text, std::string_view what) {
  if (text == "full") return RecommendLayout::kFull;
  if (text == "asins") return RecommendLayout::kAsins;
  if (text == "numbered") return RecommendLayout::kNumbered;
  throw UsageError(std::string(what) + " must be full, asins or numbered, not '" + std::string(text) + "'");
}

std::vector<std::string> puma_references(const data::Dataset& ds, const data::Task& task) {
  std::vector<const data::Behaviour*> history = ds.visible_history(task);
  std::vector<std::string> out;
  out.reserve(history.size());
  for (auto it = history.rbegin(); it != history.rend(); ++it) out.push_back(ds.product((*it)->product).parent_asin);
  return out;
}

std::vector<std::string> puma_references(const data::Dataset& ds, const data::Task& task,
                                         std::optional<data::TaskType> type) {
  if (type != data::TaskType::kRecommend) return {};
  return puma_references(ds, task);
}

namespace {

// The reference a piece of a recommendation parameter names, when it is a number 1..n of at most 4 digits
// without a leading zero.
std::optional<std::size_t> reference_index(std::string_view piece, std::size_t n) {
  if (piece.empty() || piece.size() > 4 || piece[0] == '0') return std::nullopt;
  std::size_t value = 0;
  for (char c : piece) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  if (value < 1 || value > n) return std::nullopt;
  return value - 1;
}

}  // namespace

env::Action puma_action(std::string_view parameter, std::string_view predicted_function,
                        const std::vector<std::string>& references) {
  std::string_view text = trim(parameter);
  if (text.starts_with("Say:")) return respond_action(trim(text.substr(4)));
  if (text.starts_with("stop")) return {std::string(env::kStop), "{}"};
  std::string_view function = trim(predicted_function);
  std::optional<data::TaskType> type = env::task_type_of_function(function);
  if (!type) return {function.empty() ? std::string("(no function)") : std::string(function), "{}"};
  switch (*type) {
    case data::TaskType::kSearch:
      return {std::string(env::kSearch), string_field_json("query", text)};
    case data::TaskType::kReview:
      return {std::string(env::kAddReview), string_field_json("review", text)};
    case data::TaskType::kRecommend: {
      std::vector<std::string> asins;
      for (std::string& piece : split_trim(text, ',')) {
        if (piece.empty()) continue;
        if (auto i = reference_index(piece, references.size())) piece = references[*i];
        asins.push_back(std::move(piece));
      }
      std::string args;
      JsonWriter(args).begin_object().key("product_sequence").string_array(asins).end_object();
      return {std::string(env::kRecommend), args};
    }
  }
  return {std::string(function), "{}"};
}

}  // namespace pwab::agents
