// src/search/standard_tokenizer.h: Lucene's StandardTokenizer (Unicode UAX #29 word boundaries) on UTF-8.
//
// Emits the segments Lucene 8 keeps: words and numbers (letters, digits and katakana joined by the UAX #29
// rules, so "don't", "5.3", "1,000", "u.s.a", "foo_bar" and "www.amazon.com" stay whole), single CJK
// ideographs and hiragana, runs of South-East Asian script, and emoji (including symbols such as (R) and TM
// signs, with their modifiers and ZWJ sequences). Spaces and punctuation are dropped. A token longer than 255
// UTF-16 units is cut there and scanning resumes after the cut, as Lucene does. Invalid UTF-8 bytes count as
// U+FFFD, which breaks tokens and is dropped.
#pragma once
#include <cstddef>
#include <string_view>

namespace pwab::search {

//! Lucene's default maximum token length, in UTF-16 code units.
inline constexpr int kMaxTokenUtf16Units = 255;

class StandardTokenizer {
 public:
  explicit StandardTokenizer(std::string_view text) : text_(text) {}
  //! Sets `token` to the next token (a view into the text) and returns true, or returns false at the end.
  bool next(std::string_view& token);

 private:
  std::size_t scan_word(std::size_t start) const;
  std::size_t scan_emoji(std::size_t start) const;
  std::size_t scan_complex_run(std::size_t start) const;
  std::size_t skip_extends(std::size_t pos) const;

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace pwab::search
