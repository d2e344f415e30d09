// src/data/synth.h: a deterministic synthetic PersonalWAB dataset, so everything runs with no external data.
//
// Users have latent category, product-type, brand, price and style preferences; their time-ordered purchases
// and reviews follow them (with complement-purchase sequences for the recommender to learn), their profiles
// are drawn from the distributions of the real PersonalWAB profiles and summarise their behaviour, and their
// instructions refer to target products partially, in the tone and length their profile implies. The
// generator, its policies and its figures are described in docs/data.md.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "data/dataset.h"

namespace pwab::data {

//! Bumped whenever the generator's output changes for the same options (caches of generated data key on it).
inline constexpr int kSynthVersion = 2;

enum class SynthScale { kMini, kFull };
std::string_view to_string(SynthScale s);
std::optional<SynthScale> parse_synth_scale(std::string_view s);

struct SynthOptions {
  SynthScale scale = SynthScale::kMini;
  uint64_t seed = 1;
  // Sizes: 0 takes the scale's default (full: Table 2 of the paper; mini: ~50 users, ~2k products).
  int n_users = 0;
  int n_products = 0;
  double train_tasks_per_user = 6.896;  //!< 6,896 train instructions for 1,000 users
  double test_tasks_per_user = 2.174;   //!< 2,174 test instructions for 1,000 users
  double test_share_search = 0.32;      //!< test type mix (docs/decisions.md §1.5): 32% search,
  double test_share_recommend = 0.35;   //!< 35% recommend, the rest (33%) review
};

//! Builds the dataset in memory. Same options, same dataset: the generator uses only its own seeded Rng.
Dataset synthesize(const SynthOptions& options);

//! synthesize() + write_dataset() in the original layout (products in 2 parts, histories in 3, item_ids.json).
void synthesize_to(const SynthOptions& options, const std::filesystem::path& dir);

}  // namespace pwab::data
