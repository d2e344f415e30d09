// src/sim/leaks.h: whether a user simulator's reply gives the task's answer away (docs/simulator.md "Leaks").
//
// The LLM user's prompt holds the target product (ASIN and title) and, for review tasks, the user's true review,
// guarded only by an instruction not to reveal them. A reply that quotes them turns a multi-turn score into a
// measure of the simulator's discretion. This is the one definition of a leak: `pwab score` measures it per reply
// (report/diagnosis.h) and `--user-sim llm` can guard against it (LlmUserOptions::leak_guard).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace pwab::sim {

//! How long a quoted run must be to count. Words are lower-cased runs of letters and digits (non-ASCII bytes
//! count as letters), so punctuation, case and spacing do not hide a quote.
struct LeakRule {
  int title_words = 4;   //!< consecutive words of the target's title (the whole title when it is shorter)
  int review_words = 6;  //!< consecutive words of the true review's title or text (review tasks)
};

//! What one reply gives away. Search and recommendation tasks can leak the target's parent ASIN and title; a
//! review task's product is named by its instruction, so only its true review can leak.
struct Leak {
  bool asin = false;
  bool title = false;
  bool review = false;
  std::string evidence;  //!< the first leaked text (the ASIN or the quoted run of words), for the report

  bool any() const { return asin || title || review; }
};

//! Lower-cased runs of letters and digits: the words leak checks compare.
std::vector<std::string> leak_words(std::string_view text);

//! The reply checked against `task`'s target (see Leak). The stop sentinel and empty text leak nothing.
Leak find_leak(std::string_view reply, const data::Dataset& ds, const data::Task& task, const LeakRule& rule = {});

//! The first run of at least `n` consecutive words of `source` found in `text` (both word lists as leak_words
//! gives them), joined by spaces; "" when there is none. When `source` has fewer than n words, its whole list
//! must appear.
std::string shared_run(const std::vector<std::string>& text, const std::vector<std::string>& source, int n);

}  // namespace pwab::sim
