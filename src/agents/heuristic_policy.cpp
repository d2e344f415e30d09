// src/agents/heuristic_policy.cpp: instruction parsing, memory-derived preferences, review composition and clue
// folding for the heuristic agent. The numbers behind each rule are in docs/agents/heuristic.md.
#include "agents/heuristic_policy.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace pwab::agents {
namespace {

using Json = nlohmann::json;

// ------------------------------------------------------------------------------------------------------------
// Text helpers
// ------------------------------------------------------------------------------------------------------------

std::string lower(std::string_view s) { return ascii_lower(s); }

bool in(std::string_view w, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), w) != set.end();
}

//! Sentences: split after '.', '!' or '?' followed by a space and then not a lower-case letter, so "$12.99",
//! "5.3" and "Abren Co. t-shirt" stay whole.
std::vector<std::string> sentences_of(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    cur += text[i];
    bool mark = text[i] == '.' || text[i] == '!' || text[i] == '?' || text[i] == '\n';
    if (!mark) continue;
    std::size_t j = i + 1;
    while (j < text.size() && text[j] == ' ') ++j;
    bool end = i + 1 == text.size() || text[i] == '\n' ||
               (j > i + 1 && (j == text.size() || !std::islower(static_cast<unsigned char>(text[j]))));
    if (!end) continue;
    std::string t(trim(cur));
    if (!t.empty()) out.push_back(std::move(t));
    cur.clear();
  }
  std::string t(trim(cur));
  if (!t.empty()) out.push_back(std::move(t));
  return out;
}

//! Lower-case runs of letters and digits (non-ASCII bytes count as letters).
std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c >= 0x80 || c == '\'') {
      if (c != '\'') cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool has_any_word(const std::vector<std::string>& words, std::span<const std::string_view> keys) {
  return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return in(w, keys); });
}

//! Whitespace tokens with surrounding punctuation stripped ("Co.," → "Co", "5.3" stays, "x-large" stays).
std::vector<std::string> raw_tokens(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    std::string_view tok = s.substr(i, j - i);
    auto strip = [](char c) { return std::string_view(".,!?;:()\"'[]").find(c) != std::string_view::npos; };
    while (!tok.empty() && strip(tok.front())) tok.remove_prefix(1);
    while (!tok.empty() && strip(tok.back())) tok.remove_suffix(1);
    if (!tok.empty()) out.emplace_back(tok);
    i = j;
  }
  return out;
}

bool contains_ci(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return false;
  return lower(haystack).find(lower(needle)) != std::string::npos;
}

//! True if `phrase` occurs in `text` as whole words (both lower-case).
bool has_phrase(const std::string& text, const std::string& phrase) {
  if (phrase.empty()) return false;
  for (std::size_t pos = text.find(phrase); pos != std::string::npos; pos = text.find(phrase, pos + 1)) {
    bool start = pos == 0 || !std::isalnum(static_cast<unsigned char>(text[pos - 1]));
    std::size_t e = pos + phrase.size();
    bool end = e == text.size() || !std::isalnum(static_cast<unsigned char>(text[e]));
    if (start && end) return true;
  }
  return false;
}

// ------------------------------------------------------------------------------------------------------------
// Word lists
// ------------------------------------------------------------------------------------------------------------

// Words that carry no product description: greetings, requests, politeness, pronouns, auxiliaries. Lucene drops
// its 33 stop words itself; these are the others that would only match marketing copy.
constexpr std::string_view kFiller[] = {
    "hi", "hello", "hey", "there", "please", "can", "could", "would", "will", "you", "me", "i", "im", "id", "ill",
    "my", "find", "search", "help", "need", "needs", "looking", "look", "want", "wants", "like", "get", "got",
    "some", "something", "a", "an", "the", "for", "from", "in", "with", "of", "to", "it", "its", "is", "be",
    "that", "this", "and", "or", "one", "thing", "things", "kind", "sort", "should", "must", "have", "has",
    "what", "care", "about", "most", "key", "feature", "really", "just", "also", "any", "anything", "maybe",
    "thanks", "thank", "sure", "ok", "okay", "well", "right", "noted", "fine", "let", "think", "happy", "good",
    "question", "oh", "course", "after", "great", "keep", "do", "dont", "mind", "more", "ideally", "so", "on",
    "at", "by", "as", "we", "here", "stop", "wanted", "yes", "no", "not", "much", "very", "too", "which", "thats",
    "none", "those", "these", "near", "top", "closer", "quite", "isnt", "told", "everything", "know", "all",
    "else", "add", "nothing", "tell", "were", "was", "are", "am", "way", "them", "they", "your", "our", "us",
    "up", "but"};

// Sentences about price: no BM25 field can use them (the price is a number in the document).
constexpr std::string_view kPriceWords[] = {"budget", "cheap", "cheaper", "affordable", "afford", "price", "prices",
                                            "pay", "paying", "premium", "expensive", "cost", "costs", "spend",
                                            "pricey", "dollars", "money"};
// Sentences about earlier purchases describe another product (a complement or a past brand), not this one.
constexpr std::string_view kHistoryWords[] = {"bought", "purchased", "purchase", "ordered", "owned", "earlier"};
// Abstract priorities ("quality matters most to me") that every product's marketing text shares.
constexpr std::string_view kFocusMarkers[] = {"matters", "important", "priority"};

// Review opinion words (lower case): what a judgement of an aspect sounds like.
constexpr std::string_view kPositive[] = {"great", "excellent", "good", "impressive", "impressed", "fantastic", "solid",
                                          "love", "loved", "happy", "perfect", "spot", "better", "amazing", "best",
                                          "praise", "nice", "wonderful", "pleased", "awesome"};
constexpr std::string_view kNegative[] = {"letdown", "disappointing", "disappointed", "poor", "mediocre", "bad",
                                          "worse", "worst", "complaint", "problem", "unfortunately", "below", "wish",
                                          "terrible", "awful", "flimsy", "broke", "broken"};
constexpr std::string_view kNeutral[] = {"okay", "ok", "fine", "average", "acceptable", "decent", "mixed"};

bool is_price_sentence(std::string_view s) {
  return s.find('$') != std::string_view::npos || has_any_word(words_of(s), kPriceWords);
}

bool is_history_sentence(std::string_view s) {
  auto w = words_of(s);
  if (has_any_word(w, kHistoryWords)) return true;
  // "I got a Voltrix speaker a while ago and loved it."
  return lower(s).find("a while ago") != std::string::npos || lower(s).find("last time") != std::string::npos;
}

bool is_focus_sentence(std::string_view s) { return has_any_word(words_of(s), kFocusMarkers); }

//! −1, 0 or +1 for an opinion phrase ("were great", "was a letdown"); `fallback` when it has no opinion words.
int polarity_of(const std::vector<std::string>& words, int fallback) {
  int score = 0;
  bool neutral = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    bool negated = i > 0 && (words[i - 1] == "not" || words[i - 1] == "never" || words[i - 1] == "didnt" ||
                             words[i - 1] == "isnt" || words[i - 1] == "wasnt");
    if (in(words[i], kPositive)) score += negated ? -1 : 1;
    else if (in(words[i], kNegative)) score -= 1;
    else if (in(words[i], kNeutral)) neutral = true;
  }
  if (score > 0) return 1;
  if (score < 0) return -1;
  return neutral ? 0 : fallback;
}

//! "one".."five" or "1".."5" → 1..5; 0 otherwise.
int star_number(std::string_view w) {
  static constexpr std::string_view kNames[] = {"one", "two", "three", "four", "five"};
  for (int i = 0; i < 5; ++i)
    if (w == kNames[i] || (w.size() == 1 && w[0] == '1' + i)) return i + 1;
  return 0;
}

//! The star count a sentence states ("I'd give it 4 stars", "five stars from me"); 0 if none.
int stated_stars(std::string_view sentence) {
  auto w = words_of(sentence);
  for (std::size_t i = 1; i < w.size(); ++i)
    if ((w[i] == "star" || w[i] == "stars") && star_number(w[i - 1])) return star_number(w[i - 1]);
  return 0;
}

// ------------------------------------------------------------------------------------------------------------
// Review pieces
// ------------------------------------------------------------------------------------------------------------

//! The aspects an instruction asks to mention: "Mention that the A, B and C were great, but the D was a
//! letdown." → (A, +1), (B, +1), (C, +1), (D, −1). Works on any "... that the X was/were Y" sentence.
std::vector<std::pair<std::string, int>> requested_aspects(std::string_view sentence, int fallback_polarity) {
  std::string s = lower(sentence);
  auto that = s.find("that ");
  if (that == std::string::npos) return {};
  std::string rest = s.substr(that + 5);
  // Clauses: ", but " and "; " separate judgements.
  std::vector<std::string> clauses;
  for (std::size_t start = 0;;) {
    std::size_t cut = std::min(rest.find(", but ", start), rest.find("; ", start));
    clauses.push_back(rest.substr(start, cut == std::string::npos ? std::string::npos : cut - start));
    if (cut == std::string::npos) break;
    start = cut + (rest.compare(cut, 6, ", but ") == 0 ? 6 : 2);
  }
  std::vector<std::pair<std::string, int>> out;
  for (std::string clause : clauses) {
    // "the a, b and c were great" → subject "a, b and c", judgement "great".
    std::size_t verb = std::string::npos, verb_len = 0;
    for (std::string_view v : {" were ", " was ", " is ", " are "}) {
      auto p = clause.find(v);
      if (p != std::string::npos && p < verb) verb = p, verb_len = v.size();
    }
    if (verb == std::string::npos) continue;
    std::string subject = clause.substr(0, verb);
    int polarity = polarity_of(words_of(clause.substr(verb + verb_len)), fallback_polarity);
    if (subject.starts_with("the ")) subject.erase(0, 4);
    for (std::size_t p; (p = subject.find(" and ")) != std::string::npos;) subject.replace(p, 5, ", ");
    for (const auto& a : split_trim(subject, ',')) {
      std::string aspect(a);
      if (aspect.starts_with("the ")) aspect.erase(0, 4);
      if (!aspect.empty()) out.emplace_back(aspect, polarity);
    }
  }
  return out;
}

//! A plain sentence for an aspect the user's past reviews never phrase.
std::string default_aspect_sentence(const std::string& aspect, int polarity) {
  if (polarity > 0) return "The " + aspect + " is great.";
  if (polarity < 0) return "The " + aspect + " was a letdown.";
  return "The " + aspect + " is okay.";
}

//! True if `sentence` (lower case) is about `aspect` as a whole noun phrase: at its start or after "the ".
bool about_aspect(const std::string& sentence, const std::string& aspect) {
  for (std::size_t pos = sentence.find(aspect); pos != std::string::npos; pos = sentence.find(aspect, pos + 1)) {
    std::size_t e = pos + aspect.size();
    bool end = e == sentence.size() || !std::isalnum(static_cast<unsigned char>(sentence[e]));
    bool start = pos == 0 || (pos >= 4 && sentence.compare(pos - 4, 4, "the ") == 0 &&
                              (pos == 4 || !std::isalnum(static_cast<unsigned char>(sentence[pos - 5]))));
    if (start && end) return true;
  }
  return false;
}

//! True if the sentence names its own product ("… for leggings"): such a sentence does not carry over.
bool names_own_product(const std::string& sentence_lower, const data::Product& p, const std::string& aspect) {
  for (const auto& w : words_of(p.title))
    if (w.size() >= 4 && aspect.find(w) == std::string::npos && has_phrase(sentence_lower, w)) return true;
  return false;
}

//! The user's most recent past-review sentence about `aspect` with the same polarity that does not name its own
//! product, if any.
std::optional<std::string> own_sentence(const std::string& aspect, int polarity,
                                        const std::vector<const data::Behaviour*>& history, const data::Dataset& ds,
                                        int overall) {
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    for (const auto& s : sentences_of((*it)->review.text)) {
      std::string ls = lower(s);
      if (!about_aspect(ls, aspect) || names_own_product(ls, ds.product((*it)->product), aspect)) continue;
      if (polarity_of(words_of(s), overall) == polarity) return s;
    }
  }
  return std::nullopt;
}

//! The rating band of a review: +1 (4-5 stars), 0 (3), −1 (1-2).
int band_of(double rating) { return rating >= 4 ? 1 : rating >= 3 ? 0 : -1; }

//! A product's details as (key, value) text pairs, stored order; the keys that name the listing are left out.
std::vector<std::pair<std::string, std::string>> product_details(const data::Product& p) {
  Json j = Json::parse(p.details_json, nullptr, false);
  if (j.is_string()) j = Json::parse(j.get<std::string>(), nullptr, false);
  std::vector<std::pair<std::string, std::string>> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) continue;
    std::string lk = lower(k);
    bool listing = false;
    for (std::string_view bad : {"brand", "manufacturer", "date", "weight", "asin", "model", "rank", "upc"})
      listing |= lk.find(bad) != std::string::npos;
    if (!listing && v.get<std::string>().size() >= 2) out.emplace_back(k, v.get<std::string>());
  }
  return out;
}

//! A past review sentence with its product's name and chosen variant turned into slots, so that a habit such as
//! "This Mojor mouse is a keeper." or "I went with the Graphite option (color)" carries over to another product:
//! "{item}" stands for the store and the noun that follows it, "{value}"/"{key}" for a detail value and its key.
std::string to_template(const std::string& sentence, const data::Product& p,
                        const std::vector<std::pair<std::string, std::string>>& details) {
  std::string t = sentence;
  if (p.store && p.store->size() >= 2) {
    auto pos = t.find(*p.store);
    if (pos != std::string::npos) {
      // The name runs from the store to the next verb, conjunction or punctuation.
      std::size_t e = pos + p.store->size();
      while (e < t.size()) {
        std::size_t w = e;
        while (w < t.size() && t[w] == ' ') ++w;
        std::size_t we = w;
        while (we < t.size() && (std::isalnum(static_cast<unsigned char>(t[we])) || t[we] == '-' || t[we] == '\'')) ++we;
        std::string word = lower(t.substr(w, we - w));
        static constexpr std::string_view kNameEnd[] = {"is", "was", "are", "were", "hoping", "and", "which", "that", "but", "has", "works"};
        if (word.empty() || in(word, kNameEnd)) break;
        e = we;
      }
      t.replace(pos, e - pos, "{item}");
    }
  }
  for (const auto& [key, value] : details) {
    auto vpos = t.find(value);
    auto kpos = lower(t).find("(" + lower(key) + ")");
    if (vpos == std::string::npos || kpos == std::string::npos) continue;
    t.replace(kpos, key.size() + 2, "({key})");
    vpos = t.find(value);
    if (vpos != std::string::npos) t.replace(vpos, value.size(), "{value}");
    break;
  }
  return t;
}

//! Fills a template's slots for the reviewed product; nullopt when a slot cannot be filled.
std::optional<std::string> fill_template(std::string t, const std::string& item, const data::Product* product) {
  if (auto pos = t.find("{item}"); pos != std::string::npos) {
    if (item.empty()) return std::nullopt;
    t.replace(pos, 6, item);
  }
  if (t.find("{value}") != std::string::npos || t.find("{key}") != std::string::npos) {
    auto details = product ? product_details(*product) : std::vector<std::pair<std::string, std::string>>{};
    if (details.empty()) return std::nullopt;
    if (auto pos = t.find("{value}"); pos != std::string::npos) t.replace(pos, 7, details[0].second);
    if (auto pos = t.find("{key}"); pos != std::string::npos) t.replace(pos, 5, lower(details[0].first));
  }
  return t;
}

//! Sentence templates the user repeats across past reviews of the same rating band (closings such as "Would buy
//! again.", openers such as "This {item} is a keeper."), most frequent first; each must occur in at least two
//! reviews and in a quarter of that band's reviews.
std::vector<std::string> habitual_templates(const std::vector<const data::Behaviour*>& history, const data::Dataset& ds,
                                            int band) {
  std::map<std::string, int> count;
  std::vector<std::string> order;
  int n_reviews = 0;
  for (const data::Behaviour* b : history) {
    if (band_of(b->review.rating.number().value_or(3)) != band) continue;
    ++n_reviews;
    std::vector<std::string> seen;
    const data::Product& p = ds.product(b->product);
    const auto details = product_details(p);
    for (const auto& s : sentences_of(b->review.text)) {
      std::string t = to_template(s, p, details);
      if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
      seen.push_back(t);
      if (count[t]++ == 0) order.push_back(t);
    }
  }
  std::vector<std::string> out;
  for (const auto& t : order)
    if (count[t] >= 2 && count[t] * 4 >= n_reviews) out.push_back(t);
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) { return count[a] > count[b]; });
  return out;
}

//! "Please post a review of my Abren Co. t-shirt." → "Abren Co. t-shirt": the words after the last "the"/"my"
//! up to "I bought"/"I got" or the end; "" if there are none.
std::string reviewed_item_name(const std::string& request) {
  std::string ls = lower(request);
  std::size_t start = std::string::npos;
  for (std::string_view m : {" the ", " my ", " this "}) {
    auto p = ls.rfind(m);
    if (p != std::string::npos && (start == std::string::npos || p + m.size() > start)) start = p + m.size();
  }
  if (start == std::string::npos) return {};
  std::size_t end = ls.size();
  for (std::string_view m : {" i bought", " i got", " i purchased", " i ordered", " i received", " that i"})
    end = std::min(end, ls.find(m, start));
  std::string name(trim(request.substr(start, end - start)));
  while (!name.empty() && (name.back() == '.' || name.back() == '!' || name.back() == '?')) name.pop_back();
  return name;
}

int overall_polarity(int stars, const std::vector<std::string>& verdict_sentences) {
  if (stars) return stars >= 4 ? 1 : stars == 3 ? 0 : -1;
  std::vector<std::string> words;
  for (const auto& s : verdict_sentences)
    for (auto& w : words_of(s)) words.push_back(std::move(w));
  return polarity_of(words, 1);
}

// ------------------------------------------------------------------------------------------------------------
// Reply reading
// ------------------------------------------------------------------------------------------------------------

bool is_feedback_sentence(const std::string& ls) {
  for (std::string_view m : {"that's not it", "not what i asked", "closer, but", "isn't near the top",
                             "doesn't sound like me", "not quite how", "not it,", "not quite,", "not like me,"})
    if (ls.find(m) != std::string::npos) return true;
  return false;
}

//! Text after the first occurrence of `marker` in `s` (original case), trimmed of final punctuation; "" if none.
std::string after(std::string_view s, std::string_view marker) {
  std::string ls = lower(s);
  auto p = ls.find(marker);
  if (p == std::string::npos) return {};
  std::string rest(trim(s.substr(p + marker.size())));
  while (!rest.empty() && (rest.back() == '.' || rest.back() == '!' || rest.back() == ',')) rest.pop_back();
  return rest;
}

void add_term(std::vector<std::string>& terms, const std::string& t) {
  if (std::find(terms.begin(), terms.end(), t) == terms.end()) terms.push_back(t);
}

//! Content tokens of a sentence for the search query (original case kept, filler dropped).
std::vector<std::string> content_tokens(std::string_view sentence) {
  std::vector<std::string> out;
  for (const auto& tok : raw_tokens(sentence)) {
    auto w = words_of(tok);
    std::string joined;
    for (const auto& x : w) joined += x;
    if (joined.empty() || in(joined, kFiller)) continue;
    out.push_back(tok);
  }
  return out;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------------
// Search
// ------------------------------------------------------------------------------------------------------------

std::string search_terms_of_instruction(std::string_view instruction) {
  std::vector<std::string> terms;
  bool request_seen = false;
  for (const auto& s : sentences_of(instruction)) {
    auto tokens = content_tokens(s);
    if (tokens.empty()) continue;  // greetings and thanks
    // The request itself (the first sentence with content) is kept whole, even when it mentions a price ("a
    // premium blanket"); later sentences about price, past purchases or abstract priorities are dropped.
    if (request_seen && (is_price_sentence(s) || is_history_sentence(s) || is_focus_sentence(s))) continue;
    request_seen = true;
    for (auto& t : tokens)
      if (t.find('$') == std::string::npos) terms.push_back(std::move(t));
  }
  return join(terms, " ");
}

namespace {

//! The store the user keeps buying this kind of product from: among the `votes` most relevant memory items, those
//! whose title shares at least `min_overlap` words with the query (the same kind of product) vote for their
//! store; the winner needs `min_count` votes. "" when no store qualifies.
std::string memory_store(const std::vector<MemoryItem>& memory, const std::string& query, const HeuristicPolicy& policy) {
  auto query_words = words_of(query);
  std::map<std::string, int> count;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < memory.size() && i < static_cast<std::size_t>(policy.search_brand_votes); ++i) {
    const auto& store = memory[i].product->store;
    if (!store || store->empty()) continue;
    auto title = words_of(memory[i].product->title);
    std::sort(title.begin(), title.end());
    title.erase(std::unique(title.begin(), title.end()), title.end());
    int overlap = 0;
    for (const auto& w : title) overlap += std::find(query_words.begin(), query_words.end(), w) != query_words.end();
    if (overlap < policy.search_brand_min_overlap) continue;
    if (!count.count(*store)) order.push_back(*store);
    count[*store] += 1;
  }
  std::string best;
  int best_n = 0;
  for (const auto& st : order)
    if (count[st] > best_n) best = st, best_n = count[st];
  return best_n >= policy.search_brand_min_count ? best : std::string();
}

}  // namespace

bool instruction_names_brand(std::string_view instruction, const std::vector<MemoryItem>& memory) {
  for (std::size_t p = instruction.find(" from "); p != std::string_view::npos; p = instruction.find(" from ", p + 1))
    if (p + 6 < instruction.size() && std::isupper(static_cast<unsigned char>(instruction[p + 6]))) return true;
  for (const auto& m : memory)
    if (m.product->store && contains_ci(instruction, *m.product->store)) return true;
  return false;
}

std::string build_search_query(std::string_view instruction, const std::vector<MemoryItem>& memory, const Clues& clues,
                               const HeuristicPolicy& policy) {
  std::string query = search_terms_of_instruction(instruction);
  if (query.empty()) query = std::string(instruction);  // nothing recognisable: BM25 gets the raw text
  bool brand_known = !clues.brand.empty() || instruction_names_brand(instruction, memory);
  if (policy.search_memory_brand && !brand_known) {
    std::string store = memory_store(memory, query, policy);
    if (!store.empty()) query += " " + store;
  }
  for (const auto& t : clues.search_terms) query += " " + t;
  return query;
}

// ------------------------------------------------------------------------------------------------------------
// Recommend
// ------------------------------------------------------------------------------------------------------------

std::string inferred_category(const std::vector<MemoryItem>& memory) {
  std::map<std::string, double> weight;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < memory.size() && i < 5; ++i) {
    const std::string& c = memory[i].product->main_category;
    if (!weight.count(c)) order.push_back(c);
    weight[c] += std::max(0.0, memory[i].similarity) + 1e-9;
  }
  std::string best;
  double best_w = -1;
  for (const auto& c : order)
    if (weight[c] > best_w) best = c, best_w = weight[c];
  return best;
}

std::vector<std::string> build_recommend_sequence(const data::Dataset& ds,
                                                  const std::vector<const data::Behaviour*>& history,
                                                  const std::vector<MemoryItem>& memory, const Clues& clues,
                                                  const HeuristicPolicy& policy) {
  std::vector<const data::Behaviour*> items = history;
  // The category: what the user said, else what the relevant memory points to.
  auto in_category = [&](const data::Behaviour* b, const std::string& c) {
    const std::string& mc = ds.product(b->product).main_category;
    return !mc.empty() && (lower(mc) == lower(c) || contains_ci(c, mc));
  };
  std::string category = !clues.category.empty() ? clues.category
                         : policy.recommend_same_category ? inferred_category(memory)
                                                          : std::string();
  if (!category.empty()) {
    std::vector<const data::Behaviour*> same;
    for (const auto* b : items)
      if (in_category(b, category)) same.push_back(b);
    if (!same.empty()) items = std::move(same);  // none: the latest items of any category (docs/decisions.md D8 (a))
  }
  // Items of the clued brand or kind go last, where SASRec looks most.
  auto clued = [&](const data::Behaviour* b) {
    const data::Product& p = ds.product(b->product);
    return (!clues.brand.empty() && p.store && lower(*p.store) == lower(clues.brand)) ||
           (!clues.kind.empty() && has_phrase(lower(p.title), lower(clues.kind)));
  };
  std::stable_partition(items.begin(), items.end(), [&](const data::Behaviour* b) { return !clued(b); });
  std::vector<std::string> out;
  std::size_t n = std::min<std::size_t>(items.size(), static_cast<std::size_t>(std::max(0, policy.recommend_max_items)));
  for (std::size_t i = items.size() - n; i < items.size(); ++i) out.push_back(ds.product(items[i]->product).parent_asin);
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// Review
// ------------------------------------------------------------------------------------------------------------

namespace {

//! What a review instruction asks for.
struct ReviewRequest {
  std::string item;                  //!< the product's name as the user calls it ("Abren Co. t-shirt")
  std::vector<std::string> verdict;  //!< sentences kept as they are ("I absolutely love it!")
  std::vector<std::pair<std::string, int>> aspects;
  int stars = 0;
};

ReviewRequest parse_review_request(std::string_view instruction) {
  ReviewRequest r;
  std::vector<std::string> opinion_sentences;
  for (const auto& s : sentences_of(instruction)) {
    std::string ls = lower(s);
    if (content_tokens(s).empty()) continue;  // greetings
    if (int n = stated_stars(s)) {
      r.stars = n;
      continue;
    }
    if (has_phrase(ls, "review") || has_phrase(ls, "reviews")) {  // the request itself
      if (r.item.empty()) r.item = reviewed_item_name(s);
      continue;
    }
    if (ls.starts_with("keep it") || has_phrase(ls, "tone")) continue;  // style, not content
    if (ls.find("that the ") != std::string::npos) opinion_sentences.push_back(s);
    else r.verdict.push_back(s);
  }
  int overall = overall_polarity(r.stars, r.verdict);
  for (const auto& s : opinion_sentences)
    for (auto& a : requested_aspects(s, overall)) r.aspects.push_back(std::move(a));
  return r;
}

//! The item's name with its store in front when the user left it out ("t-shirt" → "Abren Co. t-shirt").
std::string full_item_name(const std::string& item, const data::Product* product) {
  if (!product || !product->store || product->store->empty()) return item;
  if (item.empty() || contains_ci(item, *product->store)) return item;
  return *product->store + " " + item;
}

//! The instruction's aspects, then the ones the user added in the dialogue; at most three for a short review.
std::vector<std::pair<std::string, int>> merged_aspects(const ReviewRequest& req, const Clues& clues) {
  auto aspects = req.aspects;
  for (const auto& a : clues.aspects)
    if (std::none_of(aspects.begin(), aspects.end(), [&](const auto& x) { return x.first == a.first; }))
      aspects.push_back(a);
  if (clues.length == Clues::Length::kShort && aspects.size() > 3) aspects.resize(3);
  return aspects;
}

//! The user's habitual sentences at this rating band, filled in for the reviewed product (none for a short
//! review; one more for a detailed one).
std::vector<std::string> habit_sentences(const std::string& item_name, const data::Product* product,
                                         const std::vector<const data::Behaviour*>& history, const data::Dataset& ds,
                                         int band, const Clues& clues) {
  std::vector<std::string> out;
  if (clues.length == Clues::Length::kShort) return out;
  std::size_t limit = clues.length == Clues::Length::kDetailed ? 4 : 3;
  for (const auto& t : habitual_templates(history, ds, band)) {
    if (out.size() >= limit) break;
    if (auto filled = fill_template(t, item_name, product)) out.push_back(*filled);
  }
  return out;
}

//! The verdict: the instruction's own sentences, else one stating the known star count.
std::vector<std::string> verdict_sentences(const ReviewRequest& req, int stars) {
  if (!req.verdict.empty() || !stars) return req.verdict;
  static constexpr std::string_view kVerdict[] = {"", "I really didn't like it.", "I'm not happy with it.",
                                                  "It was just okay.", "I liked it overall.", "I absolutely love it!"};
  return {std::string(kVerdict[stars])};
}

}  // namespace

std::string build_review(std::string_view instruction, const data::Product* product,
                         const std::vector<const data::Behaviour*>& history, const data::Dataset& ds,
                         const Clues& clues, const HeuristicPolicy& policy) {
  ReviewRequest req = parse_review_request(instruction);
  int stars = req.stars ? req.stars : clues.stars;
  int overall = overall_polarity(stars, req.verdict);
  std::string name = full_item_name(req.item, product);
  std::vector<std::string> habits;
  if (policy.review_habits) habits = habit_sentences(name, product, history, ds, overall, clues);

  std::vector<std::string> out;
  auto add = [&](std::string s) {
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  };
  // Habits that name the product open the review, as the user's own openers do; the others close it.
  for (const auto& h : habits)
    if (!name.empty() && h.find(name) != std::string::npos) add(h);
  if (policy.review_verdict)
    for (auto& v : verdict_sentences(req, stars)) add(std::move(v));
  for (const auto& [aspect, polarity] : merged_aspects(req, clues)) {
    std::optional<std::string> own =
        policy.review_own_phrasing ? own_sentence(aspect, polarity, history, ds, overall) : std::nullopt;
    add(own ? *own : default_aspect_sentence(aspect, polarity));
  }
  for (const auto& h : habits) add(h);
  return out.empty() ? std::string(instruction) : join(out, " ");
}

// ------------------------------------------------------------------------------------------------------------
// Multi-turn
// ------------------------------------------------------------------------------------------------------------

bool fold_reply(std::string_view reply, data::TaskType type, Clues& clues) {
  Clues before = clues;
  std::string lr = lower(reply);
  for (std::string_view m : {"we can stop", "all set", "that's what i wanted", "sounds like me, thank"})
    if (lr.find(m) != std::string::npos) clues.satisfied = true;
  for (std::string_view m : {"nothing more to add", "told you everything", "that's all i can tell", "anything more to add"})
    if (lr.find(m) != std::string::npos) clues.exhausted = true;
  if (clues.satisfied) return false;

  for (const auto& sentence : sentences_of(reply)) {
    std::string ls = lower(sentence);
    std::string s = sentence;
    // Feedback on the last attempt may carry a clue after its comma ("Not it, my budget is under $30.").
    if (is_feedback_sentence(ls)) {
      auto comma = s.find(", ");
      if (comma == std::string::npos || ls.starts_with("closer, but") || ls.starts_with("that's not it")) continue;
      s = s.substr(comma + 2);
      ls = lower(s);
    }
    // High-complexity replies join two or three clauses: "Also, A, and B."
    std::vector<std::string> clauses;
    std::string body = ls.starts_with("also, ") ? s.substr(6) : s;
    for (std::size_t start = 0;;) {
      std::size_t cut = body.find(", and ", start);
      clauses.push_back(body.substr(start, cut == std::string::npos ? std::string::npos : cut - start));
      if (cut == std::string::npos) break;
      start = cut + 6;
    }
    for (const auto& clause : clauses) {
      std::string lc = lower(clause);
      if (type == data::TaskType::kReview) {
        if (int n = stated_stars(clause)) clues.stars = n;
        std::string praised = after(clause, "praise the ");
        std::string problem = after(clause, "problem with the ");
        if (!praised.empty()) clues.aspects.emplace_back(praised, 1);
        else if (!problem.empty()) clues.aspects.emplace_back(problem, -1);
        else if (lc.find(" was just okay") != std::string::npos && lc.starts_with("the "))
          clues.aspects.emplace_back(lc.substr(4, lc.find(" was just okay") - 4), 0);
        if (has_phrase(lc, "short")) clues.length = Clues::Length::kShort;
        else if (has_phrase(lc, "paragraph")) clues.length = Clues::Length::kParagraph;
        else if (has_phrase(lc, "detailed") && lc.find("it can be") != std::string::npos) clues.length = Clues::Length::kDetailed;
        continue;
      }
      if (is_price_sentence(clause)) continue;  // BM25 and SASRec cannot use a price
      if (std::string b = after(clause, "be from "); !b.empty()) clues.brand = b;
      else if (std::string c = after(clause, "something from "); !c.empty()) clues.category = c;
      if (std::string k = after(clause, "kind of "); !k.empty()) clues.kind = k;
      for (const auto& t : content_tokens(clause)) add_term(clues.search_terms, t);
    }
  }
  // Information means content; the satisfied and exhausted flags are not.
  Clues flags_only = before;
  flags_only.satisfied = clues.satisfied;
  flags_only.exhausted = clues.exhausted;
  return !(clues == flags_only) && !clues.satisfied;
}

std::string next_question(data::TaskType type, const Clues& clues, const std::vector<std::string>& asked,
                          bool instruction_names_brand) {
  std::vector<std::string_view> asks;
  if (type == data::TaskType::kReview) {
    asks = {"Which aspects should I highlight, any pros or cons?", "Is there another aspect worth a mention, good or bad?",
            "How long should it be, and in what tone?"};
  } else {
    // The brand first (the most telling clue for BM25 and for the history), then attributes, features and the
    // category; the wording avoids price words, which neither search nor recommendation can use.
    if (type == data::TaskType::kRecommend && clues.category.empty())
      asks.push_back("What category or type of product are you after?");
    if (clues.brand.empty() && !instruction_names_brand) asks.push_back("Which brand or store would you like it from?");
    asks.push_back("Is there a particular color, size or material you want?");
    asks.push_back("Which features does it need to have?");
    if (type == data::TaskType::kSearch && clues.category.empty())
      asks.push_back("What category or type of product is it?");
  }
  for (auto q : asks)
    if (std::find(asked.begin(), asked.end(), q) == asked.end()) return std::string(q);
  // Everything asked: an open question, which a user answers with whatever is left.
  return type == data::TaskType::kReview ? "Anything else I should mention?" : "Anything else that would help me find it?";
}

}  // namespace pwab::agents
