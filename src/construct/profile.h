// src/construct/profile.h: the 11-field user profile of PersonalWAB (docs/decisions.md §1.2), from a user's history.
//
// Two ways: `offline_profile` computes every field by a documented, deterministic statistic of the history
// (docs/construction.md "Offline profiles"), and `profile_prompt` / `parse_profile_reply` drive an LLM that
// reads the whole history (paper §3.2.1, Fig. 10/11; the prompt is pwab's own wording).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "llm/chat.h"

namespace pwab::construct {

//! One behaviour as the profile rules see it: the product and the user's review of it.
struct HistoryItem {
  const data::Product* product = nullptr;
  const data::Review* review = nullptr;
};

//! What the price rule compares a user's prices with: the median numeric price of each main_category in the
//! catalogue, and of the whole catalogue for categories with fewer than 3 priced products.
struct PriceReference {
  data::StringMap<double> median_by_category;
  double overall_median = 0;

  static PriceReference from_catalogue(std::span<const data::Product> products);
  //! The reference price for a product's category (0 = none known).
  double reference_for(const data::Product& p) const;
};

//! The category a product counts under for interests and diversity: the second level of its `categories`
//! path ("Headphones, Earbuds & Accessories"), else the first, else main_category, else "Other".
std::string interest_category(const data::Product& p);

//! The review aspects pwab recognises (the focus-aspect lexicon), in a fixed order; each review is matched by
//! its words (lower-cased).
const std::vector<std::string_view>& aspect_names();
//! An aspect as a sentence names it ("value for money" for "Price and value").
std::string_view aspect_short_name(int aspect);
//! Which aspects (indices into aspect_names()) a text mentions.
std::vector<int> aspects_in(std::string_view text);

//! The offline profile: every field by the rules of docs/construction.md (same history, same profile).
data::Profile offline_profile(std::span<const HistoryItem> history, const PriceReference& prices);

//! The chat request asking a model for the profile of this history (JSON object reply).
llm::ChatRequest profile_prompt(std::span<const HistoryItem> history, const std::string& model,
                                std::optional<double> temperature);

//! Reads a model's reply into the 11 fields in file order. Fields the reply lacks (or gives as non-strings)
//! are taken from `fallback`; their count is returned through `n_filled` (all 11 when the reply is not a JSON
//! object at all).
data::Profile parse_profile_reply(std::string_view reply, const data::Profile& fallback, int& n_filled);

//! The profile as "Field: value" lines (prompts and the consistency judges).
std::string profile_text(const data::Profile& p);

}  // namespace pwab::construct
