// src/agents/memory.cpp: selection and rendering of the fc agent's memory strategies.
#include "agents/memory.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"
#include "core/text.h"
#include "env/tools.h"

namespace pwab::agents {

std::string_view to_string(MemoryStrategy s) {
  switch (s) {
    case MemoryStrategy::kNone: return "none";
    case MemoryStrategy::kRandom: return "random";
    case MemoryStrategy::kLast: return "last";
    case MemoryStrategy::kRelevant: return "relevant";
    case MemoryStrategy::kTaskSpec: return "taskspec";
  }
  return "none";
}

MemoryStrategy parse_memory_strategy(std::string_view s) {
  if (s.empty() || s == "none") return MemoryStrategy::kNone;
  if (s == "random") return MemoryStrategy::kRandom;
  if (s == "last") return MemoryStrategy::kLast;
  if (s == "relevant") return MemoryStrategy::kRelevant;
  if (s == "taskspec") return MemoryStrategy::kTaskSpec;
  throw UsageError("unknown memory '" + std::string(s) + "' (available: none, random, last, relevant, taskspec)");
}

std::string_view memory_header(MemoryStrategy s) {
  // One opening phrase for all three; only the parenthetical differs (docs/decisions.md §4.2; our own words).
  switch (s) {
    case MemoryStrategy::kLast:
      return "\nWhat you know about this user from memory (their latest purchases with reviews, newest first):\n\n";
    case MemoryStrategy::kRelevant:
      return "\nWhat you know about this user from memory (their purchases with reviews closest to this request, "
             "most related first):\n\n";
    case MemoryStrategy::kRandom:
      return "\nWhat you know about this user from memory (a random sample of their purchases with reviews):\n\n";
    case MemoryStrategy::kNone:
    case MemoryStrategy::kTaskSpec: break;
  }
  return {};
}

namespace {

//! The history newest first; Python's sorted(..., reverse=True) is stable, so ties keep their stored order.
std::vector<const data::Behaviour*> newest_first(const std::vector<const data::Behaviour*>& history) {
  std::vector<const data::Behaviour*> out = history;
  std::stable_sort(out.begin(), out.end(), [](const data::Behaviour* a, const data::Behaviour* b) {
    return a->review.timestamp > b->review.timestamp;
  });
  return out;
}

std::size_t clamp_k(int k, std::size_t n) { return k <= 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(k), n); }

}  // namespace

std::vector<const data::Behaviour*> last_memory(const std::vector<const data::Behaviour*>& history, int k) {
  std::vector<const data::Behaviour*> out = newest_first(history);
  out.resize(clamp_k(k, out.size()));
  return out;
}

uint64_t random_memory_seed(uint64_t run_seed, const data::Task& task) {
  constexpr uint64_t kStream = 0x6D656D2D72616E64ull;  // "mem-rand": keeps this stream apart from other uses
  uint64_t task_id = (static_cast<uint64_t>(task.split) << 32) | task.index;
  return derive_seed(run_seed, task_id, kStream);
}

std::vector<const data::Behaviour*> random_memory(const std::vector<const data::Behaviour*>& history, int k,
                                                  uint64_t seed) {
  // Partial Fisher-Yates over the newest-first list: position i takes a uniform pick among the items not yet
  // drawn, so the prefix is a uniform sample in draw order.
  std::vector<const data::Behaviour*> pool = newest_first(history);
  std::size_t n = clamp_k(k, pool.size());
  Rng rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t j = i + static_cast<std::size_t>(rng.below(pool.size() - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(n);
  return pool;
}

std::string render_baseline_memory(const data::Dataset& ds, MemoryStrategy s,
                                   const std::vector<const data::Behaviour*>& items) {
  std::string out(memory_header(s));
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += "\n";
    out += pretty_history(ds.product(items[i]->product), items[i]->review, i);
  }
  return out;
}

std::string baseline_memory(const data::Dataset& ds, const data::Task& task, MemoryStrategy s,
                            const MemoryOptions& options, const embed::Embedder* embedder) {
  std::vector<const data::Behaviour*> history = ds.visible_history(task);
  std::vector<const data::Behaviour*> items;
  switch (s) {
    case MemoryStrategy::kNone: return std::string(kNoMemory);
    case MemoryStrategy::kTaskSpec:
      throw UsageError("baseline_memory: taskspec memory needs a predicted function (taskspec_memory)");
    case MemoryStrategy::kLast: items = last_memory(history, options.k); break;
    case MemoryStrategy::kRandom:
      items = random_memory(history, options.k, random_memory_seed(options.run_seed, task));
      break;
    case MemoryStrategy::kRelevant: {
      if (!embedder) throw UsageError("relevant memory needs an embedder");
      // An empty history gives no items (the original failed in its encoder here): the header alone.
      RelevanceOptions ro{options.k, options.relevance, options.cache};
      for (const MemoryItem& m : relevant_items(ds, task.user, history, task.instruction, *embedder, ro))
        items.push_back(m.behaviour);
      break;
    }
  }
  return render_baseline_memory(ds, s, items);
}

TaskSpecMemory taskspec_memory(const data::Dataset& ds, const data::Task& task, std::string_view predicted_function,
                               const MemoryOptions& options, const embed::Embedder& embedder) {
  TaskSpecMemory out;
  out.type = env::task_type_of_function(trim(predicted_function));  // docs/decisions.md D3: only the three exact names
  out.text = std::string(kNoMemory);
  if (!out.type) return out;
  std::vector<const data::Behaviour*> history = ds.visible_history(task);
  if (history.empty()) return out;
  RelevanceOptions ro{options.k, options.relevance, options.cache};
  out.items = relevant_items(ds, task.user, history, task.instruction, embedder, ro);
  out.text = render_task_memory(out.items, *out.type);
  return out;
}

}  // namespace pwab::agents
