// src/agents/task_memory.h: task-specific memory (docs/decisions.md §4.6a), the memory of the "PUMA (gpt)" row.
//
// The k behaviours of the task's visible history (docs/decisions.md §1.9) most similar to the instruction, then only
// the fields that matter for the task's function: search → title, main category, price, store; recommend → title,
// main category, ASIN (re-sorted by time); review → rating and text. The structured items serve the heuristic
// agent; the rendering is the exact text an LLM agent appends to its system prompt.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "embed/embedder.h"

namespace pwab::agents {

//! One behaviour of the visible history chosen as memory.
struct MemoryItem {
  const data::Behaviour* behaviour = nullptr;
  const data::Product* product = nullptr;
  std::size_t position = 0;  //!< index in the task's visible history (time order)
  double similarity = 0;     //!< cosine with the instruction
};

//! The text a behaviour is compared with the instruction by.
enum class RelevanceText {
  //! Title, main category, store, category path and review title: about a tenth of kFull, so retrieval stays
  //! cheap; measured as good for the heuristic (the default; a deviation, see docs/agents/heuristic.md).
  kCompact,
  //! The original's pretty_history rendering of the item (docs/decisions.md §4.2), numbered by its position.
  kFull,
};

//! The original agents' memory item layout (docs/decisions.md §4.2 pretty_history), numbered `i`, with its blank lines.
std::string pretty_history(const data::Product& product, const data::Review& review, std::size_t i);
//! The text of one history item that is embedded for retrieval.
std::string relevance_text(const data::Product& product, const data::Review& review, std::size_t position,
                           RelevanceText kind);

//! A run-wide cache of the embeddings of kCompact relevance texts, one per behaviour: a user's tasks share most
//! of their history, so each behaviour is embedded once per run. Thread-safe.
class BehaviourVectors {
 public:
  //! `ds` and `embedder` must outlive the cache.
  BehaviourVectors(const data::Dataset& ds, const embed::Embedder& embedder);
  ~BehaviourVectors();
  //! The vector of each of `history` (behaviours of `user`, pointers into the user's behaviours), in order.
  //! The pointers stay valid for the cache's lifetime.
  std::vector<const std::vector<float>*> get(data::UserId user, const std::vector<const data::Behaviour*>& history) const;

 private:
  struct UserSlot;
  const data::Dataset& ds_;
  const embed::Embedder& embedder_;
  std::vector<std::unique_ptr<UserSlot>> users_;
};

struct RelevanceOptions {
  int k = 10;  //!< memory length (docs/decisions.md D1)
  RelevanceText text = RelevanceText::kCompact;
  //! Optional cache for kCompact texts (null: embed per call).
  const BehaviourVectors* cache = nullptr;
};

//! The k items of `history` (the task's visible history, time order) most similar to `instruction`, best first;
//! equal similarities keep the earlier item first. Fewer when the history is shorter; none when it is empty.
std::vector<MemoryItem> relevant_items(const data::Dataset& ds, data::UserId user,
                                       const std::vector<const data::Behaviour*>& history,
                                       std::string_view instruction, const embed::Embedder& embedder,
                                       const RelevanceOptions& options = {});

//! One item in the docs/decisions.md §4.6a layout of `type`: "Title:…\nMain Category:…\nPrice:…\nStore:…\n" (search),
//! "Title:…\nMain Category:…\nAsin:…\n" (recommend), "Rating:…\nText:…\n" (review); values as Python's str().
std::string render_memory_item(const MemoryItem& item, data::TaskType type);

//! "- Task type: <type>\n- Complete the task with the <tool> tool\n- Task-specific Memory:\n" (docs/decisions.md §4.6a;
//! the wording is our paraphrase of the original's).
std::string task_memory_header(data::TaskType type);

//! How a recommendation memory item is written.
enum class RecommendLayout {
  kFull,   //!< "Title:…\nMain Category:…\nAsin:…\n" (docs/decisions.md §4.6a), items joined with "|"
  //! "ASIN (Main Category)\n", one line per item, no "|": about 16 model tokens an item instead of 40–60, so a
  //! 64-token memory shows 4–5 items instead of one (docs/puma.md "Recommendation memory"). Ours, not the original's.
  kAsins,
  //! "N (Main Category)\n", where N is the item's place in the visible history counted from the newest (1 = the
  //! newest): the model answers with these numbers and the agent maps them back to ASINs (puma_prompt.h
  //! puma_action), so recommending is pointing at a line, not copying nine meaningless tokens of an ASIN
  //! (docs/puma.md "Recommendation memory"). Ours, not the original's.
  kNumbered,
};

struct TaskMemoryStyle {
  bool header = true;                   //!< the GPT agent's three-line header (docs/decisions.md §4.6a);
                                        //!< PUMA has none (§4.6b)
  bool recommend_newest_first = false;  //!< docs/decisions.md §4.6a sorts recommend items oldest first;
                                        //!< PUMA newest first (D9)
  RecommendLayout recommend_layout = RecommendLayout::kFull;
  //! The length of the visible history the items come from: kNumbered numbers an item history_size − position.
  std::size_t history_size = 0;
};

//! The memory text: the header, then the items rendered for `type` and joined with "|" (recommend items
//! re-sorted by review timestamp). The literal "none" when there are no items (an empty visible history).
std::string render_task_memory(const std::vector<MemoryItem>& items, data::TaskType type,
                               const TaskMemoryStyle& style = {});

}  // namespace pwab::agents
