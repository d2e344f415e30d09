// src/data/loader.h: reads a dataset in the original PersonalWAB layout (docs/decisions.md §1).
//
// A dataset directory holds
//   user_instructions.json                          {"train": [Task...], "test": [Task...]}
//   user_profiles.json                              {user_id: {"user_profile": {11 string fields}}}
//   user_history_part_*.json | user_history.json    {user_id: [{product_info, review, split}...]}
//   all_products_part_*.json | all_products.json    {parent_asin: Product}
//   item_ids.json (optional)                        {parent_asin: int}
// Files are parsed with simdjson, several at a time. Every problem is reported as a Diagnostic naming the
// file, the record and the JSON path; records with errors are skipped, so one bad record does not hide others.
#pragma once
#include <filesystem>
#include <optional>
#include <vector>

#include "core/diagnostics.h"
#include "data/dataset.h"

namespace pwab::data {

//! The files of a dataset directory, found by name.
struct DatasetFiles {
  std::vector<std::filesystem::path> products;  //!< parts in numeric order, or the one merged file
  std::vector<std::filesystem::path> history;
  std::filesystem::path instructions;
  std::filesystem::path profiles;
  std::optional<std::filesystem::path> item_ids;
};

//! Finds the files; throws DataError naming what is missing or ambiguous.
DatasetFiles find_dataset_files(const std::filesystem::path& dir);

struct LoadOptions {
  unsigned threads = 0;  //!< files parsed at once; 0 = hardware threads
};

//! Loads everything it can, reporting every problem into `diag`. Throws DataError only when the directory
//! itself is unusable (missing files).
Dataset load_dataset(const std::filesystem::path& dir, Diagnostics& diag, const LoadOptions& options = {});

//! Loads and throws DataError with the first error (and the error count) if there was any.
Dataset load_dataset(const std::filesystem::path& dir, const LoadOptions& options = {});

//! Parses the records of one JSON text as if it were the file `file_name` of a dataset (its kind is taken
//! from the name). For tests and the fuzzer: the same code path as load_dataset, on memory.
void parse_dataset_file_for_test(std::string_view file_name, std::string_view json, Diagnostics& diag);

}  // namespace pwab::data
