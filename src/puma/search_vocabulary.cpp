#include "puma/search_vocabulary.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "tok/tokenizer.h"

namespace pwab::puma {

std::vector<int32_t> search_vocabulary(const tok::Tokenizer& tokenizer, std::string_view prompt) {
  std::vector<int32_t> ids = tokenizer.encode(prompt, false, false);
  auto add = [&](std::string_view word) {
    if (word.empty()) return;
    std::vector<int32_t> w = tokenizer.encode(word, false, false);
    ids.insert(ids.end(), w.begin(), w.end());
  };
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  auto is_edge_punct = [](char c) {
    return std::ispunct(static_cast<unsigned char>(c)) != 0 && c != '&' && c != '$' && c != '%';
  };
  std::size_t i = 0;
  while (i < prompt.size()) {
    while (i < prompt.size() && is_space(prompt[i])) ++i;
    std::size_t j = i;
    while (j < prompt.size() && !is_space(prompt[j])) ++j;
    std::string_view word = prompt.substr(i, j - i);
    add(word);
    std::size_t a = 0, b = word.size();
    while (a < b && is_edge_punct(word[a])) ++a;
    while (b > a && is_edge_punct(word[b - 1])) --b;
    if (a > 0 || b < word.size()) add(word.substr(a, b - a));
    i = j;
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace pwab::puma
