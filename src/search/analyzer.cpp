#include "search/analyzer.h"

#include <algorithm>
#include <array>

#include "search/porter_stemmer.h"
#include "search/search.h"
#include "search/standard_tokenizer.h"
#include "search/unicode_classes.h"

namespace pwab::search {

void strip_english_possessive(std::string& token) {
  std::size_t n = token.size();
  if (n < 2 || (token[n - 1] != 's' && token[n - 1] != 'S')) return;
  std::string_view head(token.data(), n - 1);
  for (std::string_view apostrophe : {"'", "\xE2\x80\x99" /* U+2019 */, "\xEF\xBC\x87" /* U+FF07 */}) {
    if (head.ends_with(apostrophe)) {
      token.resize(n - 1 - apostrophe.size());
      return;
    }
  }
}

void lower_case(std::string& token) {
  bool ascii = true;
  for (char& c : token) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c + 32);
    }
  }
  if (ascii) return;
  std::string out;
  out.reserve(token.size());
  for (std::size_t pos = 0; pos < token.size();) {
    CodePoint cp = decode_utf8(token, pos);
    pos += cp.n_bytes;
    append_utf8(to_lower(cp.value), out);
  }
  token = std::move(out);
}

bool is_english_stop_word(std::string_view term) {
  static constexpr std::array<std::string_view, 33> kStopWords = {
      "a",    "an",   "and",   "are",  "as",    "at",    "be",   "but",  "by",   "for",  "if",
      "in",   "into", "is",    "it",   "no",    "not",   "of",   "on",   "or",   "such", "that",
      "the",  "their", "then", "there", "these", "they", "this", "to",   "was",  "will", "with"};
  static_assert(std::is_sorted(kStopWords.begin(), kStopWords.end()));
  if (term.size() > 5) return false;
  return std::binary_search(kStopWords.begin(), kStopWords.end(), term);
}

void analyze_into(std::string_view text, std::vector<std::string>& terms) {
  StandardTokenizer tokenizer(text);
  std::string_view token;
  std::string term;
  while (tokenizer.next(token)) {
    term.assign(token);
    strip_english_possessive(term);
    lower_case(term);
    if (is_english_stop_word(term)) continue;
    porter_stem(term);
    terms.push_back(term);
  }
}

std::vector<std::string> analyze(std::string_view text) {
  std::vector<std::string> terms;
  analyze_into(text, terms);
  return terms;
}

}  // namespace pwab::search
