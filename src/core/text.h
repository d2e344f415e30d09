// src/core/text.h: small text utilities shared by statistics, generators and renderers.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pwab {

//! Counts tokens the way a BERT-style basic tokenizer pre-splits text: every run of letters/digits (any
//! non-ASCII byte counts as a letter) is one token and every other non-space character is one token. It is
//! the "tokens" unit of `pwab data validate` statistics; sub-word LLM tokenizers give about 1.2-1.4x more.
std::size_t count_basic_tokens(std::string_view text);

//! Lower-cases ASCII letters only.
std::string ascii_lower(std::string_view s);
//! Splits on a delimiter, trimming ASCII whitespace from each piece; empty pieces are kept.
std::vector<std::string> split_trim(std::string_view s, char delim);
std::string_view trim(std::string_view s);
//! Calls `fn(line, line_no)` for every line of `text` that is not blank (line numbers count from 1 and include the
//! blank lines), the loop every JSONL reader needs to name the line a bad record is on.
void for_each_nonblank_line(std::string_view text, const std::function<void(std::string_view, std::size_t)>& fn);
//! Joins with a separator.
std::string join(const std::vector<std::string>& parts, std::string_view sep);
//! The share of the text's word n-grams that are distinct (words: runs of ASCII letters and digits, lower-cased;
//! other bytes separate them). 1 when the text has fewer than n words; a text that says one thing over and over
//! tends to 0.
double distinct_ngram_share(std::string_view text, int n);

}  // namespace pwab
