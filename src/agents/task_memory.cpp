// src/agents/task_memory.cpp: relevance retrieval over the visible history and the docs/decisions.md §4.6a renderings.
#include "agents/task_memory.h"

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "core/py_format.h"
#include "env/tools.h"

namespace pwab::agents {
namespace {

std::string store_str(const data::Product& p) { return p.store ? *p.store : std::string("None"); }

//! Index of `b` among its user's behaviours (the cache key).
std::size_t behaviour_index(const data::User& user, const data::Behaviour* b) {
  return static_cast<std::size_t>(b - user.behaviours.data());
}

}  // namespace

std::string pretty_history(const data::Product& p, const data::Review& r, std::size_t i) {
  std::string out = "\nMEMORY " + std::to_string(i) + ":\n\nProduct:\n";
  out += "- Title: " + p.title + "\n";
  out += "- Parent Asin: " + p.parent_asin + "\n";
  out += "- Main Category: " + p.main_category + "\n";
  out += "- Average Rating: " + p.average_rating.str() + "\n";
  out += "- Rating Number: " + p.rating_number.str() + "\n";
  out += "- Price: " + p.price.str() + "\n";
  out += "- Store: " + store_str(p) + "\n";
  out += "- Details: " + py::json_dumps(p.details_json) + "\n";
  out += "- Description: " + py::list_repr(p.description) + "\n";
  out += "- Features: " + py::list_repr(p.features) + "\n";
  out += "\nReview:\n";
  out += "- Rating: " + r.rating.str() + "\n";
  out += "- Text: " + r.text + "\n";
  out += "- Timestamp: " + std::to_string(r.timestamp) + "\n\n";
  return out;
}

std::string relevance_text(const data::Product& p, const data::Review& r, std::size_t position, RelevanceText kind) {
  if (kind == RelevanceText::kFull) return pretty_history(p, r, position);
  std::string out = p.title + "\n" + p.main_category + "\n" + store_str(p) + "\n";
  for (const auto& c : p.categories) out += c + "; ";
  out += "\n" + r.title;
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// The per-run cache
// ------------------------------------------------------------------------------------------------------------

struct BehaviourVectors::UserSlot {
  std::mutex mutex;
  std::vector<std::vector<float>> vectors;  // one per behaviour of the user, sized once
  std::vector<bool> done;
};

BehaviourVectors::BehaviourVectors(const data::Dataset& ds, const embed::Embedder& embedder)
    : ds_(ds), embedder_(embedder) {
  users_.reserve(ds.users().size());
  for (const auto& u : ds.users()) {
    auto slot = std::make_unique<UserSlot>();
    slot->vectors.resize(u.behaviours.size());
    slot->done.assign(u.behaviours.size(), false);
    users_.push_back(std::move(slot));
  }
}

BehaviourVectors::~BehaviourVectors() = default;

std::vector<const std::vector<float>*> BehaviourVectors::get(data::UserId user,
                                                             const std::vector<const data::Behaviour*>& history) const {
  const data::User& u = ds_.user(user);
  UserSlot& slot = *users_[user];
  std::vector<const std::vector<float>*> out;
  out.reserve(history.size());
  // Embedding happens under the user's lock: two tasks of one user would otherwise embed the same items twice.
  std::lock_guard<std::mutex> lock(slot.mutex);
  std::vector<std::size_t> missing;
  std::vector<std::string> texts;
  for (const data::Behaviour* b : history) {
    std::size_t i = behaviour_index(u, b);
    if (slot.done[i] || std::find(missing.begin(), missing.end(), i) != missing.end()) continue;
    missing.push_back(i);
    texts.push_back(relevance_text(ds_.product(b->product), b->review, 0, RelevanceText::kCompact));
  }
  if (!texts.empty()) {
    auto vectors = embedder_.embed(texts);
    for (std::size_t k = 0; k < missing.size(); ++k) {
      slot.vectors[missing[k]] = std::move(vectors[k]);
      slot.done[missing[k]] = true;
    }
  }
  for (const data::Behaviour* b : history) out.push_back(&slot.vectors[behaviour_index(u, b)]);
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// Retrieval and rendering
// ------------------------------------------------------------------------------------------------------------

std::vector<MemoryItem> relevant_items(const data::Dataset& ds, data::UserId user,
                                       const std::vector<const data::Behaviour*>& history,
                                       std::string_view instruction, const embed::Embedder& embedder,
                                       const RelevanceOptions& options) {
  if (history.empty() || options.k <= 0) return {};
  std::vector<float> query = embedder.embed({std::string(instruction)})[0];
  std::vector<MemoryItem> items(history.size());
  if (options.cache && options.text == RelevanceText::kCompact) {
    auto vectors = options.cache->get(user, history);
    for (std::size_t i = 0; i < history.size(); ++i) items[i].similarity = embed::dot(query, *vectors[i]);
  } else {
    std::vector<std::string> texts;
    texts.reserve(history.size());
    for (std::size_t i = 0; i < history.size(); ++i)
      texts.push_back(relevance_text(ds.product(history[i]->product), history[i]->review, i, options.text));
    auto vectors = embedder.embed(texts);
    for (std::size_t i = 0; i < history.size(); ++i) items[i].similarity = embed::dot(query, vectors[i]);
  }
  for (std::size_t i = 0; i < history.size(); ++i) {
    items[i].behaviour = history[i];
    items[i].product = &ds.product(history[i]->product);
    items[i].position = i;
  }
  std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(options.k), items.size());
  std::partial_sort(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(k), items.end(),
                    [](const MemoryItem& a, const MemoryItem& b) {
                      if (a.similarity != b.similarity) return a.similarity > b.similarity;
                      return a.position < b.position;
                    });
  items.resize(k);
  return items;
}

std::string render_memory_item(const MemoryItem& item, data::TaskType type) {
  const data::Product& p = *item.product;
  switch (type) {
    case data::TaskType::kSearch:
      return "Title:" + p.title + "\nMain Category:" + p.main_category + "\nPrice:" + p.price.str() +
             "\nStore:" + store_str(p) + "\n";
    case data::TaskType::kRecommend:
      return "Title:" + p.title + "\nMain Category:" + p.main_category + "\nAsin:" + p.parent_asin + "\n";
    case data::TaskType::kReview:
      return "Rating:" + item.behaviour->review.rating.str() + "\nText:" + item.behaviour->review.text + "\n";
  }
  return {};
}

std::string task_memory_header(data::TaskType type) {
  return "- Task type: " + std::string(data::to_string(type)) + "\n- Complete the task with the " +
         std::string(env::task_function(type)) + " tool\n- Task-specific Memory:\n";
}

std::string render_task_memory(const std::vector<MemoryItem>& items, data::TaskType type, const TaskMemoryStyle& style) {
  if (items.empty()) return "none";
  std::vector<const MemoryItem*> order;
  for (const auto& item : items) order.push_back(&item);
  if (type == data::TaskType::kRecommend) {
    std::stable_sort(order.begin(), order.end(), [&](const MemoryItem* a, const MemoryItem* b) {
      int64_t ta = a->behaviour->review.timestamp, tb = b->behaviour->review.timestamp;
      return style.recommend_newest_first ? ta > tb : ta < tb;
    });
  }
  std::string out = style.header ? task_memory_header(type) : std::string();
  const bool lines = type == data::TaskType::kRecommend && style.recommend_layout != RecommendLayout::kFull;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (lines) {
      const data::Product& p = *order[i]->product;
      if (style.recommend_layout == RecommendLayout::kNumbered) {
        if (order[i]->position >= style.history_size)
          throw UsageError("render_task_memory: a numbered memory needs the history's length");
        out += std::to_string(style.history_size - order[i]->position);
      } else {
        out += p.parent_asin;
      }
      out += " (" + p.main_category + ")\n";
      continue;
    }
    if (i) out += "|";
    out += render_memory_item(*order[i], type);
  }
  return out;
}

}  // namespace pwab::agents
