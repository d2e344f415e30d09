// src/construct/build.h: `pwab build`: a PersonalWAB dataset from Amazon Reviews 2023 raw JSONL dumps.
//
//   pass 1  stream the review files of the chosen categories; count reviews per user for a bounded, uniform
//           sample of users (user_sampler.h)
//   pass 2  stream them again; keep only the sampled users' reviews
//   meta    stream the meta files; keep the sampled users' products and a seeded sample of other products of
//           the chosen categories (the catalogue filler)
//   then    per user: time order, duplicates and unknown products dropped, the 80/10/10 split, a profile, one
//           instruction per train and test behaviour; write the original layout (data/writer.h)
//
// Memory is bounded by the options (tracked users, sampled users × their reviews, catalogue size), never by the
// input size. Same inputs, same options, same seed: the same bytes. docs/construction.md has the details.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/types.h"
#include "llm/chat.h"

namespace pwab::construct {

//! The paper's five categories, as Amazon Reviews 2023 names its files.
inline constexpr std::string_view kPaperCategories[] = {"Electronics", "Home_and_Kitchen", "Grocery_and_Gourmet_Food",
                                                        "Clothing_Shoes_and_Jewelry", "Health_and_Household"};

//! Sizes of the chronological split of a user's n behaviours (paper §3.2.1): r = round-half-up(n / 10);
//! test = max(1, r) (the last ones), train = r (the ones before), history = the rest. So n = 1 is one test
//! behaviour and no history; n = 2..4 have one test behaviour, no train behaviour and n − 1 history ones.
struct SplitSizes {
  std::size_t history = 0, train = 0, test = 0;
};
SplitSizes split_sizes(std::size_t n);

//! Progress of a long phase, for a terminal line.
struct BuildProgress {
  std::string phase;          //!< "pass 1/2 (count users)", "pass 2/2 (collect reviews)", "meta", ...
  uint64_t bytes_done = 0;    //!< of the phase's input files (compressed bytes for gzip)
  uint64_t bytes_total = 0;
  uint64_t lines = 0;         //!< lines read in the phase so far
  double seconds = 0;         //!< since the phase started
};

struct BuildOptions {
  std::vector<std::filesystem::path> review_files;
  std::vector<std::filesystem::path> meta_files;
  //! Categories (file-name form, case and punctuation ignored: "Home and Kitchen" = "Home_and_Kitchen").
  //! Empty: the paper's five. {"all"}: every category given.
  std::vector<std::string> categories;
  std::size_t n_users = 1000;        //!< users sampled (fewer when fewer qualify; the report says so)
  uint32_t min_behaviours = 10;      //!< a user needs at least this many valid reviews in the chosen categories
  uint32_t max_behaviours = 500;     //!< and at most this many (0 = no limit): very heavy reviewers are left out
  uint64_t seed = 1;
  std::size_t track_users = 2'000'000;  //!< pass-1 table capacity (user_sampler.h: 12-byte slots, < 4 per user)
  std::size_t catalogue_size = 35772;   //!< cap on the catalogue: behaviour products always, fillers up to this
  std::array<double, 3> type_mix{0.32, 0.35, 0.33};  //!< search, recommend, review shares per split
  //! LLM mode when set: profiles and instructions come from this model; otherwise offline rules.
  llm::ChatModel* model = nullptr;
  std::string model_name;
  std::optional<double> temperature;  //!< sampling temperature of every request (default 0)
  std::optional<int64_t> llm_seed;    //!< sent as the request seed when set
  int llm_workers = 8;               //!< requests in flight at once
  //! Called often, one call at a time (LLM phases call it from worker threads, serialized); may be empty.
  std::function<void(const BuildProgress&)> on_progress;
};

//! A raw input file and what came of it.
struct FileReport {
  std::string path;
  std::string kind;       //!< "reviews" or "meta"
  std::string category;   //!< from the file name (file_category)
  bool used = true;       //!< false: a review file of a category not chosen (not read)
  uint64_t bytes = 0;
  uint64_t lines = 0;     //!< non-blank lines (of the last pass that read the file)
  uint64_t malformed = 0;
};

//! Everything `pwab build` reports (also written as build_report.json beside the dataset).
struct BuildReport {
  std::vector<FileReport> files;
  std::vector<std::string> categories;      //!< the chosen categories that had review files
  std::vector<std::string> missing_categories;  //!< chosen categories without a review file
  // Lines.
  uint64_t review_lines = 0, reviews_valid = 0, reviews_malformed = 0;
  uint64_t meta_lines = 0, meta_malformed = 0;
  std::map<std::string, uint64_t> malformed_by_reason;     //!< "reviews: missing timestamp" → count
  std::map<std::string, uint64_t> field_problems;          //!< optional fields dropped, e.g. "meta: store is not a string"
  std::vector<std::string> examples;                       //!< "file:line: reason (detail)", the first few
  // Users.
  std::size_t users_tracked = 0;       //!< users counted exactly in pass 1 (the sampler's table at the end)
  int sampler_halvings = 0;
  std::size_t users_qualifying = 0;    //!< of those, within [min, max] behaviours
  std::size_t users_candidates = 0;    //!< taken into pass 2 (the sample plus a margin)
  std::size_t users_below_minimum = 0; //!< candidates left with < min behaviours after cleaning
  std::size_t users_key_collisions = 0;
  std::size_t users = 0;               //!< in the dataset
  std::size_t users_requested = 0;     //!< --users
  // Behaviours of the candidates.
  uint64_t behaviours_collected = 0;   //!< reviews of candidates read in pass 2
  uint64_t duplicates_dropped = 0;     //!< same user, product and timestamp as an earlier review
  uint64_t no_metadata_dropped = 0;    //!< product without a meta record
  std::size_t behaviours = 0;          //!< in the dataset
  std::array<std::size_t, 3> behaviours_by_split{};  //!< history, train, test
  // Products.
  uint64_t meta_duplicates = 0;        //!< a parent_asin seen again in the meta files (first kept)
  std::size_t products_behaviour = 0, products_filler = 0;
  // Tasks.
  std::array<std::size_t, 3> train_by_type{}, test_by_type{};  //!< search, recommend, review
  std::size_t instruction_collisions = 0;  //!< generated texts already used (regenerated)
  // LLM mode.
  std::string mode = "offline";            //!< "offline" or "llm:<model>"
  std::size_t llm_calls = 0, llm_failures = 0, profile_fields_filled = 0, instruction_fallbacks = 0;
  // Time and memory.
  double seconds_pass1 = 0, seconds_pass2 = 0, seconds_meta = 0, seconds_generate = 0, seconds_write = 0;
  double reviews_per_second_pass1 = 0;
  //! Peak resident size of the process at the end of pass 1, pass 2, the meta pass and the whole build (the
  //! process's own baseline, e.g. its libraries, included).
  std::size_t peak_rss_pass1 = 0, peak_rss_pass2 = 0, peak_rss_meta = 0, peak_rss_bytes = 0;
};

//! Runs the whole construction and writes the dataset (and build_report.json) into `out_dir`. Throws
//! UsageError for bad options (no review file of a chosen category, an unreadable file) and pwab::Error for
//! read errors (corrupt gzip data) or when no user qualifies; malformed lines never stop it.
BuildReport build_dataset(const BuildOptions& options, const std::filesystem::path& out_dir);

//! The report as text: inputs, what was dropped and why, the dataset's figures, timings.
std::string format_build_report(const BuildReport& r);
//! The report as a JSON object.
std::string build_report_json(const BuildReport& r);

//! Normalises a category name for matching: lower-case, runs of other characters → one '_'.
std::string normalize_category(std::string_view name);

}  // namespace pwab::construct
