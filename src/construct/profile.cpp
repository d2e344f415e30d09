// Offline profile rules and the LLM profile prompt. Every threshold below is documented in
// docs/construction.md ("Offline profiles"); change both together.
#include "construct/profile.h"
#include "core/json_depth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "core/text.h"

namespace pwab::construct {

namespace {

// Lower-cased words: runs of ASCII letters, digits and apostrophes (non-ASCII bytes end a word).
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '\'') {
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  for (auto& w : out) {
    while (!w.empty() && w.back() == '\'') w.pop_back();
    while (!w.empty() && w.front() == '\'') w.erase(0, 1);
  }
  std::erase_if(out, [](const std::string& w) { return w.empty(); });
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::optional<double> numeric_price(const data::Product& p) {
  auto v = p.price.number();
  if (v && std::isfinite(*v) && *v > 0) return v;
  return std::nullopt;
}

// The `top` most frequent names, ties broken by first appearance.
std::vector<std::string> most_frequent(const std::vector<std::string>& names, std::size_t top) {
  std::vector<std::string> order;
  std::unordered_map<std::string, std::pair<int, std::size_t>> count;  // name -> (count, first position)
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto [it, fresh] = count.try_emplace(names[i], 0, i);
    if (fresh) order.push_back(names[i]);
    ++it->second.first;
  }
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return count[a].first > count[b].first;
  });
  if (order.size() > top) order.resize(top);
  return order;
}

struct Aspect {
  std::string_view name;
  std::string_view short_name;  // how an instruction names it inside a sentence
  std::vector<std::string_view> words;
};

const std::vector<Aspect>& aspect_lexicon() {
  static const std::vector<Aspect> kAspects = {
      {"Price and value", "value for money", {"price", "priced", "cheap", "cheaper", "expensive", "value", "worth", "money", "afford",
                           "affordable", "bargain", "deal", "overpriced", "cost", "costs"}},
      {"Quality", "quality", {"quality", "sturdy", "solid", "flimsy", "cheaply", "craftsmanship", "made", "construction"}},
      {"Durability", "durability", {"broke", "broken", "lasted", "lasting", "lasts", "durable", "durability", "apart", "stopped",
                      "wore", "tear", "ripped"}},
      {"Comfort and fit", "fit", {"comfort", "comfortable", "fit", "fits", "fitting", "size", "sizing", "tight", "loose",
                           "snug", "soft"}},
      {"Taste and flavor", "taste", {"taste", "tastes", "tasty", "flavor", "flavors", "flavour", "delicious", "sweet", "salty",
                            "bland", "yummy"}},
      {"Ease of use", "ease of use", {"easy", "easier", "simple", "setup", "install", "installation", "instructions", "intuitive",
                       "difficult", "hard", "user", "assemble", "assembly"}},
      {"Performance", "performance", {"works", "worked", "performance", "powerful", "power", "fast", "battery", "speed",
                       "effective", "efficient", "reliable"}},
      {"Appearance and design", "look", {"look", "looks", "color", "colors", "colour", "design", "beautiful", "cute",
                                 "pretty", "style", "stylish", "gorgeous"}},
      {"Packaging and delivery", "packaging", {"arrived", "packaging", "packaged", "package", "shipping", "shipped", "delivery",
                                  "delivered", "box", "damaged"}},
      {"Scent", "scent", {"smell", "smells", "scent", "fragrance", "odor"}},
      {"Sound and picture", "sound or picture quality", {"sound", "audio", "picture", "screen", "display", "volume", "bass", "resolution"}},
      {"Story and content", "story", {"story", "plot", "characters", "author", "book", "movie", "acting", "series", "episode",
                             "read", "reading", "game", "gameplay"}},
  };
  return kAspects;
}

const std::unordered_map<std::string_view, std::vector<int>>& aspect_index() {
  static const auto kIndex = [] {
    std::unordered_map<std::string_view, std::vector<int>> idx;
    const auto& lex = aspect_lexicon();
    for (std::size_t a = 0; a < lex.size(); ++a)
      for (auto w : lex[a].words) idx[w].push_back(static_cast<int>(a));
    return idx;
  }();
  return kIndex;
}

// Words that mark a product as made for women or for men (titles only).
const std::unordered_set<std::string_view> kFemaleWords = {"women", "women's", "womens", "woman", "woman's",
                                                           "ladies", "lady", "girls", "girl's", "maternity",
                                                           "feminine", "bra", "bras", "dress", "skirt"};
const std::unordered_set<std::string_view> kMaleWords = {"men", "men's", "mens", "man's", "gentlemen", "boys",
                                                         "boy's", "beard", "masculine"};

std::size_t word_count(std::string_view text) { return words_of(text).size(); }


}  // namespace

PriceReference PriceReference::from_catalogue(std::span<const data::Product> products) {
  PriceReference r;
  std::map<std::string, std::vector<double>> by_cat;
  std::vector<double> all;
  for (const auto& p : products) {
    auto v = numeric_price(p);
    if (!v) continue;
    by_cat[p.main_category].push_back(*v);
    all.push_back(*v);
  }
  r.overall_median = median(all);
  for (auto& [cat, prices] : by_cat)
    if (prices.size() >= 3) r.median_by_category.emplace(cat, median(prices));
  return r;
}

double PriceReference::reference_for(const data::Product& p) const {
  auto it = median_by_category.find(p.main_category);
  return it != median_by_category.end() ? it->second : overall_median;
}

std::string interest_category(const data::Product& p) {
  if (p.categories.size() >= 2 && !p.categories[1].empty()) return p.categories[1];
  if (!p.categories.empty() && !p.categories[0].empty()) return p.categories[0];
  if (!p.main_category.empty()) return p.main_category;
  return "Other";
}

const std::vector<std::string_view>& aspect_names() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> n;
    for (const auto& a : aspect_lexicon()) n.push_back(a.name);
    return n;
  }();
  return kNames;
}

std::string_view aspect_short_name(int aspect) { return aspect_lexicon()[static_cast<std::size_t>(aspect)].short_name; }

std::vector<int> aspects_in(std::string_view text) {
  std::vector<bool> seen(aspect_lexicon().size(), false);
  const auto& idx = aspect_index();
  for (const auto& w : words_of(text)) {
    auto it = idx.find(w);
    if (it == idx.end()) continue;
    for (int a : it->second) seen[static_cast<std::size_t>(a)] = true;
  }
  std::vector<int> out;
  for (std::size_t a = 0; a < seen.size(); ++a)
    if (seen[a]) out.push_back(static_cast<int>(a));
  return out;
}

data::Profile offline_profile(std::span<const HistoryItem> history, const PriceReference& prices) {
  const std::size_t n = history.size();
  // Gender: product words in titles, decided only by a clear (2:1, at least 2) majority.
  int female = 0, male = 0;
  for (const auto& h : history)
    for (const auto& w : words_of(h.product->title)) {
      if (kFemaleWords.contains(w)) ++female;
      if (kMaleWords.contains(w)) ++male;
    }
  std::string gender = female >= 2 && female >= 2 * male ? "Female" : male >= 2 && male >= 2 * female ? "Male" : "Unknown";

  // Price sensitivity: geometric mean of price / category median over priced behaviours (at least 3).
  double log_sum = 0;
  int priced = 0;
  for (const auto& h : history) {
    auto v = numeric_price(*h.product);
    double ref = prices.reference_for(*h.product);
    if (!v || ref <= 0) continue;
    log_sum += std::log(*v / ref);
    ++priced;
  }
  std::string price_sensitivity = "Medium";
  if (priced >= 3) {
    double ratio = std::exp(log_sum / priced);
    price_sensitivity = ratio < 0.8 ? "High" : ratio > 1.25 ? "Low" : "Medium";
  }

  // Interests, brands and diversity.
  std::vector<std::string> interests, stores;
  for (const auto& h : history) {
    interests.push_back(interest_category(*h.product));
    if (h.product->store && !trim(*h.product->store).empty()) stores.emplace_back(trim(*h.product->store));
  }
  std::string shopping_interest = join(most_frequent(interests, 5), ", ");
  auto top_stores = most_frequent(stores, 5);
  std::string brand_preference = top_stores.empty() ? "No particular brand" : join(top_stores, ", ");
  std::string diversity = "Medium";
  if (n >= 2) {
    std::unordered_map<std::string, int> c;
    for (const auto& i : interests) ++c[i];
    double h = 0;
    for (const auto& [k, v] : c) {
      double p = static_cast<double>(v) / static_cast<double>(n);
      h -= p * std::log2(p);
    }
    double e = h / std::log2(static_cast<double>(n));
    diversity = e >= 0.75 ? "High" : e < 0.4 ? "Low" : "Medium";
  }

  // Review-based fields.
  std::vector<double> lengths;
  double rating_sum = 0, exclaims = 0;
  int references = 0;
  std::vector<int> aspect_df(aspect_lexicon().size(), 0);
  for (const auto& h : history) {
    const auto& r = *h.review;
    lengths.push_back(static_cast<double>(word_count(r.text)));
    rating_sum += r.rating.number().value_or(0);
    exclaims += static_cast<double>(std::count(r.text.begin(), r.text.end(), '!') +
                                    std::count(r.title.begin(), r.title.end(), '!'));
    std::string body = ascii_lower(r.title + " " + r.text);
    bool refers = false;
    if (h.product->store) {
      std::string store = ascii_lower(trim(*h.product->store));
      if (store.size() >= 3 && body.find(store) != std::string::npos) refers = true;
    }
    auto title_words = words_of(h.product->title);
    if (!refers && !title_words.empty() && title_words[0].size() >= 4) {
      for (const auto& w : words_of(body))
        if (w == title_words[0]) {
          refers = true;
          break;
        }
    }
    references += refers;
    for (int a : aspects_in(r.title + " " + r.text)) ++aspect_df[static_cast<std::size_t>(a)];
  }
  double med_len = median(lengths);
  std::string complexity = med_len >= 60 ? "High" : med_len <= 15 ? "Low" : "Medium";
  double mean_rating = n ? rating_sum / static_cast<double>(n) : 0;
  std::string sentiment = mean_rating >= 4.3 ? "Positive" : mean_rating <= 3.0 ? "Critical" : "Balanced";
  std::string energy = n && exclaims / static_cast<double>(n) >= 0.5 ? "Enthusiastic" : "Measured";
  std::string length = complexity == "High" ? "Detailed" : complexity == "Low" ? "Concise" : "Conversational";
  double ref_share = n ? static_cast<double>(references) / static_cast<double>(n) : 0;
  std::string item_reference = ref_share >= 0.4    ? "Often names the brand or the product"
                               : ref_share >= 0.15 ? "Sometimes names the brand or the product"
                                                   : "Rarely names specific brands or products";
  std::vector<std::size_t> order(aspect_df.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return aspect_df[a] > aspect_df[b]; });
  std::vector<std::string> focus;
  for (std::size_t i : order)
    if (aspect_df[i] > 0 && focus.size() < 3) focus.emplace_back(aspect_lexicon()[i].name);
  std::string focus_aspect = focus.empty() ? "Overall satisfaction" : join(focus, ", ");

  data::Profile p;
  p.fields = {{"Gender", gender},
              {"Age", "Unknown"},
              {"Occupation", "Other"},
              {"Price Sensitivity", price_sensitivity},
              {"Shopping Interest", shopping_interest.empty() ? "Other" : shopping_interest},
              {"Brand Preference", brand_preference},
              {"Diversity Preference", diversity},
              {"Interaction Complexity", complexity},
              {"Tone and Style", sentiment + ", " + energy + ", " + length},
              {"Item Reference", item_reference},
              {"Focus Aspect", focus_aspect}};
  return p;
}

std::string profile_text(const data::Profile& p) {
  std::string out;
  for (const auto& [k, v] : p.fields) out += k + ": " + v + "\n";
  return out;
}

namespace {

std::string clip(std::string_view s, std::size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
  return std::string(s.substr(0, cut)) + "...";
}

}  // namespace

llm::ChatRequest profile_prompt(std::span<const HistoryItem> history, const std::string& model,
                                std::optional<double> temperature) {
  // The whole history goes in; review texts are shortened so that long histories stay within ~12k characters of
  // review text.
  std::size_t per_item = std::clamp<std::size_t>(12000 / std::max<std::size_t>(history.size(), 1), 80, 400);
  std::string items;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto& p = *history[i].product;
    const auto& r = *history[i].review;
    items += fmt::format("{}. [{}] {} | store: {} | price: {} | rated {}: \"{}\" {}\n", i + 1,
                         p.main_category.empty() ? interest_category(p) : p.main_category, clip(p.title, 160),
                         p.store.value_or("unknown"), p.price.str(), r.rating.str(), clip(r.title, 100),
                         clip(r.text, per_item));
  }
  std::string user =
      "Below is everything one online shopper bought and reviewed, oldest first. Work out what kind of person "
      "this is and describe them as a profile.\n\n"
      "Reply with one JSON object with exactly these keys, every value a short string:\n"
      "- \"Gender\": Female or Male, your best guess from what they buy\n"
      "- \"Age\": one of 18-24, 25-34, 35-44, 45-49, 50-55, 56+\n"
      "- \"Occupation\": a plausible occupation, or Other\n"
      "- \"Price Sensitivity\": High, Medium or Low (High: mostly budget items; Low: premium items)\n"
      "- \"Shopping Interest\": the kinds of products they buy most, comma-separated\n"
      "- \"Brand Preference\": brands that come back in their purchases, comma-separated\n"
      "- \"Diversity Preference\": High, Medium or Low (High: keeps trying new kinds of products; Low: sticks to "
      "what they know)\n"
      "- \"Interaction Complexity\": High, Medium or Low (High: long, detailed reviews; Low: short ones)\n"
      "- \"Tone and Style\": two or three adjectives for how their reviews read\n"
      "- \"Item Reference\": how often their reviews name specific products or brands\n"
      "- \"Focus Aspect\": the product qualities their reviews care about most, comma-separated\n\n"
      "Purchases and reviews:\n" +
      items;
  llm::ChatRequest req;
  req.model = model;
  req.messages = {llm::Message::system("You summarise shoppers into structured profiles for a research benchmark. "
                                       "You answer with a single JSON object and nothing else."),
                  llm::Message::user(std::move(user))};
  req.temperature = temperature.value_or(0.0);
  req.extra_body_json = R"({"response_format": {"type": "json_object"}})";
  return req;
}

data::Profile parse_profile_reply(std::string_view reply, const data::Profile& fallback, int& n_filled) {
  n_filled = 0;
  nlohmann::json j;
  std::size_t open = reply.find('{'), close = reply.rfind('}');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open)
    j = parse_json_or_discarded(reply.substr(open, close - open + 1));
  data::Profile p;
  for (std::string_view field : data::kProfileFields) {
    std::string value;
    if (j.is_object()) {
      auto it = j.find(std::string(field));
      if (it != j.end() && it->is_string()) value = trim(it->get<std::string>());
      // Lists are accepted too (a model may answer interests as an array).
      if (it != j.end() && it->is_array()) {
        std::vector<std::string> parts;
        for (const auto& x : *it)
          if (x.is_string()) parts.push_back(x.get<std::string>());
        value = join(parts, ", ");
      }
    }
    if (value.empty()) {
      value = std::string(fallback.get(field));
      ++n_filled;
    }
    p.fields.emplace_back(std::string(field), std::move(value));
  }
  return p;
}

}  // namespace pwab::construct
