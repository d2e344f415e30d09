// src/agents/heuristic_policy.h: how the heuristic agent turns an instruction, its task-specific memory and the
// user's clues into task-function parameters (the PUMA pseudo-label policy, docs/decisions.md §5.2, made offline).
//
// Pure functions of their inputs: no model calls besides the embedder passed in, no hidden state, so the agent
// is deterministic and each rule can be tested on its own. Why each rule exists, and what it was measured to
// gain, is in docs/agents/heuristic.md.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "agents/task_memory.h"
#include "data/dataset.h"

namespace pwab::agents {

//! The knobs of the policy (AgentOptions::extra keys of the same names; defaults are the measured best).
struct HeuristicPolicy {
  //! search: add the store that recurs among the relevant memory items when the instruction names no brand
  //! (off: measured to cost a little R. Acc on the synthetic train split, where the instruction alone ranks the
  //! target near the top and a wrong brand pushes it down).
  bool search_memory_brand = false;
  //! search: how many of the most relevant memory items vote for that store,
  int search_brand_votes = 10;
  //! only items whose title shares this many words with the query (the same kind of product) vote,
  int search_brand_min_overlap = 2;
  //! and the store needs this many votes.
  int search_brand_min_count = 2;
  //! recommend: keep only history items of the inferred main category (PUMA's pseudo-label, docs/decisions.md §5.2;
  //! falls back to all items when none). Off: SASRec is trained on whole mixed-category sequences, and the whole recent
  //! history measured 3x better.
  bool recommend_same_category = false;
  //! recommend: the most recent items passed (the tool uses the last 30).
  int recommend_max_items = 30;
  //! review: reuse the user's own past sentences about the aspects the instruction names.
  bool review_own_phrasing = true;
  //! review: add the sentences the user habitually writes at this rating (openers naming the product, the
  //! variant chosen, closings), with the reviewed product's name and variant filled in.
  bool review_habits = true;
  //! review: keep the instruction's verdict sentences ("I absolutely love it!").
  bool review_verdict = true;
};

//! What the user told the agent in a multi-turn dialogue, accumulated over replies.
struct Clues {
  std::vector<std::string> search_terms;  //!< content words for the search query, in order, no duplicates
  std::string brand;                      //!< "I'd like it to be from X"
  std::string category;                   //!< "it's something from X[, in Y]": the text after "from"
  std::string kind;                       //!< "some kind of X"
  int stars = 0;                          //!< review: the stated rating (0 = unknown)
  //! review: (aspect, polarity −1/0/+1) in the order given
  std::vector<std::pair<std::string, int>> aspects;
  enum class Length { kUnknown, kShort, kParagraph, kDetailed } length = Length::kUnknown;
  bool satisfied = false;  //!< the user is happy and wants to stop
  bool exhausted = false;  //!< the user has nothing more to add

  bool operator==(const Clues&) const = default;
};

//! Reads one user reply into `clues` (reference: the scripted user's clause shapes, docs/simulator.md, but any
//! sentence's content words reach the search query). Returns true when it added information.
bool fold_reply(std::string_view reply, data::TaskType type, Clues& clues);

//! The instruction with greetings, requests, politeness, price talk and references to past purchases removed:
//! the product descriptors a BM25 query needs ("minimalist black wireless earbuds Voltrix large noise
//! cancelling").
std::string search_terms_of_instruction(std::string_view instruction);

//! True when the instruction names a brand: "... from <Capitalized>" or a store of the memory items.
bool instruction_names_brand(std::string_view instruction, const std::vector<MemoryItem>& memory);

//! The search query: the instruction's descriptors, the memory's preferred store when the instruction names no
//! brand (policy.search_memory_brand), and the clues' terms.
std::string build_search_query(std::string_view instruction, const std::vector<MemoryItem>& memory,
                               const Clues& clues, const HeuristicPolicy& policy);

//! The main category the memory points to: the category of the most similar items, weighted by similarity;
//! "" without memory.
std::string inferred_category(const std::vector<MemoryItem>& memory);

//! The recommendation input: the parent ASINs of the visible history, time order (oldest first), restricted to
//! the inferred (or clued) category when that leaves any, else all of them (docs/decisions.md D8 (a)); the last
//! policy.recommend_max_items. Clued brand or kind items are moved to the end, most recent last.
std::vector<std::string> build_recommend_sequence(const data::Dataset& ds,
                                                  const std::vector<const data::Behaviour*>& history,
                                                  const std::vector<MemoryItem>& memory, const Clues& clues,
                                                  const HeuristicPolicy& policy);

//! The review text: the instruction's verdict and the opinions it asks for, in the user's own phrasing where the
//! past reviews (all of `history`, never the task's own review) have a sentence about the same aspect, plus the
//! user's habitual remarks and the clues' aspects. `product` is the reviewed product as the first observation
//! shows it (may be null).
std::string build_review(std::string_view instruction, const data::Product* product,
                         const std::vector<const data::Behaviour*>& history, const data::Dataset& ds,
                         const Clues& clues, const HeuristicPolicy& policy);

//! The question the agent asks next in a multi-turn dialogue: the first of a fixed list not yet `asked` whose
//! answer is still unknown (products: category for recommendations, brand, attributes, features, category;
//! reviews: aspects, more aspects, length and tone), then an open question. The wording uses the words a user,
//! scripted or LLM, reacts to, and avoids price words: neither search nor recommendation can use a price.
std::string next_question(data::TaskType type, const Clues& clues, const std::vector<std::string>& asked,
                          bool instruction_names_brand);

}  // namespace pwab::agents
