// Instruction templates (offline) and prompts (LLM). The rules are listed in docs/construction.md
// ("Instructions"); the wording is pwab's own.
#include "construct/instructions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "construct/profile.h"
#include "core/rng.h"
#include "core/text.h"

namespace pwab::construct {

namespace {

bool contains_ci(std::string_view hay, std::string_view needle) {
  return !needle.empty() && ascii_lower(hay).find(ascii_lower(needle)) != std::string::npos;
}

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string first_words(std::string_view s, std::size_t n) {
  auto w = split_words(s);
  if (w.size() > n) w.resize(n);
  std::string out;
  for (auto x : w) out += (out.empty() ? "" : " ") + std::string(x);
  return out;
}

std::string strip_trailing_punct(std::string s) {
  while (!s.empty() && std::string_view(" .,;:!-|/&").find(s.back()) != std::string_view::npos) s.pop_back();
  return s;
}

// "the X", unless the phrase has its own article ("The Surrogate Mother").
std::string with_the(const std::string& phrase) {
  if (phrase.size() > 4 && ascii_lower(phrase.substr(0, 4)) == "the ") return phrase;
  return "the " + phrase;
}

// "a, b and c"
std::string list_and(const std::vector<std::string>& items) {
  if (items.empty()) return "";
  if (items.size() == 1) return items[0];
  std::string out;
  for (std::size_t i = 0; i + 1 < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + " and " + items.back();
}

std::string lower_first(std::string s) {
  // Lower-case a leading capital unless the word looks like an acronym or a name with more capitals.
  if (s.size() >= 2 && std::isupper(static_cast<unsigned char>(s[0])) && std::islower(static_cast<unsigned char>(s[1])))
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

// The label of a feature bullet: "【Long battery】 ..." → "Long battery"; "Waterproof: ..." → "Waterproof";
// otherwise its first words.
std::string feature_label(std::string_view bullet) {
  bullet = trim(bullet);
  if (bullet.rfind("\xE3\x80\x90", 0) == 0) {  // 【
    auto close = bullet.find("\xE3\x80\x91");   // 】
    if (close != std::string_view::npos && close > 3) return strip_trailing_punct(std::string(trim(bullet.substr(3, close - 3))));
  }
  auto colon = bullet.find(':');
  if (colon != std::string_view::npos && colon > 0 && colon <= 60) return strip_trailing_punct(std::string(trim(bullet.substr(0, colon))));
  return strip_trailing_punct(first_words(bullet, 8));
}

// The first sentence of a review that states an opinion on a recognised aspect, if short enough to quote.
std::string opinion_sentence(std::string_view text) {
  std::string t(text);
  for (std::string_view br : {"<br />", "<br/>", "<br>"})
    for (std::size_t p; (p = t.find(br)) != std::string::npos;) t.replace(p, br.size(), " ");
  std::size_t start = 0;
  while (start < t.size()) {
    std::size_t end = t.find_first_of(".!?", start);
    std::size_t stop = end == std::string::npos ? t.size() : end + 1;
    std::string sentence(trim(std::string_view(t).substr(start, stop - start)));
    std::size_t n = split_words(sentence).size();
    if (n >= 4 && n <= 20 && !aspects_in(sentence).empty() && sentence.find('"') == std::string::npos)
      return sentence;
    start = stop;
  }
  return "";
}

struct Style {
  int detail = 2;  // 1 (Low interaction complexity) .. 3 (High)
  bool enthusiastic = false;
  std::string tone;
  std::string price_sensitivity;
  std::string brand_preference;
  bool names_things = false;
  std::string focus;  // the first focus aspect, lower-cased
};

Style style_of(const data::Profile& p) {
  Style s;
  std::string_view ic = p.get("Interaction Complexity");
  s.detail = ic == "High" ? 3 : ic == "Low" ? 1 : 2;
  s.tone = std::string(p.get("Tone and Style"));
  s.enthusiastic = contains_ci(s.tone, "enthusiastic") || contains_ci(s.tone, "excited") || contains_ci(s.tone, "energetic");
  s.price_sensitivity = std::string(p.get("Price Sensitivity"));
  s.brand_preference = std::string(p.get("Brand Preference"));
  s.names_things = contains_ci(p.get("Item Reference"), "often") || contains_ci(p.get("Item Reference"), "frequent");
  auto focus = split_trim(p.get("Focus Aspect"), ',');
  if (!focus.empty() && focus[0] != "Overall satisfaction") s.focus = ascii_lower(focus[0]);
  return s;
}

std::string opener(Rng& rng, const Style& s) {
  if (s.enthusiastic && rng.chance(0.5)) return rng.chance(0.5) ? "Hi! " : "Hey there! ";
  if (s.detail == 3 && rng.chance(0.25)) return "Hello, ";
  return "";
}

// Appends the first sentence after the opener: capitalized after nothing or "Hi! ", lower-cased after "Hello, ".
void append_lead(std::string& out, const std::string& lead) {
  out += out.empty() || out.ends_with("! ") ? lead : lower_first(lead);
}

std::string capitalize(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string search_instruction(Rng& rng, const data::Product& p, const Style& s) {
  std::string thing = with_the(product_phrase(p));
  std::string out = opener(rng, s);
  std::string lead;
  switch (rng.below(5)) {
    case 0: lead = "I'm looking for " + thing; break;
    case 1: lead = "Can you find me " + thing; break;
    case 2: lead = "I need to find " + thing; break;
    case 3: lead = "Please search for " + thing; break;
    default: lead = "Help me find " + thing; break;
  }
  append_lead(out, lead);
  if (p.store && !trim(*p.store).empty() && !contains_ci(thing, trim(*p.store)) &&
      (s.names_things || contains_ci(s.brand_preference, trim(*p.store)) || rng.chance(0.4)))
    out += " from " + std::string(trim(*p.store));
  out += s.enthusiastic && rng.chance(0.5) ? "!" : ".";
  if (!p.categories.empty() && (s.detail >= 2 ? rng.chance(0.5) : rng.chance(0.15)))
    out += " It's in the " + p.categories.back() + " section.";
  if (!p.features.empty() && (s.detail >= 2 || rng.chance(0.3))) {
    std::string label = feature_label(p.features[rng.below(std::min<std::size_t>(p.features.size(), 3))]);
    if (!label.empty()) {
      switch (rng.below(3)) {
        case 0: out += " Must have: " + label + "."; break;
        case 1: out += " What matters to me: " + label + "."; break;
        default: out += " Key feature: " + label + "."; break;
      }
    }
  }
  auto price = p.price.number();
  if (price && *price > 0 && std::isfinite(*price) && (s.detail >= 2 || rng.chance(0.3))) {
    if (s.price_sensitivity == "High") {
      int cap = static_cast<int>(std::ceil(*price * rng.uniform(1.1, 1.4) / 5.0) * 5);
      out += rng.chance(0.5) ? fmt::format(" My budget is under ${}.", cap) : fmt::format(" Please keep it below ${}.", cap);
    } else if (s.price_sensitivity == "Low") {
      out += rng.chance(0.5) ? " Price isn't a concern if it's well made." : " I'm happy to pay more for quality.";
    } else if (rng.chance(0.5)) {
      out += fmt::format(" Something around ${} would be fine.", std::max<long>(5, std::lround(*price / 5) * 5));
    }
  }
  if (s.detail == 3 && !s.focus.empty()) out += " " + capitalize(s.focus) + " matters most to me.";
  return out;
}

std::string recommend_instruction(Rng& rng, const data::Product& p, const Style& s) {
  std::string area = ascii_lower(interest_category(p));  // Gift Cards -> gift cards
  std::string out = opener(rng, s);
  std::string lead;
  switch (rng.below(6)) {
    case 0: lead = "Can you recommend something from " + area + "?"; break;
    case 1: lead = "I'd like a few suggestions in " + area + ", based on what I usually buy."; break;
    case 2: lead = "What should I get next? Maybe something in " + area + "."; break;
    case 3: lead = "Recommend me something I'd like."; break;
    case 4: lead = "Any ideas from " + area + " that I might enjoy?"; break;
    default: lead = "Show me a few things similar to what I've bought before."; break;
  }
  append_lead(out, lead);
  if (s.detail >= 2 && rng.chance(0.5) && s.brand_preference != "No particular brand" && !s.brand_preference.empty()) {
    auto brands = split_trim(s.brand_preference, ',');
    if (!brands.empty() && !brands[0].empty()) out += " I tend to like " + brands[0] + ".";
  }
  if (s.detail == 3 && rng.chance(0.6)) {
    if (s.price_sensitivity == "High") out += " Nothing too expensive, please.";
    else if (s.price_sensitivity == "Low") out += " I don't mind paying for quality.";
    else out += " A reasonable price would be nice.";
  }
  return out;
}

std::string review_instruction(Rng& rng, const data::Product& p, const data::Review& r, const Style& s) {
  std::string name = first_words(product_phrase(p), 5);
  std::string the_name = with_the(name);
  std::string out = opener(rng, s);
  std::string lead;
  switch (rng.below(4)) {
    case 0: lead = "I'd like to write a review for " + the_name + " I bought."; break;
    case 1: lead = "Please post a review of my " + name + "."; break;
    case 2: lead = "Help me review " + the_name + " I got."; break;
    default: lead = "Time to review " + the_name + "."; break;
  }
  append_lead(out, lead);
  int stars = static_cast<int>(std::lround(r.rating.number().value_or(3)));
  stars = std::clamp(stars, 1, 5);
  static constexpr std::string_view kVerdict[] = {"", "I really didn't like it", "I'm not happy with it",
                                                  "It was just okay", "I like it overall", "I absolutely love it"};
  out += " " + std::string(kVerdict[stars]) + (s.enthusiastic && stars >= 4 ? "!" : ".");
  if (rng.chance(0.6)) out += fmt::format(" I'd give it {} star{}.", stars, stars == 1 ? "" : "s");
  std::string title(trim(r.title));
  std::size_t title_words = split_words(title).size();
  if (title_words >= 1 && title_words <= 12 && title.find('"') == std::string::npos && rng.chance(0.7))
    out += " In short: \"" + strip_trailing_punct(title) + "\".";
  std::vector<std::string> aspects;
  for (int a : aspects_in(r.title + " " + r.text))
    if (aspects.size() < 3) aspects.push_back("the " + std::string(aspect_short_name(a)));
  if (!aspects.empty()) {
    if (stars >= 4) out += " Say that I was happy with " + list_and(aspects) + ".";
    else if (stars <= 2) out += " Point out the problems with " + list_and(aspects) + ".";
    else out += " Mention " + list_and(aspects) + ".";
  }
  if (s.detail >= 2) {
    std::string sentence = opinion_sentence(r.text);
    if (!sentence.empty() && rng.chance(0.6)) out += " Be sure to include that \"" + sentence + "\"";
  }
  if (!s.tone.empty() && rng.chance(0.7)) out += " Keep it " + ascii_lower(s.tone) + ".";
  if (s.detail == 1 && rng.chance(0.5)) out += " Short is fine.";
  if (s.detail == 3 && rng.chance(0.5)) out += " Make it detailed.";
  return out;
}

std::string product_block(const data::Product& p, bool with_features) {
  std::string out = "- Title: " + p.title + "\n- Category: " +
                    (p.categories.empty() ? p.main_category : join(p.categories, " > ")) +
                    "\n- Store: " + p.store.value_or("unknown") + "\n- Price: " + p.price.str() + "\n";
  if (with_features)
    for (std::size_t i = 0; i < p.features.size() && i < 4; ++i) {
      std::string f = p.features[i].size() > 200 ? p.features[i].substr(0, 200) + "..." : p.features[i];
      out += "- Feature: " + f + "\n";
    }
  return out;
}

}  // namespace

std::string product_phrase(const data::Product& p) {
  std::string_view title = trim(p.title);
  std::size_t cut = title.size();
  for (std::string_view sep : {",", "|", "(", "[", " - ", " – "}) {
    auto at = title.find(sep);
    if (at != std::string_view::npos && at > 0) cut = std::min(cut, at);
  }
  std::string phrase(trim(title.substr(0, cut)));
  if (p.store) {
    std::string store(trim(*p.store));
    if (!store.empty() && phrase.size() > store.size() + 1 && ascii_lower(phrase).rfind(ascii_lower(store) + " ", 0) == 0)
      phrase = std::string(trim(std::string_view(phrase).substr(store.size())));
  }
  phrase = strip_trailing_punct(first_words(phrase, 7));
  if (phrase.empty()) phrase = lower_first(interest_category(p));
  return phrase;
}

std::string offline_instruction(const InstructionInput& in, uint64_t seed) {
  Rng rng(seed);
  Style s = style_of(*in.profile);
  switch (in.type) {
    case data::TaskType::kSearch: return search_instruction(rng, *in.product, s);
    case data::TaskType::kRecommend: return recommend_instruction(rng, *in.product, s);
    case data::TaskType::kReview: return review_instruction(rng, *in.product, *in.review, s);
  }
  return {};
}

llm::ChatRequest instruction_prompt(const InstructionInput& in, const std::string& model,
                                    std::optional<double> temperature) {
  std::string profile = profile_text(*in.profile);
  std::string task;
  switch (in.type) {
    case data::TaskType::kSearch:
      task =
          "Write the message this shopper would type to a shopping assistant to find the product below. Make it "
          "specific enough to single the product out: name its kind and a few attributes that set it apart "
          "(brand, category, features), phrased the way this shopper would. Do not copy the full title and never "
          "give a product ID. Let the profile decide how long, how detailed and in what tone the message is, and "
          "which aspects it mentions.\n\nProduct:\n" +
          product_block(*in.product, true);
      break;
    case data::TaskType::kRecommend:
      task =
          "Write a short, open-ended message in which this shopper asks a shopping assistant for product "
          "recommendations. Keep it general and exploratory: an area of interest, a need or an occasion, in the "
          "shopper's own voice. The product below is only the item the shopper would end up liking; do not "
          "describe it precisely and never name its title or ID. Recommendation requests are shorter and vaguer "
          "than search requests.\n\nProduct the shopper would like:\n" +
          product_block(*in.product, false);
      break;
    case data::TaskType::kReview:
      task =
          "This shopper bought the product below and wrote the review shown. Write the message the shopper "
          "would send to an assistant asking it to write and post a review of the product for them. The message "
          "must carry the shopper's real opinions from the review (what they liked or disliked, how satisfied "
          "they were) and any wishes about the review's tone and length that fit the profile. Do not paste the "
          "review itself.\n\nProduct:\n" +
          product_block(*in.product, false) + "\nTheir review (rating " + in.review->rating.str() + "): " +
          in.review->title + "\n" + in.review->text + "\n";
      break;
  }
  llm::ChatRequest req;
  req.model = model;
  req.messages = {llm::Message::system("You write realistic requests that online shoppers send to an AI shopping "
                                       "assistant, in the voice of the shopper described. You reply with the "
                                       "request text only."),
                  llm::Message::user("Shopper profile:\n" + profile + "\n" + task)};
  req.temperature = temperature.value_or(0.0);
  return req;
}

std::string clean_instruction_reply(std::string_view reply) {
  std::string s(trim(reply));
  for (std::string_view label : {"Instruction:", "Request:", "Message:"})
    if (s.rfind(label, 0) == 0) s = std::string(trim(std::string_view(s).substr(label.size())));
  while (s.size() >= 2 && ((s.front() == '"' && s.back() == '"') || (s.front() == '\'' && s.back() == '\'')))
    s = std::string(trim(std::string_view(s).substr(1, s.size() - 2)));
  return s;
}

}  // namespace pwab::construct
