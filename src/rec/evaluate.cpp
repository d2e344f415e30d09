// Held-out evaluation of a recommender beside most-popular and last-item successors (evaluate.h).
#include "rec/evaluate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace pwab::rec {

namespace {

//! Orders product ids by count, most first; ties keep catalogue order (a stable sort of ascending ids).
std::vector<data::ProductId> by_count(const std::unordered_map<data::ProductId, int>& counts, std::size_t k) {
  std::vector<std::pair<data::ProductId, int>> items(counts.begin(), counts.end());
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<data::ProductId> out;
  for (std::size_t i = 0; i < items.size() && i < k; ++i) out.push_back(items[i].first);
  return out;
}

void add(RankerScore& s, std::unordered_set<std::string>& seen, const std::vector<std::string>& top,
         const std::string& target) {
  for (std::size_t r = 0; r < top.size(); ++r) {
    seen.insert(top[r]);
    if (top[r] == target) {
      s.hr += 1;
      s.ndcg += 1.0 / std::log2(static_cast<double>(r) + 2.0);
    }
  }
}

void finish(RankerScore& s, const std::unordered_set<std::string>& seen, std::size_t n) {
  s.hr /= static_cast<double>(n);
  s.ndcg /= static_cast<double>(n);
  s.distinct_items = seen.size();
}

}  // namespace

std::vector<HeldOutCase> test_cases(const data::Dataset& ds) {
  std::vector<HeldOutCase> out;
  for (const auto& user : ds.users())
    for (std::size_t i = 1; i < user.behaviours.size(); ++i) {
      if (user.behaviours[i].split != data::Split::kTest) continue;
      HeldOutCase c;
      c.before.reserve(i);
      for (std::size_t j = 0; j < i; ++j) c.before.push_back(ds.product(user.behaviours[j].product).parent_asin);
      c.target = ds.product(user.behaviours[i].product).parent_asin;
      out.push_back(std::move(c));
    }
  return out;
}

std::vector<std::string> most_popular(const data::Dataset& ds, int k) {
  std::unordered_map<data::ProductId, int> counts;
  for (const auto& user : ds.users())
    for (const auto& b : user.behaviours)
      if (b.split != data::Split::kTest) ++counts[b.product];
  std::vector<std::string> out;
  for (auto id : by_count(counts, static_cast<std::size_t>(std::max(k, 0)))) out.push_back(ds.product(id).parent_asin);
  return out;
}

SuccessorBaseline::SuccessorBaseline(const data::Dataset& ds, int k)
    : ds_(&ds), k_(k), successors_(ds.products().size()), popular_(most_popular(ds, k)) {
  std::vector<std::unordered_map<data::ProductId, int>> counts(ds.products().size());
  for (const auto& user : ds.users()) {
    const data::Behaviour* prev = nullptr;
    for (const auto& b : user.behaviours) {
      if (b.split == data::Split::kTest) continue;
      if (prev) ++counts[prev->product][b.product];
      prev = &b;
    }
  }
  for (std::size_t p = 0; p < counts.size(); ++p)
    if (!counts[p].empty()) successors_[p] = by_count(counts[p], static_cast<std::size_t>(k));
}

std::vector<std::string> SuccessorBaseline::recommend(const std::vector<std::string>& before) const {
  std::vector<std::string> out;
  // The last ASIN the dataset knows, as the recommender drops unknown ones.
  for (auto it = before.rbegin(); it != before.rend(); ++it)
    if (auto id = ds_->find_product(*it)) {
      for (auto s : successors_[*id]) out.push_back(ds_->product(s).parent_asin);
      break;
    }
  for (const auto& p : popular_) {
    if (static_cast<int>(out.size()) >= k_) break;
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

HeldOutReport evaluate_held_out(const Recommender& model, const data::Dataset& ds, int k) {
  if (k < 1) throw Error("evaluate_held_out: k must be at least 1, got " + std::to_string(k));
  auto cases = test_cases(ds);
  if (cases.empty())
    throw Error("evaluate_held_out: the dataset has no test behaviour with a behaviour before it, so nothing is held out");
  HeldOutReport r;
  r.k = k;
  r.cases = cases.size();
  const auto popular = most_popular(ds, k);
  const SuccessorBaseline successors(ds, k);
  std::unordered_set<std::string> seen_model, seen_popular, seen_successors;
  for (const auto& c : cases) {
    std::vector<std::string> top;
    for (auto& rec : model.recommend(c.before, k)) top.push_back(std::move(rec.asin));
    add(r.model, seen_model, top, c.target);
    add(r.popular, seen_popular, popular, c.target);
    add(r.successors, seen_successors, successors.recommend(c.before), c.target);
  }
  finish(r.model, seen_model, cases.size());
  finish(r.popular, seen_popular, cases.size());
  finish(r.successors, seen_successors, cases.size());
  return r;
}

}  // namespace pwab::rec
