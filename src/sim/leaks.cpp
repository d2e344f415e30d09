// The leak checks of sim/leaks.h.
#include "sim/leaks.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "core/text.h"

namespace pwab::sim {

namespace {

//! The length of a UTF-8 sequence that is punctuation or a symbol rather than part of a word, at `text[i]`; 0
//! otherwise. Covers Latin-1 punctuation and symbols (U+00A0–U+00BF, ×, ÷), the General Punctuation block
//! (U+2000–U+206F: dashes, curly quotes, ellipsis, thin spaces) and ™ / ℠, so "Earbuds — Black" splits like
//! "Earbuds - Black" and "Moreno™" like "Moreno".
std::size_t separator_length(std::string_view text, std::size_t i) {
  auto at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const unsigned lead = at(0);
  if (lead == 0xC2 && at(1) >= 0xA0 && at(1) <= 0xBF) return 2;
  if (lead == 0xC3 && (at(1) == 0x97 || at(1) == 0xB7)) return 2;
  if (lead == 0xE2 && at(1) == 0x80 && at(2) >= 0x80 && at(2) <= 0xBF) return 3;
  if (lead == 0xE2 && at(1) == 0x81 && at(2) >= 0x80 && at(2) <= 0xAF) return 3;
  if (lead == 0xE2 && at(1) == 0x84 && (at(2) == 0xA0 || at(2) == 0xA2)) return 3;
  return 0;
}

}  // namespace

std::vector<std::string> leak_words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    const bool upper = u >= 'A' && u <= 'Z';
    if (upper || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9')) {
      cur += static_cast<char>(upper ? u + ('a' - 'A') : u);  // ASCII only: other letters are kept as they are
    } else if (u >= 0x80) {
      if (std::size_t n = separator_length(text, i); n > 0) {
        flush();
        i += n - 1;
      } else {
        cur += static_cast<char>(u);  // a byte of a non-ASCII letter (é, ü, 中)
      }
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::string shared_run(const std::vector<std::string>& text, const std::vector<std::string>& source, int n) {
  if (source.empty() || text.empty() || n < 1) return "";
  const std::size_t len = std::min<std::size_t>(static_cast<std::size_t>(n), source.size());
  if (text.size() < len) return "";
  // Index the source's windows by their first word so each text position only tries windows that can match.
  std::unordered_map<std::string_view, std::vector<std::size_t>> starts;
  for (std::size_t i = 0; i + len <= source.size(); ++i) starts[source[i]].push_back(i);
  for (std::size_t j = 0; j + len <= text.size(); ++j) {
    auto it = starts.find(text[j]);
    if (it == starts.end()) continue;
    for (std::size_t i : it->second)
      if (std::equal(source.begin() + i, source.begin() + i + len, text.begin() + j)) {
        std::vector<std::string> run(text.begin() + j, text.begin() + j + len);
        return join(run, " ");
      }
  }
  return "";
}

Leak find_leak(std::string_view reply, const data::Dataset& ds, const data::Task& task, const LeakRule& rule) {
  Leak leak;
  if (reply.empty() || reply == "###STOP###") return leak;
  const std::vector<std::string> words = leak_words(reply);
  if (task.type == data::TaskType::kReview) {
    for (std::string_view part : {std::string_view(task.target_review.text), std::string_view(task.target_review.title)}) {
      std::string run = shared_run(words, leak_words(part), rule.review_words);
      // A review title shorter than the rule (e.g. "Five Stars") is common phrasing, not a quote.
      if (!run.empty() && leak_words(part).size() >= static_cast<std::size_t>(rule.review_words)) {
        leak.review = true;
        leak.evidence = run;
        break;
      }
    }
    return leak;
  }
  const data::Product& target = ds.product(task.target_product);
  if (!target.parent_asin.empty()) {
    const std::string asin = ascii_lower(target.parent_asin);
    for (const auto& w : words)
      if (w == asin) {
        leak.asin = true;
        leak.evidence = target.parent_asin;
        break;
      }
  }
  std::string run = shared_run(words, leak_words(target.title), rule.title_words);
  if (!run.empty()) {
    leak.title = true;
    if (leak.evidence.empty()) leak.evidence = run;
  }
  return leak;
}

}  // namespace pwab::sim
