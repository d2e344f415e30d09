#include "data/dataset.h"

namespace pwab::data {

std::optional<ProductId> Dataset::add_product(Product p) {
  auto id = static_cast<ProductId>(products_.size());
  if (!product_index_.emplace(p.parent_asin, id).second) return std::nullopt;
  products_.push_back(std::move(p));
  return id;
}

std::optional<UserId> Dataset::add_user(User u) {
  auto id = static_cast<UserId>(users_.size());
  if (!user_index_.emplace(u.id, id).second) return std::nullopt;
  users_.push_back(std::move(u));
  return id;
}

void Dataset::add_task(Task t) {
  auto& list = t.split == Split::kTrain ? train_ : test_;
  t.index = static_cast<uint32_t>(list.size());
  list.push_back(std::move(t));
}

std::optional<ProductId> Dataset::find_product(std::string_view parent_asin) const {
  auto it = product_index_.find(parent_asin);
  if (it == product_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<UserId> Dataset::find_user(std::string_view user_id) const {
  auto it = user_index_.find(user_id);
  if (it == user_index_.end()) return std::nullopt;
  return it->second;
}

std::vector<const Behaviour*> Dataset::visible_history(UserId user, int64_t before_timestamp) const {
  std::vector<const Behaviour*> out;
  for (const auto& b : users_[user].behaviours)
    if (b.review.timestamp < before_timestamp) out.push_back(&b);
  return out;
}

std::vector<const Behaviour*> Dataset::visible_history(const Task& task) const {
  return visible_history(task.user, task.timestamp);
}

}  // namespace pwab::data
