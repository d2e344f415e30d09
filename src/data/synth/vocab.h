// src/data/synth/vocab.h: the word tables behind the synthetic dataset generator.
//
// Written for pwab (not taken from any dataset): five top-level categories as in the paper (Electronics,
// Home and Kitchen, Grocery and Gourmet Food, Clothing Shoes and Jewelry, Health and Household), each with
// product types whose titles, features, review aspects and use cases share vocabulary, so that search
// distractors overlap with targets the way real Amazon listings do.
#pragma once
#include <string_view>
#include <vector>

namespace pwab::data::synth {

//! A product attribute and the values products take, e.g. {"Color", {"Black", "Navy Blue", ...}}.
struct Attribute {
  std::string_view name;
  std::vector<std::string_view> values;
};

struct ProductType {
  std::string_view noun;                    //!< title noun phrase, e.g. "Wireless Earbuds"
  std::string_view short_noun;              //!< how people say it, e.g. "earbuds"
  std::vector<std::string_view> categories; //!< the `categories` path below the top category
  double price_median;                      //!< typical price in dollars
  double price_spread;                      //!< log-normal sigma of prices across products of this type
  std::vector<std::string_view> attributes; //!< names of Category::attributes this type uses (1-4)
  //! Feature bullets; "{Name}" is replaced by the product's value of attribute Name, "{noun}" by the noun.
  std::vector<std::string_view> features;
  std::vector<std::string_view> aspects;    //!< what reviews talk about, e.g. "battery life"
  std::vector<std::string_view> uses;       //!< purposes for vague requests, e.g. "for my morning runs"
  std::vector<std::string_view> complements;//!< nouns of types often bought after this one (same category)
};

struct Category {
  std::string_view main_category;  //!< Amazon 2023 main_category, e.g. "All Electronics"
  std::string_view paper_name;     //!< the paper's name, e.g. "Electronics"
  std::string_view top_category;   //!< first element of `categories`, e.g. "Electronics"
  std::string_view interest;       //!< how a profile's "Shopping Interest" names it, e.g. "tech gadgets"
  double weight;                   //!< share of the catalogue
  std::vector<Attribute> attributes;
  std::vector<ProductType> types;
};

//! The five categories, in a fixed order.
const std::vector<Category>& categories();

//! Style words that mark a product's look and a user's taste, e.g. "Minimalist"; each appears in titles.
const std::vector<std::string_view>& styles();
//! Syllables that brand names are built from.
const std::vector<std::string_view>& brand_syllables();
//! Review aspects shared by every type: "quality", "price", "value", ...
const std::vector<std::string_view>& general_aspects();

}  // namespace pwab::data::synth
