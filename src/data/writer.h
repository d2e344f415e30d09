// src/data/writer.h: writes a Dataset in the original PersonalWAB layout (the inverse of loader.h).
#pragma once
#include <filesystem>

#include "data/dataset.h"

namespace pwab::data {

struct WriteOptions {
  int product_parts = 2;  //!< all_products_part_1..N.json (1 = a single all_products.json)
  int history_parts = 3;  //!< user_history_part_1..N.json (1 = a single user_history.json)
  bool item_ids = true;   //!< write item_ids.json when the dataset has an item-id map
};

//! Writes every file of the dataset into `dir` (created if needed); files are written atomically.
void write_dataset(const Dataset& ds, const std::filesystem::path& dir, const WriteOptions& options = {});

//! One product as the JSON object the original files hold (field order of docs/decisions.md §1.4).
std::string product_json(const Product& p);

}  // namespace pwab::data
