// src/sim/scripted_user.cpp: hint extraction, question routing, feedback and wording of the scripted user.
#include "sim/scripted_user.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <span>
#include <nlohmann/json.hpp>

#include "env/tools.h"

namespace pwab::sim {
namespace {

using Json = nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_word_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || u >= 0x80;  // UTF-8 bytes count as letters
}

//! Lower-case runs of letters and digits.
std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (is_word_char(c)) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool contains_any(const std::vector<std::string>& words, std::initializer_list<std::string_view> keys) {
  for (const auto& w : words)
    for (auto k : keys)
      if (w == k) return true;
  return false;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string capitalize(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

//! Lower-cases the first letter unless the word looks like an acronym ("USB", "LED").
std::string decapitalize(std::string s) {
  if (s.size() >= 2 && std::isupper(static_cast<unsigned char>(s[0])) && !std::isupper(static_cast<unsigned char>(s[1])))
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

//! A feature bullet cut to its first phrase and at most six words.
std::string shorten_feature(std::string_view f) {
  std::string s(f);
  for (std::string_view cut : {":", " - ", ";", "(", ",", ". ", " — ", " | "}) {
    auto p = s.find(cut);
    if (p != std::string::npos && p > 0) s.resize(p);
  }
  s = trim(s);
  while (!s.empty() && (s.back() == '.' || s.back() == '!')) s.pop_back();
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start < s.size()) {
    auto sp = s.find(' ', start);
    if (sp == std::string::npos) sp = s.size();
    if (sp > start) parts.push_back(s.substr(start, sp - start));
    start = sp + 1;
  }
  if (parts.size() > 6) parts.resize(6);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  // Shouted bullets ("HIGH CAPACITY") are lower-cased; short acronyms ("USB") are not.
  bool shouted = out.size() > 4 && std::none_of(out.begin(), out.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
  return shouted ? lower(out) : decapitalize(out);
}

std::string price_band(double p) {
  if (p < 15) return "under $15";
  if (p < 30) return "under $30";
  if (p < 75) return fmt::format("around ${}", static_cast<int>(std::lround(p / 10.0) * 10));
  if (p < 150) return fmt::format("around ${}", static_cast<int>(std::lround(p / 25.0) * 25));
  return "premium";
}

// Review-sentence polarity words (lower case).
constexpr std::string_view kPositive[] = {"excellent", "great",  "good",  "impressive", "impressed", "fantastic",
                                          "solid",     "love",   "loved", "happy",      "perfect",   "spot",
                                          "better",    "recommend", "nice", "amazing",   "best",      "comfortable",
                                          "sturdy",    "easy",   "well",  "awesome",    "wonderful", "pleased"};
constexpr std::string_view kNegative[] = {"disappointing", "disappointed", "poor",   "mediocre", "letdown",
                                          "complaint",     "unfortunately", "bad",   "broke",    "broken",
                                          "below",         "worse",        "worst", "returned", "flimsy",
                                          "terrible",      "awful",        "useless", "cheaply", "wish"};
constexpr std::string_view kNeutral[] = {"okay", "ok", "fine", "average", "acceptable", "decent", "mixed"};
// Words that end an aspect phrase or are never aspects.
constexpr std::string_view kAspectStop[] = {
    "is",    "was",  "were",  "are",  "which", "and",   "for",   "it",    "has",   "had",    "but",  "feels",
    "looks", "works", "seems", "could", "would", "of",   "to",    "a",     "an",    "the",    "i",    "my",
    "this",  "that", "with",  "on",   "in",    "so",    "very",  "really", "too",  "not",    "just", "what",
    "me",    "be",   "been",  "made", "it's",  "its",   "they",  "them",  "than",  "expected", "more", "nothing",
    "special", "stands", "out", "most", "main", "really", "absolutely", "all", "also", "overall", "product",
    "item",  "one",  "bought", "buy", "again", "would", "wish", "were", "highly", "much", "quite", "got"};

bool in(std::string_view w, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), w) != set.end();
}

//! -1, 0 or +1 for a review sentence; `fallback` when it carries no polarity words.
int sentence_polarity(const std::vector<std::string>& words, int fallback) {
  int score = 0;
  bool neutral = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto& w = words[i];
    bool negated = i > 0 && (words[i - 1] == "not" || words[i - 1] == "never" || words[i - 1] == "t");
    if (in(w, kPositive)) score += negated ? -1 : 1;
    else if (in(w, kNegative)) score -= w == "wish" ? 2 : 1;
    else if (in(w, kNeutral)) neutral = true;
  }
  if (score > 0) return 1;
  if (score < 0) return -1;
  return neutral ? 0 : fallback;
}

bool aspect_word_ok(std::string_view w) {
  if (w.size() < 3 || in(w, kAspectStop) || in(w, kPositive) || in(w, kNegative) || in(w, kNeutral)) return false;
  return std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '-'; });
}

//! The thing a review sentence talks about: the words after "the" (up to three, stopping at a verb or
//! punctuation), else the words before "is"/"was", else the first plausible content word.
std::string sentence_aspect(std::string_view sentence) {
  // Raw tokens with a flag for trailing punctuation.
  std::vector<std::pair<std::string, bool>> toks;
  std::string cur;
  auto flush = [&](bool punct) {
    if (!cur.empty()) toks.emplace_back(lower(cur), punct);
    else if (punct && !toks.empty()) toks.back().second = true;
    cur.clear();
  };
  for (char c : sentence) {
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '-' || c == '\'') cur += c;
    else if (c == ' ') flush(false);
    else flush(true);
  }
  flush(true);
  auto phrase_from = [&](std::size_t i) {
    std::string out;
    int n = 0;
    for (; i < toks.size() && n < 3; ++i) {
      // "ease of cleaning": an "of" between two content words stays in the phrase.
      if (n > 0 && toks[i].first == "of" && !toks[i - 1].second && i + 1 < toks.size() && aspect_word_ok(toks[i + 1].first)) {
        out += " of";
        continue;
      }
      if (!aspect_word_ok(toks[i].first)) break;
      out += (out.empty() ? "" : " ") + toks[i].first;
      ++n;
      if (toks[i].second) break;
    }
    return out;
  };
  for (std::size_t i = 0; i + 1 < toks.size(); ++i)
    if (toks[i].first == "the" && !toks[i].second) {
      std::string p = phrase_from(i + 1);
      if (!p.empty()) return p;
    }
  for (std::size_t i = 1; i < toks.size() && i <= 3; ++i)
    if (toks[i].first == "is" || toks[i].first == "was") {
      std::string p = phrase_from(0);
      if (!p.empty()) return p;
    }
  for (const auto& t : toks)
    if (aspect_word_ok(t.first) && t.first.size() >= 4) return t.first;
  return {};
}

std::vector<std::string> split_sentences(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    cur += c;
    if (c == '.' || c == '!' || c == '?' || c == '\n') {
      std::string t = trim(cur);
      if (t.size() > 1) out.push_back(t);
      cur.clear();
    }
  }
  std::string t = trim(cur);
  if (t.size() > 1) out.push_back(t);
  return out;
}

//! Detail keys that identify a listing rather than describe the product.
bool skip_detail_key(const std::string& key) {
  for (std::string_view bad : {"asin", "model", "rank", "upc", "date", "manufacturer", "brand", "discontinued",
                               "part number", "ean", "isbn", "customer", "reviews"})
    if (key.find(bad) != std::string::npos) return true;
  return false;
}

//! The details as a JSON object: details_json is an object, or a string that holds one.
Json details_object(const std::string& details_json) {
  Json j = Json::parse(details_json, nullptr, false);
  if (j.is_string()) j = Json::parse(j.get<std::string>(), nullptr, false);
  return j.is_object() ? j : Json::object();
}

}  // namespace

std::string_view to_string(HintKind k) {
  switch (k) {
    case HintKind::kCategory: return "category";
    case HintKind::kPrice: return "price";
    case HintKind::kKind: return "kind";
    case HintKind::kDetail: return "detail";
    case HintKind::kFeature: return "feature";
    case HintKind::kBrand: return "brand";
    case HintKind::kSentiment: return "sentiment";
    case HintKind::kAspect: return "aspect";
    case HintKind::kStyle: return "style";
  }
  return "?";
}

bool ScriptedUser::leaks_title(std::string_view text, const data::Product& target) {
  std::string t = lower(text);
  if (!target.parent_asin.empty() && t.find(lower(target.parent_asin)) != std::string::npos) return true;
  if (!target.title.empty() && t.find(lower(target.title)) != std::string::npos) return true;
  auto title_words = words_of(target.title);
  if (title_words.empty()) return false;
  std::size_t n = std::min<std::size_t>(4, title_words.size());
  auto text_words = words_of(text);
  if (text_words.size() < n) return false;
  for (std::size_t i = 0; i + n <= title_words.size(); ++i)
    for (std::size_t j = 0; j + n <= text_words.size(); ++j)
      if (std::equal(title_words.begin() + i, title_words.begin() + i + n, text_words.begin() + j)) return true;
  return false;
}

ScriptedUser::ScriptedUser(const data::Dataset& ds, const data::Task& task, uint64_t seed)
    : ds_(ds),
      task_(task),
      target_(ds.product(task.target_product)),
      rng_(derive_seed(seed, static_cast<uint64_t>(task.split), task.index)) {
  const data::User& user = ds.user(task.user);
  std::string complexity = lower(user.profile.get("Interaction Complexity"));
  if (complexity.find("low") != std::string::npos) talk_ = Talk::kLow;
  else if (complexity.find("high") != std::string::npos) talk_ = Talk::kHigh;
  auto tone = words_of(user.profile.get("Tone and Style"));
  warm_ = contains_any(tone, {"enthusiastic", "positive", "friendly", "excited", "cheerful", "appreciative", "casual",
                              "warm", "upbeat", "playful", "humorous"});
  terse_ = contains_any(tone, {"critical", "concise", "direct", "blunt", "straightforward", "brief", "succinct",
                               "matter", "analytical", "skeptical", "formal"});
  wordy_ = contains_any(tone, {"detailed", "descriptive", "informative", "thorough", "elaborate", "expressive"});
  if (task.type == data::TaskType::kReview) build_review_hints();
  else build_product_hints();
}

void ScriptedUser::add_hint(HintKind kind, std::string key, std::string clause) {
  clause = trim(clause);
  if (clause.empty() || leaks_title(clause, target_)) return;  // never reveal the title or ASIN
  for (const auto& h : hints_)
    if (h.clause == clause) return;
  hints_.push_back({kind, std::move(key), std::move(clause), false});
}

void ScriptedUser::build_product_hints() {
  const data::Product& p = target_;
  // 1. Broad area: the main category and the top of the category path.
  {
    // The main category, refined by the first level of the path that is not just a restatement of it.
    std::string area = p.main_category;
    for (std::size_t i = 0; i < p.categories.size() && i < 2; ++i) {
      std::string c = lower(p.categories[i]), m = lower(area);
      if (c.empty() || m.find(c) != std::string::npos || c.find(m) != std::string::npos) {
        if (area.empty()) area = p.categories[i];
        continue;
      }
      area = area.empty() ? p.categories[i] : area + ", in " + p.categories[i];
      break;
    }
    if (!area.empty()) add_hint(HintKind::kCategory, "", "it's something from " + area);
  }
  // 2. The kind of product, as one generic noun (the last word of the deepest category).
  if (!p.categories.empty()) {
    auto w = words_of(p.categories.back());
    if (!w.empty() && w.back().size() >= 3 && std::all_of(w.back().begin(), w.back().end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }))
      add_hint(HintKind::kKind, "", "I'm after some kind of " + w.back());
  }
  // 3. Price band.
  if (auto price = p.price.number(); price && *price > 0) {
    std::string band = price_band(*price);
    add_hint(HintKind::kPrice, "",
             band == "premium" ? "price isn't a worry, I'm looking at something premium" : "my budget is " + band);
  }
  // 4. Attribute values from the details, in their stored order (at most four).
  std::string detail_brand;
  int n_details = 0;
  const Json details = details_object(p.details_json);
  for (const auto& [k, v] : details.items()) {
    std::string key = lower(trim(k));
    std::string value = v.is_string() ? trim(v.get<std::string>()) : v.is_number() ? v.dump() : "";
    if (key.find("brand") != std::string::npos && !value.empty()) detail_brand = value;
    if (key.empty() || value.empty() || value.size() > 40 || skip_detail_key(key) || n_details >= 4) continue;
    size_t before = hints_.size();
    add_hint(HintKind::kDetail, key, "the " + key + " should be " + value);
    if (hints_.size() > before) ++n_details;
  }
  // 5. Features, shortened (at most three).
  int n_features = 0;
  for (const auto& f : p.features) {
    if (n_features >= 3) break;
    std::string s = shorten_feature(f);
    if (s.size() < 3) continue;
    size_t before = hints_.size();
    add_hint(HintKind::kFeature, "", "one thing I need is " + s);
    if (hints_.size() > before) ++n_features;
  }
  // 6. The store or brand: the most telling hint, so the last one.
  std::string brand = p.store && !p.store->empty() ? *p.store : detail_brand;
  if (!brand.empty()) add_hint(HintKind::kBrand, "", "I'd like it to be from " + brand);
}

void ScriptedUser::build_review_hints() {
  const data::Review& r = task_.target_review;
  double rating = r.rating.number().value_or(3.0);
  int stars = std::clamp(static_cast<int>(std::lround(rating)), 1, 5);
  int overall = stars >= 4 ? 1 : stars == 3 ? 0 : -1;
  // 1. The verdict.
  static constexpr std::string_view kVerdict[] = {
      "",
      "I really didn't like it, it's a one-star product for me",
      "I was disappointed with it, two stars at most",
      "I have mixed feelings about it, about three stars",
      "overall I liked it, I'd give it four stars",
      "I absolutely loved it, five stars from me"};
  add_hint(HintKind::kSentiment, "", std::string(kVerdict[stars]));
  // 2. Aspects praised and criticised, from the sentences of the true review (at most four).
  int n_aspects = 0;
  std::vector<std::string> seen;
  std::vector<std::string> product_words = words_of(target_.title + " " + target_.store.value_or(""));
  for (const auto& s : split_sentences(r.title.empty() ? r.text : r.text + "\n" + r.title)) {
    if (n_aspects >= 4) break;
    std::string aspect = sentence_aspect(s);
    if (aspect.empty() || std::find(seen.begin(), seen.end(), aspect) != seen.end()) continue;
    // The product itself ("this water flosser") or its maker is not an aspect.
    auto aw = words_of(aspect);
    if (std::any_of(aw.begin(), aw.end(), [&](const std::string& w) {
          return std::find(product_words.begin(), product_words.end(), w) != product_words.end();
        }))
      continue;
    seen.push_back(aspect);
    int pol = sentence_polarity(words_of(s), overall);
    std::string clause = pol > 0   ? "I want to praise the " + aspect
                         : pol < 0 ? "I want to point out the problem with the " + aspect
                                   : "the " + aspect + " was just okay, worth a mention";
    size_t before = hints_.size();
    add_hint(HintKind::kAspect, "", clause);
    if (hints_.size() > before) ++n_aspects;
  }
  // 3. Length and tone of the review.
  std::size_t n_words = words_of(r.text).size();
  std::string length = n_words < 25 ? "keep it short, a couple of sentences" : n_words < 70 ? "a paragraph is enough"
                                                                                           : "it can be fairly detailed";
  std::string tone = lower(trim(ds_.user(task_.user).profile.get("Tone and Style")));
  if (!tone.empty() && tone.size() <= 60) length += " and make it sound " + tone;
  add_hint(HintKind::kStyle, "", length);
}

std::optional<std::size_t> ScriptedUser::route(std::string_view message) const {
  auto w = words_of(message);
  auto first_unused = [&](HintKind kind, std::string_view key = {}) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < hints_.size(); ++i)
      if (!hints_[i].used && hints_[i].kind == kind && (key.empty() || hints_[i].key.find(key) != std::string::npos))
        return i;
    return std::nullopt;
  };
  // Price.
  if (message.find('$') != std::string_view::npos ||
      contains_any(w, {"price", "prices", "budget", "cost", "costs", "expensive", "cheap", "afford", "spend", "pay",
                       "money", "dollars", "pricey", "priced"}))
    if (auto i = first_unused(HintKind::kPrice)) return i;
  // Brand or store.
  if (contains_any(w, {"brand", "brands", "store", "make", "maker", "manufacturer", "company", "seller", "label"}))
    if (auto i = first_unused(HintKind::kBrand)) return i;
  // A particular attribute: a detail key named in the message, or a generic attribute word.
  static const std::pair<std::string_view, std::string_view> kAttr[] = {
      {"colour", "colo"}, {"color", "colo"},     {"colors", "colo"},  {"size", "size"},     {"material", "material"},
      {"flavor", "flavo"}, {"flavour", "flavo"}, {"scent", "scent"},  {"capacity", "capacity"}, {"weight", "weight"},
      {"style", "style"}, {"pattern", "pattern"}, {"dimensions", "dimension"}, {"shape", "shape"}, {"finish", "finish"}};
  bool attribute_asked = false;
  for (const auto& [word, key] : kAttr)
    if (contains_any(w, {word})) {
      attribute_asked = true;
      if (auto i = first_unused(HintKind::kDetail, key)) return i;
    }
  for (std::size_t i = 0; i < hints_.size(); ++i)
    if (!hints_[i].used && hints_[i].kind == HintKind::kDetail)
      for (const auto& kw : words_of(hints_[i].key))
        if (kw.size() >= 4 && contains_any(w, {kw})) return i;
  if (attribute_asked)
    if (auto i = first_unused(HintKind::kDetail)) return i;
  // Features and use.
  if (contains_any(w, {"feature", "features", "need", "needs", "use", "using", "purpose", "function", "requirement",
                       "requirements", "must", "functionality", "specs", "specifications"}))
    if (auto i = first_unused(HintKind::kFeature)) return i;
  // Review opinions.
  if (contains_any(w, {"review", "opinion", "think", "like", "liked", "rating", "rate", "star", "stars", "feel", "felt",
                       "experience", "satisfied", "verdict"}))
    if (auto i = first_unused(HintKind::kSentiment)) return i;
  if (contains_any(w, {"aspect", "aspects", "mention", "highlight", "pros", "cons", "praise", "criticise", "criticize",
                       "complain", "complaint", "good", "bad", "liked", "disliked", "review"}))
    if (auto i = first_unused(HintKind::kAspect)) return i;
  if (contains_any(w, {"tone", "length", "long", "short", "words", "detailed", "formal", "casual"}))
    if (auto i = first_unused(HintKind::kStyle)) return i;
  // Category or kind.
  if (contains_any(w, {"category", "categories", "type", "kind", "sort", "section", "department", "genre"})) {
    if (auto i = first_unused(HintKind::kCategory)) return i;
    if (auto i = first_unused(HintKind::kKind)) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> ScriptedUser::next_unused() const {
  for (std::size_t i = 0; i < hints_.size(); ++i)
    if (!hints_[i].used) return i;
  return std::nullopt;
}

std::string ScriptedUser::take(std::size_t i) {
  hints_[i].used = true;
  clues_given_.push_back(hints_[i].clause);
  return hints_[i].clause;
}

std::string ScriptedUser::opener() {
  static constexpr std::string_view kWarm[] = {"Sure!", "Happy to help!", "Of course!", "Oh, good question!"};
  static constexpr std::string_view kPlain[] = {"Sure.", "OK.", "Let me think.", "Right."};
  static constexpr std::string_view kTerse[] = {"Fine.", "Well.", "Noted."};
  if (terse_) return std::string(rng_.pick(kTerse));
  if (warm_) return std::string(rng_.pick(kWarm));
  return std::string(rng_.pick(kPlain));
}

std::string ScriptedUser::sentence(std::string clause) {
  bool bang = warm_ && !terse_ && rng_.chance(0.5);
  return capitalize(std::move(clause)) + (bang ? "!" : ".");
}

std::string ScriptedUser::feedback_text(Feedback f) {
  std::string_view goal = task_.type == data::TaskType::kSearch      ? "find a specific product for me with a search"
                          : task_.type == data::TaskType::kRecommend ? "recommend something based on what I've bought before"
                                                                     : "write a review of the product for me";
  bool review = task_.type == data::TaskType::kReview;
  switch (f) {
    case Feedback::kWrongFunction:
      return talk_ == Talk::kLow ? fmt::format("Not what I asked for, I want you to {}.", goal)
                                 : fmt::format("That's not what I asked for. I want you to {}.", goal);
    case Feedback::kMissed:
      return review ? "That doesn't sound like me." : "That's not it, none of those is what I'm looking for.";
    case Feedback::kLow:
      return review ? "That's close, but not quite how I'd put it." : "Closer, but the one I want isn't near the top.";
    case Feedback::kSatisfied: {
      std::string s = review ? "That review sounds like me, thank you" : "Yes, that's what I wanted, thank you";
      s += warm_ && !terse_ ? "!" : ".";
      if (talk_ != Talk::kLow) s += " I'm happy with it, we can stop here.";
      else s.back() = ',', s += " we can stop.";
      return s;
    }
    case Feedback::kNone: break;
  }
  return {};
}

void ScriptedUser::note_attempt(std::string_view function, const env::Reward& reward) {
  bool right = reward.function_acc >= 1.0 ||
               (task_.type == data::TaskType::kSearch && function == env::kSearch) ||
               (task_.type == data::TaskType::kRecommend && function == env::kRecommend) ||
               (task_.type == data::TaskType::kReview && function == env::kAddReview);
  if (!right) {
    pending_ = Feedback::kWrongFunction;
    satisfied_ = false;
    return;
  }
  double threshold = task_.type == data::TaskType::kReview ? 0.8 : 0.9;
  if (reward.result_acc >= threshold) {
    pending_ = Feedback::kSatisfied;
    satisfied_ = true;
  } else {
    pending_ = reward.result_acc > 0 ? Feedback::kLow : Feedback::kMissed;
    satisfied_ = false;
  }
}

std::string ScriptedUser::reply(const std::string& agent_message) {
  ++n_replies_;
  Feedback fb = pending_;
  pending_ = Feedback::kNone;
  std::vector<std::string> parts;
  if (fb == Feedback::kWrongFunction) return feedback_text(fb);
  if (fb == Feedback::kSatisfied) return feedback_text(fb);
  if (satisfied_) return talk_ == Talk::kLow ? "I'm all set, thanks." : "I'm all set, thanks. Nothing more is needed, we can stop here.";

  // How many hints this reply carries.
  std::size_t n_hints = talk_ == Talk::kHigh ? (wordy_ ? 3 : 2) : 1;
  std::vector<std::string> clauses;
  if (auto i = route(agent_message)) clauses.push_back(take(*i));
  while (clauses.size() < n_hints) {
    auto i = next_unused();
    if (!i) break;
    clauses.push_back(take(*i));
  }

  std::string out;
  auto append = [&](const std::string& s) {
    if (s.empty()) return;
    out += (out.empty() ? "" : " ") + s;
  };
  if (clauses.empty()) {
    std::string none = fb != Feedback::kNone ? feedback_text(fb) + " I've told you everything I know about it."
                                             : "I don't have anything more to add, that's all I can tell you.";
    return none;
  }
  switch (talk_) {
    case Talk::kLow: {
      // One short sentence: the feedback folded in front of the clue.
      if (fb == Feedback::kMissed) out = (task_.type == data::TaskType::kReview ? "Not like me, " : "Not it, ") + clauses[0] + ".";
      else if (fb == Feedback::kLow) out = "Not quite, " + clauses[0] + ".";
      else out = sentence(clauses[0]);
      if (fb != Feedback::kNone) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
      break;
    }
    case Talk::kMedium: {
      if (fb != Feedback::kNone) append(feedback_text(fb));
      else if (!terse_ && rng_.chance(0.5)) append(opener());
      append(sentence(clauses[0]));
      break;
    }
    case Talk::kHigh: {
      append(fb != Feedback::kNone ? feedback_text(fb) : opener());
      append(sentence(clauses[0]));
      if (clauses.size() == 2) append(sentence("also, " + clauses[1]));
      else if (clauses.size() >= 3) append(sentence("also, " + clauses[1] + ", and " + clauses[2]));
      break;
    }
  }
  // Last guard: nothing that reveals the target reaches the agent.
  if (leaks_title(out, target_)) return "I'd rather describe it than name it. I don't have anything more to add.";
  return out;
}

}  // namespace pwab::sim
