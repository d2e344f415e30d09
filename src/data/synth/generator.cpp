// The synthetic dataset generator. Phases, each with its own derived Rng so that changing one phase does not
// shift the others: brands → products → users (tastes, behaviours, reviews, profiles) → tasks (instructions).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "core/json_writer.h"
#include "core/rng.h"
#include "core/text.h"
#include "data/synth.h"
#include "data/synth/vocab.h"
#include "data/writer.h"

namespace pwab::data {

std::string_view to_string(SynthScale s) { return s == SynthScale::kFull ? "full" : "mini"; }
std::optional<SynthScale> parse_synth_scale(std::string_view s) {
  if (s == "mini") return SynthScale::kMini;
  if (s == "full") return SynthScale::kFull;
  return std::nullopt;
}

namespace {
using namespace synth;

// ------------------------------------------------------------------------------------------------------------
// Small text helpers
// ------------------------------------------------------------------------------------------------------------

std::string capitalize(std::string_view s) {
  std::string out(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string lower(std::string_view s) { return ascii_lower(s); }

std::string a_or_an(std::string_view next) {
  if (next.empty()) return "a";
  char c = static_cast<char>(std::tolower(static_cast<unsigned char>(next[0])));
  return (c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u') ? "an" : "a";
}

// Product nouns like "earbuds" or "pots and pans" are plural: they take no article ("I need black sneakers").
bool is_plural(std::string_view noun) { return noun.size() > 2 && noun.back() == 's' && noun[noun.size() - 2] != 's'; }

std::string with_article(std::string_view phrase) {
  if (is_plural(phrase)) return std::string(phrase);
  return a_or_an(phrase) + " " + std::string(phrase);
}

// "some sneakers" / "a knife set"
std::string some_or_a(std::string_view phrase) {
  return is_plural(phrase) ? "some " + std::string(phrase) : with_article(phrase);
}

// The label of a "LABEL: text" feature bullet, lower-cased ("adjustable pressure"), or its first words.
std::string feature_label(std::string_view bullet) {
  auto colon = bullet.find(':');
  std::string_view label = colon != std::string_view::npos && colon < 40 ? bullet.substr(0, colon) : bullet.substr(0, bullet.find_first_of(",.;"));
  return ascii_lower(trim(label));
}

// "a, b and c"
std::string list_and(const std::vector<std::string>& items) {
  if (items.empty()) return {};
  if (items.size() == 1) return items[0];
  std::string out;
  for (std::size_t i = 0; i + 1 < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + " and " + items.back();
}

template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[rng.below(v.size())];
}

// Picks k distinct indices from weights without replacement.
std::vector<std::size_t> pick_weighted_distinct(Rng& rng, std::vector<double> weights, std::size_t k) {
  std::vector<std::size_t> out;
  k = std::min(k, weights.size());
  while (out.size() < k) {
    std::size_t i = rng.weighted(weights);
    out.push_back(i);
    weights[i] = 0;
    double total = 0;
    for (double w : weights) total += w;
    if (total <= 0) break;
  }
  return out;
}

std::string format_price(double dollars) {
  // Prices end like shop prices do: .99, .49, .95 or whole dollars.
  static constexpr double kCents[] = {0.99, 0.99, 0.99, 0.49, 0.95, 0.0};
  double whole = std::floor(dollars);
  if (whole < 1) whole = 1;
  double cents = kCents[static_cast<std::size_t>(dollars * 1000) % 6];
  double v = whole + cents;
  return py::float_repr(std::round(v * 100) / 100);
}

// ------------------------------------------------------------------------------------------------------------
// Brands and products
// ------------------------------------------------------------------------------------------------------------

struct Brand {
  std::string name;
  int category;
  double quality;     // shifts ratings
  double price_tier;  // multiplies prices
  double popularity;  // Zipf weight within the category
  std::size_t style;  // index into styles()
};

struct ProductSpec {
  int category;
  int type;
  int brand;
  std::size_t style;
  std::vector<std::pair<std::string_view, std::string_view>> attrs;  // (attribute name, value)
  double price;             // dollars (also when the record shows no price)
  double price_quantile = 0.5;  // rank of the price among products of the same type, 0..1
  double popularity;
};

std::string_view attr_value(const ProductSpec& s, std::string_view name) {
  for (const auto& [n, v] : s.attrs)
    if (n == name) return v;
  return {};
}

std::string fill_template(std::string_view tmpl, const ProductSpec& s, std::string_view noun) {
  std::string out;
  std::size_t i = 0;
  while (i < tmpl.size()) {
    auto open = tmpl.find('{', i);
    if (open == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    auto close = tmpl.find('}', open);
    if (close == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    out.append(tmpl.substr(i, open - i));
    std::string_view name = tmpl.substr(open + 1, close - open - 1);
    if (name == "noun") out.append(lower(noun));
    else out.append(attr_value(s, name));
    i = close + 1;
  }
  return out;
}

std::string make_brand_name(Rng& rng, const Category& cat, std::set<std::string>& used) {
  static constexpr std::string_view kSuffixes[] = {"",     "",      "",     "",     "",     " Home",  " Labs",
                                                   " Co.", " Pro", " Goods", " Essentials", " & Co.", " Works", " Life"};
  const auto& syl = brand_syllables();
  for (int attempt = 0;; ++attempt) {
    int n = rng.chance(0.6) ? 2 : 3;
    std::string name;
    for (int k = 0; k < n; ++k) name += std::string(pick(rng, syl));
    name = capitalize(name);
    if (rng.chance(0.12)) {  // some brands are written in capitals, as many marketplace brands are
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    name += std::string(kSuffixes[rng.below(std::size(kSuffixes))]);
    (void)cat;
    if (name.size() >= 4 && used.insert(name).second) return name;
    if (attempt > 50) name += std::to_string(attempt);
  }
}

std::string make_asin(Rng& rng, std::unordered_set<std::string>& used) {
  static constexpr char kAlnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (;;) {
    std::string asin;
    if (rng.chance(0.002)) {  // a few ISBN-like ids, as in the real catalogue
      for (int i = 0; i < 10; ++i) asin += kAlnum[rng.below(10)];
    } else {
      asin = "B0";
      for (int i = 0; i < 8; ++i) asin += kAlnum[rng.below(36)];
    }
    if (used.insert(asin).second) return asin;
  }
}

std::string make_user_id(Rng& rng, std::unordered_set<std::string>& used) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";  // Amazon-2023 ids use base32 letters
  for (;;) {
    std::string id = "A";
    for (int i = 0; i < 27; ++i) id += kAlnum[rng.below(32)];
    if (used.insert(id).second) return id;
  }
}

struct Catalogue {
  std::vector<Brand> brands;
  std::vector<std::vector<int>> brands_by_category;
  std::vector<ProductSpec> specs;                       // parallel to Dataset products
  std::vector<std::vector<std::vector<ProductId>>> by_type;  // [category][type] -> product ids
  std::vector<std::vector<std::vector<double>>> popularity_cdf;  // [category][type] -> running sum over by_type
};

Product render_product(Rng& rng, const ProductSpec& s, const Catalogue& cat, std::string asin) {
  const Category& c = categories()[static_cast<std::size_t>(s.category)];
  const ProductType& t = c.types[static_cast<std::size_t>(s.type)];
  const Brand& b = cat.brands[static_cast<std::size_t>(s.brand)];
  std::string_view style = styles()[s.style];
  Product p;
  p.parent_asin = std::move(asin);
  p.main_category = std::string(c.main_category);

  // Title in marketplace style: brand, style, an attribute or two, the noun, then spec fragments.
  std::string title = b.name + " ";
  if (rng.chance(0.55)) title += std::string(style) + " ";
  std::vector<std::string> specs;
  for (const auto& [n, v] : s.attrs) specs.emplace_back(v);
  rng.shuffle(specs);
  if (!specs.empty() && rng.chance(0.5)) {
    title += specs.back() + " ";
    specs.pop_back();
  }
  title += std::string(t.noun);
  std::size_t n_specs = std::min<std::size_t>(specs.size(), 1 + rng.below(3));
  for (std::size_t k = 0; k < n_specs; ++k) title += (k == 0 ? " - " : ", ") + specs[k];
  if (rng.chance(0.4)) {
    std::string f = fill_template(pick(rng, t.features), s, t.noun);
    auto cut = f.find_first_of(",.;:");
    f = f.substr(0, std::min<std::size_t>(cut, 48));
    while (!f.empty() && f.back() == ' ') f.pop_back();
    if (!f.empty()) title += ", " + f;
  }
  p.title = title;

  std::vector<std::size_t> order(t.features.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  rng.shuffle(order);
  std::size_t n_features = rng.chance(0.06) ? 0 : std::min<std::size_t>(order.size(), 4 + rng.below(4));
  for (std::size_t k = 0; k < n_features; ++k) p.features.push_back(fill_template(t.features[order[k]], s, t.noun));

  if (rng.chance(0.75)) {
    // Marketing copy: what it is for, its look, what owners notice, and the small print.
    std::string use = std::string(pick(rng, t.uses));
    std::string d = "The " + b.name + " " + lower(t.noun) + " is made " + use + ". ";
    d += "Its " + lower(style) + " design fits in with everyday life";
    if (!s.attrs.empty()) d += ", and this one comes in " + std::string(s.attrs[0].second);
    d += ". ";
    std::vector<std::string_view> aspects = t.aspects;
    rng.shuffle(aspects);
    if (aspects.size() >= 2)
      d += "Owners point to its " + std::string(aspects[0]) + " and " + std::string(aspects[1]) +
           ", and we designed every detail with that in mind. ";
    for (std::size_t k = 0; k < std::min<std::size_t>(2, t.uses.size()); ++k)
      if (t.uses[k] != use) d += "It also works well " + std::string(t.uses[k]) + ". ";
    d.pop_back();
    p.description.push_back(d);
    if (rng.chance(0.6)) {
      std::string more = "About " + b.name + ": we have been making " + lower(styles()[b.style]) + " " +
                         std::string(c.paper_name) + " products since " + std::to_string(2005 + (b.name.size() * 7) % 15) +
                         ", with a focus on " + std::string(pick(rng, general_aspects())) + " and " +
                         std::string(pick(rng, general_aspects())) + ".";
      p.description.push_back(more);
    }
    if (rng.chance(0.4))
      p.description.push_back("Please check the size and details before ordering. Colors may vary slightly from the pictures.");
  }

  double rating = std::clamp(4.25 + 0.25 * b.quality + rng.normal(0, 0.3), 1.0, 5.0);
  p.average_rating = py::Scalar::of_float(std::round(rating * 10) / 10);
  p.rating_number = py::Scalar::of_int(static_cast<int64_t>(std::exp(rng.normal(4.0, 1.6)) * s.popularity) + 1);

  double u = rng.uniform();
  if (u < 0.12) p.price = py::Scalar::none();
  else if (u < 0.13) p.price = py::Scalar::of_str("None");  // the raw Amazon data spells a missing price so
  else p.price = py::Scalar::of_float(std::stod(format_price(s.price)));

  if (!rng.chance(0.04)) p.store = b.name;
  if (!rng.chance(0.1)) {
    p.categories.emplace_back(c.top_category);
    for (auto sub : t.categories) p.categories.emplace_back(sub);
  }

  std::string details;
  JsonWriter w(details);
  w.begin_object();
  w.key("Brand").value(b.name);
  for (const auto& [n, v] : s.attrs) w.key(n).value(v);
  static constexpr std::string_view kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                                 "July",    "August",   "September", "October", "November", "December"};
  w.key("Item Weight").value(py::float_repr(std::round(rng.uniform(0.2, 12.0) * 10) / 10) + " ounces");
  w.key("Date First Available")
      .value(std::string(kMonths[rng.below(12)]) + " " + std::to_string(1 + rng.below(28)) + ", " +
             std::to_string(2012 + rng.below(10)));
  if (rng.chance(0.5)) w.key("Manufacturer").value(b.name);
  w.end_object();
  p.details_json = details;
  return p;
}

void build_catalogue(const SynthOptions& o, int n_products, Dataset& ds, Catalogue& cat) {
  Rng rng(derive_seed(o.seed, 1));
  const auto& cats = categories();
  std::set<std::string> brand_names;
  cat.brands_by_category.resize(cats.size());
  cat.by_type.resize(cats.size());
  std::vector<double> cat_weights;
  for (std::size_t ci = 0; ci < cats.size(); ++ci) {
    cat_weights.push_back(cats[ci].weight);
    cat.by_type[ci].resize(cats[ci].types.size());
    int n_brands = std::max(8, static_cast<int>(n_products * cats[ci].weight / 22));
    for (int k = 0; k < n_brands; ++k) {
      Brand b;
      b.name = make_brand_name(rng, cats[ci], brand_names);
      b.category = static_cast<int>(ci);
      b.quality = rng.normal();
      b.price_tier = std::exp(rng.normal(0, 0.35));
      b.popularity = 1.0 / std::pow(k + 1.0, 0.9);  // Zipf: a few big brands, a long tail
      b.style = rng.below(styles().size());
      cat.brands_by_category[ci].push_back(static_cast<int>(cat.brands.size()));
      cat.brands.push_back(std::move(b));
    }
  }

  cat.specs.reserve(static_cast<std::size_t>(n_products));
  for (int i = 0; i < n_products; ++i) {
    ProductSpec s;
    s.category = static_cast<int>(rng.weighted(cat_weights));
    const Category& c = cats[static_cast<std::size_t>(s.category)];
    s.type = static_cast<int>(rng.below(c.types.size()));
    const ProductType& t = c.types[static_cast<std::size_t>(s.type)];
    std::vector<double> bw;
    for (int bi : cat.brands_by_category[static_cast<std::size_t>(s.category)]) bw.push_back(cat.brands[static_cast<std::size_t>(bi)].popularity);
    s.brand = cat.brands_by_category[static_cast<std::size_t>(s.category)][rng.weighted(bw)];
    const Brand& b = cat.brands[static_cast<std::size_t>(s.brand)];
    s.style = rng.chance(0.7) ? b.style : rng.below(styles().size());
    for (auto name : t.attributes)
      for (const auto& a : c.attributes)
        if (a.name == name) s.attrs.emplace_back(a.name, pick(rng, a.values));
    s.price = t.price_median * b.price_tier * std::exp(rng.normal(0, t.price_spread));
    s.popularity = b.popularity * std::exp(rng.normal(0, 0.8));
    cat.specs.push_back(std::move(s));
  }
  // Price quantiles within each type: what "cheap" or "premium" means to a user.
  for (std::size_t ci = 0; ci < cats.size(); ++ci) {
    for (auto& ids : cat.by_type[ci]) ids.clear();
  }
  for (std::size_t i = 0; i < cat.specs.size(); ++i)
    cat.by_type[static_cast<std::size_t>(cat.specs[i].category)][static_cast<std::size_t>(cat.specs[i].type)].push_back(static_cast<ProductId>(i));
  cat.popularity_cdf.resize(cats.size());
  for (std::size_t ci = 0; ci < cats.size(); ++ci) {
    for (const auto& ids : cat.by_type[ci]) {
      std::vector<double> cdf;
      double total = 0;
      for (ProductId id : ids) cdf.push_back(total += cat.specs[id].popularity);
      cat.popularity_cdf[ci].push_back(std::move(cdf));
    }
  }
  for (auto& per_cat : cat.by_type) {
    for (auto& ids : per_cat) {
      std::vector<ProductId> sorted = ids;
      std::sort(sorted.begin(), sorted.end(), [&](ProductId a, ProductId b) { return cat.specs[a].price < cat.specs[b].price; });
      for (std::size_t r = 0; r < sorted.size(); ++r)
        cat.specs[sorted[r]].price_quantile = sorted.size() > 1 ? static_cast<double>(r) / static_cast<double>(sorted.size() - 1) : 0.5;
    }
  }

  std::unordered_set<std::string> asins;
  Rng text_rng(derive_seed(o.seed, 2));
  std::vector<std::pair<std::string, int64_t>> item_ids;
  for (std::size_t i = 0; i < cat.specs.size(); ++i) {
    std::string asin = make_asin(rng, asins);
    item_ids.emplace_back(asin, static_cast<int64_t>(i + 1));
    ds.add_product(render_product(text_rng, cat.specs[i], cat, std::move(asin)));
  }
  ds.set_item_ids(std::move(item_ids));
}

// ------------------------------------------------------------------------------------------------------------
// Users: tastes, profiles, behaviours and reviews
// ------------------------------------------------------------------------------------------------------------

// Profile value distributions, from the counts in the real PersonalWAB user_profiles.json (1,000 users).
struct Weighted {
  std::string_view value;
  double weight;
};
const std::vector<Weighted> kGender = {{"Female", 836}, {"Male", 164}};
const std::vector<Weighted> kAge = {{"25-34", 474}, {"35-44", 466}, {"56+", 37}, {"45-49", 16}, {"18-24", 5}, {"50-55", 2}};
const std::vector<Weighted> kOccupation = {
    {"Other", 556},        {"Homemaker", 196},     {"Writer", 120},         {"Self-employed", 30},
    {"Retired", 27},       {"Customer service", 23}, {"College/grad student", 15}, {"Programmer", 12},
    {"Artist", 4},         {"Doctor/health care", 4}, {"Technician/Engineer", 2}, {"Nurse", 2},
    {"DJ/Producer", 1},    {"Baker", 1},            {"Pharmacist", 1},       {"Photographer", 1},
    {"Chef", 1},           {"Driver", 1},           {"Veteran", 1},          {"Musician", 1}, {"Social worker", 1}};
const std::vector<Weighted> kPriceSensitivity = {{"High", 44}, {"Medium", 798}, {"Low", 158}};
const std::vector<Weighted> kDiversity = {{"High", 157}, {"Medium", 770}, {"Low", 73}};
const std::vector<Weighted> kComplexity = {{"High", 85}, {"Medium", 839}, {"Low", 76}};
const std::vector<Weighted> kTone = {
    {"detailed", 663},     {"practical", 544},   {"positive", 516},     {"enthusiastic", 492},
    {"critical", 134},     {"straightforward", 111}, {"appreciative", 92}, {"honest", 56},
    {"disappointed", 49},  {"concise", 43},      {"informative", 35},   {"expressive", 32},
    {"occasionally humorous", 29}, {"supportive", 24}, {"frustrated", 24}, {"direct", 15},
    {"casual", 13},        {"friendly", 10},     {"humorous", 9},       {"constructive", 7}};
const std::vector<Weighted> kItemReference = {
    {"Specific products and brands mentioned in reviews", 469},
    {"Specific products, Purchase history, Recommendations", 152},
    {"Specific products, personal experiences, recommendations", 104},
    {"Specific products, Purchase history", 44},
    {"Specific products, personal experiences", 35},
    {"Specific products and brands mentioned frequently", 29}};
const std::vector<Weighted> kFocus = {
    {"quality", 763},  {"average rating", 693}, {"number of ratings", 369}, {"brand", 324},  {"price", 247},
    {"functionality", 181}, {"design", 44}, {"material", 32}, {"performance", 29}, {"value", 27},
    {"durability", 26}, {"user experience", 21}, {"ease of use", 11}};

std::string_view draw(Rng& rng, const std::vector<Weighted>& table) {
  std::vector<double> w;
  for (const auto& e : table) w.push_back(e.weight);
  return table[rng.weighted(w)].value;
}

// How profiles name each category's share of someone's interests (by category order of vocab.cpp).
const std::vector<std::vector<std::string_view>> kInterestPhrases = {
    {"Electronics", "tech gadgets", "home electronics", "audio gear"},
    {"Home & Kitchen", "home decor", "kitchenware", "home goods", "kitchen appliances"},
    {"Snacks", "gourmet food", "pantry staples", "food & beverages", "coffee and tea"},
    {"Clothing", "Fashion", "footwear", "accessories", "jewelry"},
    {"Health & Personal Care", "personal care", "health supplements", "wellness", "household essentials"}};

struct Taste {
  std::vector<double> category_weight;             // per category
  std::vector<std::vector<double>> type_weight;    // [category][type]
  std::vector<std::vector<int>> favourite_brands;  // [category] -> brand ids
  double brand_loyalty;                            // weight of a favourite brand
  double price_target;                             // preferred price quantile 0..1
  double price_strictness;
  std::size_t style;
  std::size_t second_style;
  double generosity;  // rating shift
  int min_sentences, max_sentences;
  bool enthusiastic, critical, detailed, concise, mentions_brands;
  std::vector<std::string> focus;  // lower-case focus aspects
};

// What a review said, kept so the review instruction can carry the same opinions.
struct Opinion {
  std::string aspect;
  int polarity;  // +1 praise, -1 complaint, 0 neutral
};

struct SynthBehaviour {
  ProductId product;
  int64_t timestamp;
  int rating;
  std::vector<Opinion> opinions;
};

struct SynthUser {
  std::string id;
  Profile profile;
  Taste taste;
  std::vector<SynthBehaviour> behaviours;
  std::vector<Split> splits;
};

Taste make_taste(Rng& rng, const Catalogue& cat, std::string_view price_sens, std::string_view diversity,
                 std::string_view complexity, const std::vector<std::string>& tones) {
  const auto& cats = categories();
  Taste t;
  std::size_t n_cats = diversity == "Low" ? 1 + rng.below(2) : diversity == "High" ? 3 + rng.below(3) : 2 + rng.below(2);
  std::vector<double> cw;
  for (const auto& c : cats) cw.push_back(c.weight);
  auto chosen = pick_weighted_distinct(rng, cw, n_cats);
  t.category_weight.assign(cats.size(), 0.02);
  for (std::size_t k : chosen) t.category_weight[k] = rng.gamma(diversity == "High" ? 4.0 : 1.5, 1.0) + 0.2;
  t.type_weight.resize(cats.size());
  t.favourite_brands.resize(cats.size());
  for (std::size_t ci = 0; ci < cats.size(); ++ci) {
    std::size_t n_types = cats[ci].types.size();
    t.type_weight[ci].assign(n_types, 0.15);
    std::size_t n_fav = (diversity == "High" ? 4 : 2) + rng.below(3);
    for (std::size_t k = 0; k < n_fav; ++k) t.type_weight[ci][rng.below(n_types)] += rng.gamma(2.0, 1.0);
    std::vector<double> bw;
    for (int b : cat.brands_by_category[ci]) bw.push_back(cat.brands[static_cast<std::size_t>(b)].popularity + 0.01);
    for (std::size_t k : pick_weighted_distinct(rng, bw, 2 + rng.below(4))) t.favourite_brands[ci].push_back(cat.brands_by_category[ci][k]);
  }
  t.brand_loyalty = rng.uniform(1.0, 3.0);
  t.price_target = std::clamp((price_sens == "High" ? 0.15 : price_sens == "Low" ? 0.8 : 0.45) + rng.normal(0, 0.1), 0.0, 1.0);
  t.price_strictness = price_sens == "Medium" ? 2.0 : 4.0;
  t.style = rng.below(styles().size());
  t.second_style = rng.below(styles().size());
  auto has_tone = [&](std::string_view w) {
    return std::any_of(tones.begin(), tones.end(), [&](const std::string& s) { return s.find(w) != std::string::npos; });
  };
  t.enthusiastic = has_tone("enthusiastic") || has_tone("expressive");
  t.critical = has_tone("critical") || has_tone("disappointed") || has_tone("frustrated");
  t.detailed = has_tone("detailed") || has_tone("informative");
  t.concise = has_tone("concise") || has_tone("straightforward") || has_tone("direct");
  t.generosity = rng.normal(t.critical ? -0.5 : 0.15, 0.35) + (has_tone("positive") ? 0.25 : 0.0);
  if (complexity == "Low") t.min_sentences = 1, t.max_sentences = 2;
  else if (complexity == "High") t.min_sentences = 4, t.max_sentences = 7;
  else t.min_sentences = 2, t.max_sentences = 4;
  if (t.concise) t.max_sentences = std::max(t.min_sentences, t.max_sentences - 1);
  if (t.detailed) t.max_sentences += 1;
  t.mentions_brands = rng.chance(0.6);
  return t;
}

const std::vector<std::string_view> kPraise = {"excellent", "great", "really good", "impressive", "fantastic", "solid",
                                               "better than expected", "spot on"};
const std::vector<std::string_view> kComplaint = {"disappointing", "not great", "below what I expected", "mediocre",
                                                  "a letdown", "poor"};
const std::vector<std::string_view> kNeutral = {"okay", "fine for the price", "about average", "acceptable"};

// `used` holds the templates already used in this review, so none repeats.
std::string review_sentence(Rng& rng, const Opinion& op, const Taste& t, std::string_view short_noun, std::set<int>& used) {
  std::string a = op.aspect;
  auto fresh = [&](int base, int n) {
    int k = static_cast<int>(rng.below(static_cast<uint64_t>(n)));
    for (int tries = 0; tries < n && used.count(base + k); ++tries) k = (k + 1) % n;
    used.insert(base + k);
    return k;
  };
  if (op.polarity > 0) {
    std::string adj(pick(rng, kPraise));
    switch (fresh(0, 5)) {
      case 0: return "The " + a + " is " + adj + (t.enthusiastic ? "!" : ".");
      case 1: return "I was impressed by the " + a + (t.enthusiastic ? " - absolutely love it!" : ".");
      case 2: return "Really happy with the " + a + ", it is " + adj + ".";
      case 3: return capitalize(a) + " is " + adj + " for " + with_article(std::string(short_noun)) + ".";
      default: return "What stands out most is the " + a + ", which is " + adj + (t.enthusiastic ? "!" : ".");
    }
  }
  if (op.polarity < 0) {
    std::string adj(pick(rng, kComplaint));
    switch (fresh(10, 4)) {
      case 0: return "The " + a + " is " + adj + ".";
      case 1: return "My main complaint is the " + a + ", which is " + adj + ".";
      case 2: return "Unfortunately the " + a + " was " + adj + (t.critical ? " and I expected more." : ".");
      default: return "I wish the " + a + " were better; it is " + adj + ".";
    }
  }
  std::string adj(pick(rng, kNeutral));
  return fresh(20, 2) == 0 ? "The " + a + " is " + adj + "." : capitalize(a) + " is " + adj + ", nothing special.";
}

std::string review_title(Rng& rng, int rating, std::string_view short_noun, bool enthusiastic) {
  static const std::vector<std::string_view> k5 = {"Love it", "Exactly what I needed", "Great purchase", "Highly recommend",
                                                   "Excellent quality", "Five stars"};
  static const std::vector<std::string_view> k4 = {"Very good", "Solid choice", "Happy with it", "Good value", "Works well"};
  static const std::vector<std::string_view> k3 = {"It's okay", "Mixed feelings", "Average", "Does the job"};
  static const std::vector<std::string_view> k12 = {"Disappointed", "Not worth it", "Would not buy again", "Poor quality",
                                                    "Returned it"};
  const auto& pool = rating >= 5 ? k5 : rating == 4 ? k4 : rating == 3 ? k3 : k12;
  std::string t(pick(rng, pool));
  if (rng.chance(0.3)) t = capitalize(std::string(short_noun)) + ": " + lower(t);
  if (enthusiastic && rating >= 4) t += "!";
  return t;
}

std::string review_text(Rng& rng, const SynthUser& u, const SynthBehaviour& b, const ProductSpec& s,
                        const Brand& brand, const ProductType& type) {
  const Taste& t = u.taste;
  std::string text;
  if (t.mentions_brands && rng.chance(0.5))
    text += (b.rating >= 4 ? "This " : "I bought this ") + brand.name + " " + std::string(type.short_noun) +
            (b.rating >= 4 ? " is a keeper." : " hoping for more.");
  std::set<int> used_templates;
  for (std::size_t k = 0; k < b.opinions.size(); ++k) {
    if (!text.empty()) text += ' ';
    text += review_sentence(rng, b.opinions[k], t, type.short_noun, used_templates);
  }
  if (t.detailed && !s.attrs.empty() && rng.chance(0.7)) {
    const auto& [n, v] = s.attrs[rng.below(s.attrs.size())];
    text += " I went with the " + std::string(v) + " option (" + lower(n) + ")";
    text += b.rating >= 4 ? " and it was the right call." : ", which might have been a mistake.";
  }
  if (rng.chance(0.4)) {
    text += " I use it " + std::string(pick(rng, type.uses)) + ".";
  }
  if (b.rating >= 4 && rng.chance(0.35)) text += t.enthusiastic ? " Would definitely buy again!" : " Would buy again.";
  if (b.rating <= 2 && rng.chance(0.4)) text += " I would not recommend it.";
  return text;
}

std::vector<Opinion> make_opinions(Rng& rng, const Taste& t, const ProductType& type, int rating) {
  int n = static_cast<int>(rng.range(t.min_sentences, t.max_sentences));
  std::vector<Opinion> ops;
  std::set<std::string> used;
  for (int k = 0; k < n; ++k) {
    std::string aspect;
    for (int tries = 0; tries < 6; ++tries) {
      double u = rng.uniform();
      if (u < 0.55) aspect = std::string(pick(rng, type.aspects));
      else if (u < 0.8 && !t.focus.empty()) aspect = pick(rng, t.focus);
      else aspect = std::string(pick(rng, general_aspects()));
      if (aspect == "average rating" || aspect == "number of ratings" || aspect == "brand") aspect = "quality";
      if (used.insert(aspect).second) break;
      aspect.clear();
    }
    if (aspect.empty()) continue;
    int polarity;
    double p_pos = rating >= 5 ? 0.95 : rating == 4 ? 0.75 : rating == 3 ? 0.4 : 0.1;
    double u = rng.uniform();
    polarity = u < p_pos ? 1 : u < p_pos + 0.15 ? 0 : -1;
    ops.push_back({aspect, polarity});
  }
  if (ops.empty()) ops.push_back({std::string(pick(rng, type.aspects)), rating >= 4 ? 1 : rating == 3 ? 0 : -1});
  return ops;
}

int behaviour_count(Rng& rng, double mean) {
  // 6% light users (5-9 behaviours: no train split, as 61 of the paper's 1,000 users), the rest heavy-tailed.
  if (rng.chance(0.06)) return static_cast<int>(rng.range(5, 9));
  double rest_mean = (mean - 0.06 * 7) / 0.94 - 10;
  int n = 10 + static_cast<int>(std::lround(rng.gamma(1.6, rest_mean / 1.6)));
  return std::min(n, 400);
}

ProductId choose_product(Rng& rng, const Catalogue& cat, const Taste& t, int ci, int ti,
                         const std::unordered_set<ProductId>& owned) {
  const auto& ids = cat.by_type[static_cast<std::size_t>(ci)][static_cast<std::size_t>(ti)];
  const auto& cdf = cat.popularity_cdf[static_cast<std::size_t>(ci)][static_cast<std::size_t>(ti)];
  std::vector<ProductId> cands;
  std::vector<double> scores;
  std::size_t n_look = std::min<std::size_t>(ids.size(), 48);
  const auto& fav = t.favourite_brands[static_cast<std::size_t>(ci)];
  // Favourite-brand products are always candidates, so loyalty shows even in big categories.
  for (ProductId id : ids)
    if (std::find(fav.begin(), fav.end(), cat.specs[id].brand) != fav.end() && rng.chance(0.5)) cands.push_back(id);
  // Candidates are drawn by popularity, so best sellers recur across users as they do on a real shop.
  for (std::size_t k = 0; k < n_look; ++k) {
    double r = rng.uniform() * cdf.back();
    cands.push_back(ids[static_cast<std::size_t>(std::upper_bound(cdf.begin(), cdf.end(), r) - cdf.begin()) % ids.size()]);
  }
  for (ProductId id : cands) {
    const ProductSpec& s = cat.specs[id];
    double score = 0.3 * std::log(s.popularity + 1e-3);
    if (std::find(fav.begin(), fav.end(), s.brand) != fav.end()) score += t.brand_loyalty;
    if (s.style == t.style) score += 1.0;
    else if (s.style == t.second_style) score += 0.5;
    score -= t.price_strictness * std::abs(s.price_quantile - t.price_target);
    if (owned.count(id)) score -= 50;  // people rarely review the same item twice
    scores.push_back(std::exp(score));
  }
  return cands[rng.weighted(scores)];
}

// The product people buy to go with `prev` among products of type `ti`: the best seller of the same brand
// (ecosystems: a phone's own case), else of the same style, else of the type. Fixed per (prev, type), which
// gives the recommender item-to-item transitions to learn.
std::optional<ProductId> companion(const Catalogue& cat, ProductId prev, int ti) {
  const ProductSpec& p = cat.specs[prev];
  const auto& ids = cat.by_type[static_cast<std::size_t>(p.category)][static_cast<std::size_t>(ti)];
  std::optional<ProductId> best;
  int best_rank = -1;
  for (ProductId id : ids) {
    const ProductSpec& s = cat.specs[id];
    int rank = s.brand == p.brand ? 2 : s.style == p.style ? 1 : 0;
    if (rank > best_rank || (rank == best_rank && s.popularity > cat.specs[*best].popularity)) {
      best = id;
      best_rank = rank;
    }
  }
  return best;
}

SynthUser make_user(uint64_t seed, int index, const Catalogue& cat, double mean_behaviours,
                    std::unordered_set<std::string>& user_ids) {
  Rng rng(derive_seed(seed, 3, static_cast<uint64_t>(index)));
  const auto& cats = categories();
  SynthUser u;
  u.id = make_user_id(rng, user_ids);
  std::string gender(draw(rng, kGender)), age(draw(rng, kAge)), occupation(draw(rng, kOccupation));
  std::string price_sens(draw(rng, kPriceSensitivity)), diversity(draw(rng, kDiversity)), complexity(draw(rng, kComplexity));
  std::vector<double> tone_w;
  for (const auto& e : kTone) tone_w.push_back(e.weight);
  std::vector<std::string> tones;
  for (std::size_t k : pick_weighted_distinct(rng, tone_w, rng.chance(0.97) ? 3 : 4)) tones.emplace_back(kTone[k].value);
  u.taste = make_taste(rng, cat, price_sens, diversity, complexity, tones);
  Taste& t = u.taste;

  // Focus aspects: mostly the common ones, plus what the user's main category makes people care about.
  std::vector<double> fw;
  for (const auto& e : kFocus) fw.push_back(e.weight);
  std::size_t n_focus = rng.chance(0.65) ? 3 : rng.chance(0.66) ? 4 : 2;
  std::vector<std::string> focus_words;
  for (std::size_t k : pick_weighted_distinct(rng, fw, n_focus)) focus_words.emplace_back(kFocus[k].value);
  std::size_t top_cat = static_cast<std::size_t>(std::max_element(t.category_weight.begin(), t.category_weight.end()) - t.category_weight.begin());
  if (rng.chance(0.4)) {
    static const std::vector<std::string_view> kCatFocus = {"performance", "design", "taste", "comfort", "effectiveness"};
    focus_words.emplace_back(kCatFocus[top_cat]);
  }
  for (const auto& f : focus_words) t.focus.push_back(f);

  // Behaviours in time order, with complement purchases following their main item.
  int n = behaviour_count(rng, mean_behaviours);
  int64_t ts = 1451606400000LL + static_cast<int64_t>(rng.uniform(0, 4.0 * 365 * 86400000.0));  // 2016-2019 start
  std::unordered_set<ProductId> owned;
  for (int k = 0; k < n; ++k) {
    int ci, ti;
    const SynthBehaviour* prev = u.behaviours.empty() ? nullptr : &u.behaviours.back();
    const ProductType* prev_type = nullptr;
    if (prev) {
      const auto& ps = cat.specs[prev->product];
      prev_type = &cats[static_cast<std::size_t>(ps.category)].types[static_cast<std::size_t>(ps.type)];
    }
    bool complement = prev_type && !prev_type->complements.empty() && rng.chance(0.35);
    if (complement) {
      ci = cat.specs[prev->product].category;
      std::string_view want = pick(rng, prev_type->complements);
      ti = cat.specs[prev->product].type;
      const auto& types = cats[static_cast<std::size_t>(ci)].types;
      for (std::size_t x = 0; x < types.size(); ++x)
        if (types[x].noun == want) ti = static_cast<int>(x);
    } else {
      ci = static_cast<int>(rng.weighted(t.category_weight));
      ti = static_cast<int>(rng.weighted(t.type_weight[static_cast<std::size_t>(ci)]));
    }
    if (cat.by_type[static_cast<std::size_t>(ci)][static_cast<std::size_t>(ti)].empty()) {
      --k;  // tiny catalogues can lack a type; draw again
      if (owned.size() > 100000) break;
      continue;
    }
    SynthBehaviour b;
    std::optional<ProductId> buddy = complement ? companion(cat, prev->product, ti) : std::nullopt;
    b.product = buddy && !owned.count(*buddy) && rng.chance(0.65) ? *buddy : choose_product(rng, cat, t, ci, ti, owned);
    owned.insert(b.product);
    ts += 3600000LL + static_cast<int64_t>(rng.exponential(18.0 * 86400000.0));
    b.timestamp = ts;
    const ProductSpec& s = cat.specs[b.product];
    double fit = 0;
    const auto& fav = t.favourite_brands[static_cast<std::size_t>(ci)];
    if (std::find(fav.begin(), fav.end(), s.brand) != fav.end()) fit += 0.35;
    if (s.style == t.style) fit += 0.25;
    fit -= 0.8 * std::max(0.0, std::abs(s.price_quantile - t.price_target) - 0.3);
    double r = 4.0 + t.generosity + 0.35 * cat.brands[static_cast<std::size_t>(s.brand)].quality + fit + rng.normal(0, 0.85);
    b.rating = static_cast<int>(std::clamp(std::lround(r), 1L, 5L));
    b.opinions = make_opinions(rng, t, cats[static_cast<std::size_t>(ci)].types[static_cast<std::size_t>(ti)], b.rating);
    u.behaviours.push_back(std::move(b));
  }

  // Chronological split: last 10% test (at least one), the 10% before it train, the rest history.
  std::size_t total = u.behaviours.size();
  std::size_t n_test = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(0.1 * static_cast<double>(total))));
  std::size_t n_train = total / 10;
  u.splits.assign(total, Split::kHistory);
  for (std::size_t k = 0; k < n_test; ++k) u.splits[total - 1 - k] = Split::kTest;
  for (std::size_t k = 0; k < n_train; ++k) u.splits[total - 1 - n_test - k] = Split::kTrain;

  // Profile: demographics drawn from the real distributions, the rest summarising the behaviours.
  std::vector<double> cat_count(cats.size(), 0);
  std::map<int, int> brand_count;
  for (const auto& b : u.behaviours) {
    cat_count[static_cast<std::size_t>(cat.specs[b.product].category)] += 1;
    brand_count[cat.specs[b.product].brand] += 1;
  }
  std::vector<std::string> interests;
  std::vector<std::size_t> cat_order(cats.size());
  for (std::size_t k = 0; k < cats.size(); ++k) cat_order[k] = k;
  std::stable_sort(cat_order.begin(), cat_order.end(), [&](auto a, auto b) { return cat_count[a] > cat_count[b]; });
  for (std::size_t k : cat_order) {
    if (cat_count[k] == 0 || interests.size() >= 5) continue;
    const auto& phrases = kInterestPhrases[k];
    interests.emplace_back(pick(rng, phrases));
    if (cat_count[k] >= 6 && interests.size() < 5 && rng.chance(0.5)) {
      std::string extra(pick(rng, phrases));
      if (std::find(interests.begin(), interests.end(), extra) == interests.end()) interests.push_back(extra);
    }
  }
  std::vector<std::pair<int, int>> brands_by_count;
  for (const auto& [b, c] : brand_count) brands_by_count.emplace_back(-c, b);
  std::sort(brands_by_count.begin(), brands_by_count.end());
  std::vector<std::string> brand_names;
  for (const auto& [c, b] : brands_by_count) {
    if (brand_names.size() >= 30) break;
    brand_names.push_back(cat.brands[static_cast<std::size_t>(b)].name);
  }
  bool title_case = rng.chance(0.5);
  std::vector<std::string> tone_out;
  for (std::size_t k = 0; k < tones.size(); ++k) tone_out.push_back(k == 0 || title_case ? capitalize(tones[k]) : tones[k]);
  std::vector<std::string> focus_out;
  for (std::size_t k = 0; k < focus_words.size(); ++k) focus_out.push_back(k == 0 || title_case ? capitalize(focus_words[k]) : focus_words[k]);

  u.profile.fields = {{"Gender", gender},
                      {"Age", age},
                      {"Occupation", occupation},
                      {"Price Sensitivity", price_sens},
                      {"Shopping Interest", join(interests, ", ")},
                      {"Brand Preference", join(brand_names, ", ")},
                      {"Diversity Preference", diversity},
                      {"Interaction Complexity", complexity},
                      {"Tone and Style", join(tone_out, ", ")},
                      {"Item Reference", std::string(draw(rng, kItemReference))},
                      {"Focus Aspect", join(focus_out, ", ")}};
  (void)top_cat;
  return u;
}

// ------------------------------------------------------------------------------------------------------------
// Instructions
// ------------------------------------------------------------------------------------------------------------

struct InstructionContext {
  const SynthUser& user;
  const SynthBehaviour& target;
  const ProductSpec& spec;
  const Brand& brand;
  const Category& category;
  const ProductType& type;
  const Catalogue& cat;
  const std::vector<const SynthBehaviour*>& earlier;  // the user's behaviours before the target
};

std::string opener(Rng& rng, const Taste& t) {
  if (t.enthusiastic && rng.chance(0.5)) return std::string(pick(rng, std::vector<std::string_view>{"Hi there! ", "Hey! ", "Hello! "}));
  if (!t.concise && rng.chance(0.2)) return "Hi! ";
  return "";
}

// A sentence about an earlier purchase in the same category, which only the user's history can resolve:
// "I bought a Voltrix speaker a while ago and loved it." Empty if there is none.
std::string history_reference(Rng& rng, const InstructionContext& c) {
  std::vector<const SynthBehaviour*> same;
  for (const SynthBehaviour* b : c.earlier)
    if (c.cat.specs[b->product].category == c.spec.category) same.push_back(b);
  if (same.empty()) return "";
  const SynthBehaviour* b = same[same.size() - 1 - rng.below(std::min<std::size_t>(same.size(), 3))];
  const ProductSpec& ps = c.cat.specs[b->product];
  const ProductType& pt = categories()[static_cast<std::size_t>(ps.category)].types[static_cast<std::size_t>(ps.type)];
  const Brand& pb = c.cat.brands[static_cast<std::size_t>(ps.brand)];
  std::string thing = pb.name + " " + std::string(pt.short_noun);
  switch (rng.below(3)) {
    case 0: return "I got " + some_or_a(thing) + " a while ago and " + (b->rating >= 4 ? "loved it." : "was not impressed.");
    case 1: return b->rating >= 4 ? "Something in the spirit of the " + thing + " I bought before would be great."
                                  : "Please nothing like the " + thing + " I bought last time.";
    default: return "It should go well with the " + std::string(pt.short_noun) + " I bought recently.";
  }
}

std::string price_hint(Rng& rng, const InstructionContext& c) {
  std::string_view sens = c.user.profile.get("Price Sensitivity");
  double cap = std::ceil(c.spec.price * rng.uniform(1.1, 1.6) / 5) * 5;
  if (sens == "High") {
    switch (rng.below(3)) {
      case 0: return "I'm on a tight budget, so under $" + std::to_string(static_cast<int>(cap)) + " please.";
      case 1: return "It has to be affordable, ideally less than $" + std::to_string(static_cast<int>(cap)) + ".";
      default: return "Please keep it cheap.";
    }
  }
  if (sens == "Low") {
    return std::string(pick(rng, std::vector<std::string_view>{"I don't mind paying more for quality.",
                                                               "Price isn't a big concern if it's well made.",
                                                               "I'm happy to pay for a premium one."}));
  }
  if (rng.chance(0.5)) return "Something around $" + std::to_string(static_cast<int>(std::lround(c.spec.price / 5) * 5)) + " would be fine.";
  return "";
}

std::string search_instruction(Rng& rng, const InstructionContext& c) {
  const Taste& t = c.user.taste;
  std::string_view complexity = c.user.profile.get("Interaction Complexity");
  std::vector<std::string> attrs;
  for (const auto& [n, v] : c.spec.attrs) attrs.push_back(lower(v));
  rng.shuffle(attrs);
  std::size_t n_attrs = std::min<std::size_t>(attrs.size(), complexity == "Low" ? 1 : complexity == "High" ? 3 : 2);
  attrs.resize(n_attrs);
  std::string noun = rng.chance(0.6) ? std::string(c.type.short_noun) : lower(c.type.noun);
  bool name_brand = rng.chance(t.mentions_brands ? 0.55 : 0.25);
  bool name_style = rng.chance(0.35);
  std::string thing;
  if (name_style) thing += lower(styles()[c.spec.style]) + " ";
  if (!attrs.empty()) {
    thing += attrs[0] + " ";
  }
  thing += noun;
  std::string out = opener(rng, t);
  switch (rng.below(5)) {
    case 0: out += "I'm looking for " + with_article(thing); break;
    case 1: out += "Can you find me " + with_article(thing); break;
    case 2: out += "I need " + with_article(thing); break;
    case 3: out += "Please search for " + with_article(thing); break;
    default: out += "Help me find " + with_article(thing); break;
  }
  if (name_brand) out += " from " + c.brand.name;
  if (attrs.size() > 1) {
    std::vector<std::string> rest(attrs.begin() + 1, attrs.end());
    out += " in " + list_and(rest);
  }
  out += rng.chance(0.5) && t.enthusiastic ? "!" : ".";
  if (!c.type.features.empty() && (complexity != "Low" || rng.chance(0.3))) {
    std::string label = feature_label(fill_template(pick(rng, c.type.features), c.spec, c.type.noun));
    switch (rng.below(3)) {
      case 0: out += " Must have: " + label + "."; break;
      case 1: out += " What I care about most: " + label + "."; break;
      default: out += " Key feature for me: " + label + "."; break;
    }
  }
  if (complexity != "Low" && rng.chance(complexity == "High" ? 0.5 : 0.25)) {
    std::string ref = history_reference(rng, c);
    if (!ref.empty()) out += " " + ref;
  }
  if (complexity != "Low" || rng.chance(0.3)) {
    std::string ph = price_hint(rng, c);
    if (!ph.empty()) out += " " + ph;
  }
  if (complexity == "High" || (t.detailed && rng.chance(0.5))) {
    out += " It's " + std::string(pick(rng, c.type.uses)) + ".";
    if (!t.focus.empty() && rng.chance(0.6)) out += " " + capitalize(pick(rng, t.focus)) + " matters most to me.";
  }
  return out;
}

std::string recommend_instruction(Rng& rng, const InstructionContext& c) {
  const Taste& t = c.user.taste;
  std::string_view complexity = c.user.profile.get("Interaction Complexity");
  std::string out = opener(rng, t);
  std::string use(pick(rng, c.type.uses));
  std::string interest(pick(rng, kInterestPhrases[static_cast<std::size_t>(c.spec.category)]));
  switch (rng.below(6)) {
    case 0: out += "Can you recommend something " + use + "?"; break;
    case 1: out += "I'd like some suggestions for " + lower(interest) + ", based on what I usually buy."; break;
    case 2: out += "Any ideas for what I should get next? Something " + use + " maybe."; break;
    case 3: out += "Recommend me a few things I might like from " + lower(interest) + "."; break;
    case 4: out += "What would go well with my recent purchases?"; break;
    default: out += "I'm shopping " + use + ". What do you suggest?"; break;
  }
  if (complexity != "Low" && rng.chance(0.5)) {
    out += " I tend to like " + lower(styles()[t.style]) + " things.";
  }
  if (complexity == "High" && rng.chance(0.6)) out += " " + price_hint(rng, c);
  if (complexity != "Low" && rng.chance(0.3)) out += " " + history_reference(rng, c);
  if (rng.chance(0.2)) out += " Maybe " + some_or_a(std::string(c.type.short_noun)) + "?";
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string review_instruction(Rng& rng, const InstructionContext& c) {
  const Taste& t = c.user.taste;
  std::string name = rng.chance(0.5) ? std::string(c.type.short_noun) : c.brand.name + " " + std::string(c.type.short_noun);
  std::string out = opener(rng, t);
  switch (rng.below(4)) {
    case 0: out += "I want to write a review for the " + name + " I bought."; break;
    case 1: out += "Please post a review of my " + name + "."; break;
    case 2: out += "Help me review the " + name + " I got recently."; break;
    default: out += "Time to review the " + name + "."; break;
  }
  int r = c.target.rating;
  static const std::vector<std::string_view> kOverall = {"", "I really didn't like it", "I'm not happy with it",
                                                         "It was just okay", "I liked it overall", "I absolutely love it"};
  out += " " + std::string(kOverall[static_cast<std::size_t>(r)]) + (t.enthusiastic && r >= 4 ? "!" : ".");
  std::vector<std::string> good, bad;
  for (const auto& op : c.target.opinions) {
    if (op.polarity > 0) good.push_back(op.aspect);
    else if (op.polarity < 0) bad.push_back(op.aspect);
  }
  if (good.size() > 3) good.resize(3);
  if (bad.size() > 2) bad.resize(2);
  if (rng.chance(0.5)) out += " I'd give it " + std::to_string(r) + (r == 1 ? " star." : " stars.");
  if (!good.empty()) out += " Mention that the " + list_and(good) + (good.size() > 1 ? " were" : " was") + " great";
  if (!bad.empty()) out += std::string(good.empty() ? " Say that" : ", but") + " the " + list_and(bad) + (bad.size() > 1 ? " were" : " was") + " a letdown";
  if (!good.empty() || !bad.empty()) out += ".";
  std::string_view tone = c.user.profile.get("Tone and Style");
  if (rng.chance(0.6)) out += " Keep it " + lower(tone) + ".";
  return out;
}

std::string instruction_for(Rng& rng, TaskType type, const InstructionContext& c) {
  switch (type) {
    case TaskType::kSearch: return search_instruction(rng, c);
    case TaskType::kRecommend: return recommend_instruction(rng, c);
    case TaskType::kReview: return review_instruction(rng, c);
  }
  return {};
}

struct TaskSlot {
  UserId user;
  std::size_t behaviour;
  TaskType type;
  Split split;
};

}  // namespace

Dataset synthesize(const SynthOptions& o) {
  const bool full = o.scale == SynthScale::kFull;
  int n_users = o.n_users > 0 ? o.n_users : full ? 1000 : 50;
  int n_products = o.n_products > 0 ? o.n_products : full ? 35772 : 2000;
  double mean_behaviours = full ? 39.1 : 30.0;  // lands on ~38 after the split and rounding (Table 2)
  if (n_users < 1 || n_products < 50) throw UsageError("synth needs at least 1 user and 50 products");

  Dataset ds;
  Catalogue cat;
  build_catalogue(o, n_products, ds, cat);
  const auto& cats = categories();

  std::unordered_set<std::string> user_ids;
  std::vector<SynthUser> users;
  users.reserve(static_cast<std::size_t>(n_users));
  for (int i = 0; i < n_users; ++i) users.push_back(make_user(o.seed, i, cat, mean_behaviours, user_ids));

  // Reviews are written per user from their own Rng, then users enter the dataset.
  for (std::size_t ui = 0; ui < users.size(); ++ui) {
    SynthUser& su = users[ui];
    Rng rng(derive_seed(o.seed, 4, ui));
    User u;
    u.id = su.id;
    u.profile = su.profile;
    u.has_profile = true;
    for (std::size_t k = 0; k < su.behaviours.size(); ++k) {
      const SynthBehaviour& b = su.behaviours[k];
      const ProductSpec& s = cat.specs[b.product];
      const ProductType& type = cats[static_cast<std::size_t>(s.category)].types[static_cast<std::size_t>(s.type)];
      Behaviour out;
      out.product = b.product;
      out.split = su.splits[k];
      out.review.rating = py::Scalar::of_float(b.rating);
      out.review.title = review_title(rng, b.rating, type.short_noun, su.taste.enthusiastic);
      out.review.text = review_text(rng, su, b, s, cat.brands[static_cast<std::size_t>(s.brand)], type);
      out.review.parent_asin = ds.product(b.product).parent_asin;
      out.review.timestamp = b.timestamp;
      u.behaviours.push_back(std::move(out));
    }
    ds.add_user(std::move(u));
  }

  // Which behaviours become tasks. Test: one per user first, then more at random, with the exact type mix.
  // Train: any (train behaviour, type) pair, so one purchase can yield a search, a recommend and a review task.
  Rng task_rng(derive_seed(o.seed, 5));
  auto n_test = static_cast<std::size_t>(std::lround(o.test_tasks_per_user * n_users));
  auto n_train = static_cast<std::size_t>(std::lround(o.train_tasks_per_user * n_users));
  std::vector<TaskSlot> test_slots, extra_test, train_slots;
  for (UserId ui = 0; ui < users.size(); ++ui) {
    std::vector<std::size_t> test_idx;
    for (std::size_t k = 0; k < users[ui].splits.size(); ++k) {
      if (users[ui].splits[k] == Split::kTest) test_idx.push_back(k);
      if (users[ui].splits[k] == Split::kTrain)
        for (TaskType t : kAllTaskTypes) train_slots.push_back({ui, k, t, Split::kTrain});
    }
    task_rng.shuffle(test_idx);
    for (std::size_t j = 0; j < test_idx.size(); ++j)
      (j == 0 ? test_slots : extra_test).push_back({ui, test_idx[j], TaskType::kSearch, Split::kTest});
  }
  task_rng.shuffle(extra_test);
  if (test_slots.size() > n_test) {
    task_rng.shuffle(test_slots);
    test_slots.resize(n_test);
  }
  for (std::size_t k = 0; test_slots.size() < n_test && k < extra_test.size(); ++k) test_slots.push_back(extra_test[k]);
  std::vector<TaskType> test_types;
  auto n_search = static_cast<std::size_t>(std::lround(o.test_share_search * static_cast<double>(test_slots.size())));
  auto n_rec = static_cast<std::size_t>(std::lround(o.test_share_recommend * static_cast<double>(test_slots.size())));
  for (std::size_t k = 0; k < test_slots.size(); ++k)
    test_types.push_back(k < n_search ? TaskType::kSearch : k < n_search + n_rec ? TaskType::kRecommend : TaskType::kReview);
  task_rng.shuffle(test_types);
  for (std::size_t k = 0; k < test_slots.size(); ++k) test_slots[k].type = test_types[k];
  task_rng.shuffle(train_slots);
  if (train_slots.size() > n_train) train_slots.resize(n_train);

  std::unordered_set<std::string> instructions;
  for (auto* slots : {&train_slots, &test_slots}) {
    // Tasks are listed per user, in time order, as the original file groups them.
    std::sort(slots->begin(), slots->end(), [](const TaskSlot& a, const TaskSlot& b) {
      return std::tie(a.user, a.behaviour, a.type) < std::tie(b.user, b.behaviour, b.type);
    });
    for (const TaskSlot& slot : *slots) {
      const SynthUser& su = users[slot.user];
      const SynthBehaviour& b = su.behaviours[slot.behaviour];
      const ProductSpec& s = cat.specs[b.product];
      std::vector<const SynthBehaviour*> earlier;
      for (std::size_t k = 0; k < slot.behaviour; ++k) earlier.push_back(&su.behaviours[k]);
      InstructionContext ctx{su, b, s, cat.brands[static_cast<std::size_t>(s.brand)], cats[static_cast<std::size_t>(s.category)],
                             cats[static_cast<std::size_t>(s.category)].types[static_cast<std::size_t>(s.type)], cat, earlier};
      Rng rng(derive_seed(o.seed, 6, (static_cast<uint64_t>(slot.user) << 32) ^ (slot.behaviour << 2) ^ static_cast<uint64_t>(slot.type)));
      std::string text;
      for (int attempt = 0; attempt < 50; ++attempt) {
        text = instruction_for(rng, slot.type, ctx);
        if (attempt >= 20) text += " (order " + std::to_string(attempt - 19) + ")";
        if (instructions.insert(text).second) break;
      }
      Task t;
      t.split = slot.split;
      t.user = slot.user;
      t.instruction = std::move(text);
      t.type = slot.type;
      t.timestamp = b.timestamp;
      t.target_product = b.product;
      t.target_review = ds.user(slot.user).behaviours[slot.behaviour].review;
      ds.add_task(std::move(t));
    }
  }
  return ds;
}

void synthesize_to(const SynthOptions& options, const std::filesystem::path& dir) {
  write_dataset(synthesize(options), dir);
}

}  // namespace pwab::data
