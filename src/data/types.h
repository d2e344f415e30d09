// src/data/types.h: the PersonalWAB records: products, users (profile + behaviours) and tasks.
//
// Field names follow the original JSON files (docs/decisions.md §1). Numbers that the LLM later sees through Python's
// str() keep their JSON type (py::Scalar), so 5 and 5.0 stay distinguishable.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/py_format.h"

namespace pwab::data {

//! Which part of a user's time-ordered behaviours a record belongs to (chronological 80/10/10 split).
enum class Split : uint8_t { kHistory, kTrain, kTest };
std::string_view to_string(Split s);
//! Parses "history" | "train" | "test"; nullopt otherwise.
std::optional<Split> parse_split(std::string_view s);

//! The three instruction types, named as in user_instructions.json.
enum class TaskType : uint8_t { kSearch, kRecommend, kReview };
inline constexpr TaskType kAllTaskTypes[] = {TaskType::kSearch, TaskType::kRecommend, TaskType::kReview};
std::string_view to_string(TaskType t);
std::optional<TaskType> parse_task_type(std::string_view s);

//! Index of a product in Dataset::products().
using ProductId = uint32_t;
//! Index of a user in Dataset::users().
using UserId = uint32_t;

//! A catalogue entry (all_products_*.json value; Amazon Reviews 2023 meta fields).
struct Product {
  std::string parent_asin;
  std::string main_category;
  std::string title;
  py::Scalar average_rating;           //!< float (int in some files), None when missing
  py::Scalar rating_number;            //!< int, None when missing
  std::vector<std::string> features;
  std::vector<std::string> description;
  py::Scalar price;                    //!< float, int, str or None: the data varies (docs/decisions.md §1.4)
  std::optional<std::string> store;    //!< null in some records
  std::vector<std::string> categories;
  //! The `details` value as JSON text with its key order kept: an object (usually) or a string.
  std::string details_json = "{}";

  bool operator==(const Product&) const = default;
};

//! The user's own review of a product (also the ground truth of a task).
struct Review {
  py::Scalar rating;        //!< e.g. 5.0
  std::string title;
  std::string text;
  std::string parent_asin;  //!< the reviewed product
  int64_t timestamp = 0;    //!< Unix epoch milliseconds

  bool operator==(const Review&) const = default;
};

//! One web behaviour: a product the user bought and reviewed.
struct Behaviour {
  ProductId product = 0;
  Review review;
  Split split = Split::kHistory;

  bool operator==(const Behaviour&) const = default;
};

//! The 11 profile fields, in their file order (docs/decisions.md §1.2).
inline constexpr std::string_view kProfileFields[] = {
    "Gender", "Age", "Occupation", "Price Sensitivity", "Shopping Interest", "Brand Preference",
    "Diversity Preference", "Interaction Complexity", "Tone and Style", "Item Reference", "Focus Aspect"};

//! A generated user profile: string fields in file order.
struct Profile {
  std::vector<std::pair<std::string, std::string>> fields;

  //! The value of a field, or "" if absent.
  std::string_view get(std::string_view name) const;
  bool operator==(const Profile&) const = default;
};

struct User {
  std::string id;                    //!< 28-character Amazon user id
  Profile profile;
  bool has_profile = false;
  std::vector<Behaviour> behaviours;  //!< every behaviour, in stored (time) order, all splits

  bool operator==(const User&) const = default;
};

//! One instruction of user_instructions.json.
struct Task {
  Split split = Split::kTest;  //!< train or test
  uint32_t index = 0;          //!< position in its split's list
  UserId user = 0;
  std::string instruction;     //!< the `task` field: the natural-language instruction
  TaskType type = TaskType::kSearch;
  int64_t timestamp = 0;       //!< time of the target behaviour; history strictly before it is visible
  ProductId target_product = 0;
  Review target_review;

  bool operator==(const Task&) const = default;
};

//! "<split>/<index>": how results records, ledgers and comparisons name a task across runs.
std::string task_key(const Task& task);

}  // namespace pwab::data
