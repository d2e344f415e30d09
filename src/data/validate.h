// src/data/validate.h: consistency checks and the statistics of paper Table 2 (`pwab data validate`).
#pragma once
#include <array>
#include <cstddef>
#include <filesystem>
#include <string>

#include "core/diagnostics.h"
#include "data/dataset.h"

namespace pwab::data {

//! Statistics of one task split. "Behaviour length" of a user is the number of behaviours up to and including
//! the split (train: history + train behaviours; test: all of them), averaged over the users with tasks in it.
struct SplitStats {
  std::size_t n_users = 0;               //!< users with at least one task in the split
  double avg_behaviour_length = 0;
  double avg_behaviour_tokens = 0;       //!< tokens of those behaviours (see behaviour_text), per user
  std::size_t n_instructions = 0;
  std::array<std::size_t, 3> n_by_type{};       //!< indexed by TaskType
  double avg_instruction_tokens = 0;
  std::array<double, 3> avg_tokens_by_type{};
};

struct DatasetStats {
  std::size_t n_users = 0;
  std::size_t n_profiles = 0;
  std::size_t n_behaviours = 0;
  std::size_t n_products = 0;
  std::size_t n_products_in_behaviours = 0;  //!< distinct products that some user bought
  std::size_t n_item_ids = 0;
  double avg_profile_tokens = 0;             //!< tokens of the profile rendered as "Field: value" lines
  double avg_product_tokens = 0;             //!< tokens of every product field (see product_text)
  SplitStats train, test;
};

//! Every text field of a product joined by newlines: what "product tokens" count.
std::string product_text(const Product& p);
//! What "behaviour tokens" count: product title, category, store and price, and the user's rating and review.
std::string behaviour_text(const Dataset& ds, const Behaviour& b);

DatasetStats compute_stats(const Dataset& ds);

//! Checks that need the whole dataset (the loader already checked schemas and references):
//! history timestamps in order, splits in chronological order, each task's target behaviour present in the
//! user's history with the task's timestamp and split, and the catalogue covered by item_ids.json.
void check_consistency(const Dataset& ds, Diagnostics& diag);

struct ValidationReport {
  std::filesystem::path dir;
  DatasetStats stats;
  Diagnostics diag{5};
  double load_seconds = 0;
  bool loaded = false;  //!< false when the directory could not be read at all
};

//! Loads `dir` collecting every problem, runs check_consistency and computes the statistics (the two side by side).
//! With `keep`, the loaded dataset is moved there rather than freed: a command that exits next can leave the
//! million small strings to the OS, which takes them back at once (freeing them was ~15% of `data validate`).
ValidationReport validate_dataset(const std::filesystem::path& dir, unsigned threads = 0, Dataset* keep = nullptr);

//! The report as text in the layout of paper Table 2, then the problems found.
std::string format_report(const ValidationReport& r);
//! The report as a JSON object (statistics and problem counts).
std::string format_report_json(const ValidationReport& r);

}  // namespace pwab::data
