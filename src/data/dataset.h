// src/data/dataset.h: a loaded PersonalWAB dataset and the joins the benchmark needs.
//
// Products, users and tasks live in flat vectors addressed by small integer ids; string keys (parent_asin,
// user id) resolve through hash maps. A Dataset is immutable once built and safe to share between threads.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/types.h"

namespace pwab::data {

//! Transparent string hash so maps keyed by std::string can be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class Dataset {
 public:
  Dataset() = default;

  //! Adds a product; returns its id. A parent_asin already present is an error (returns nullopt).
  std::optional<ProductId> add_product(Product p);
  //! Adds a user (profile and/or behaviours); returns its id. A duplicate id returns nullopt.
  std::optional<UserId> add_user(User u);
  void add_task(Task t);
  void set_item_ids(std::vector<std::pair<std::string, int64_t>> ids) { item_ids_ = std::move(ids); }
  void set_source(std::filesystem::path dir) { source_ = std::move(dir); }
  //! Mutable access for builders (loader, generator); not for consumers.
  User& mutable_user(UserId id) { return users_[id]; }
  //! Same, for a product; its parent_asin must not change (the index keys on it).
  Product& mutable_product(ProductId id) { return products_[id]; }
  //! Room for `n` products, so a loader adds them without moving the ones already added.
  void reserve_products(std::size_t n) {
    products_.reserve(n);
    product_index_.reserve(n);
  }

  const std::vector<Product>& products() const { return products_; }
  const Product& product(ProductId id) const { return products_[id]; }
  std::optional<ProductId> find_product(std::string_view parent_asin) const;

  const std::vector<User>& users() const { return users_; }
  const User& user(UserId id) const { return users_[id]; }
  std::optional<UserId> find_user(std::string_view user_id) const;

  //! The tasks of one split (train or test) in file order; Task::index is the position here.
  const std::vector<Task>& tasks(Split split) const { return split == Split::kTrain ? train_ : test_; }
  std::size_t n_tasks() const { return train_.size() + test_.size(); }

  //! The SASRec item-id map (item_ids.json) in file order; empty if the file was absent.
  const std::vector<std::pair<std::string, int64_t>>& item_ids() const { return item_ids_; }

  //! Behaviours of the task's user strictly earlier than the task (review.timestamp < task.timestamp), all
  //! splits, stored order kept (docs/decisions.md §1.9). The target behaviour itself is never included.
  std::vector<const Behaviour*> visible_history(const Task& task) const;
  //! Same, for a user at a given time.
  std::vector<const Behaviour*> visible_history(UserId user, int64_t before_timestamp) const;

  //! Directory the dataset was loaded from (empty for in-memory datasets).
  const std::filesystem::path& source() const { return source_; }

 private:
  std::vector<Product> products_;
  StringMap<ProductId> product_index_;
  std::vector<User> users_;
  StringMap<UserId> user_index_;
  std::vector<Task> train_, test_;
  std::vector<std::pair<std::string, int64_t>> item_ids_;
  std::filesystem::path source_;
};

}  // namespace pwab::data
