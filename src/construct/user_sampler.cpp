#include "construct/user_sampler.h"

#include <algorithm>

#include "core/hash.h"
#include "core/rng.h"

namespace pwab::construct {

uint64_t user_key(std::string_view user_id) {
  uint64_t k = hash_bytes(user_id);
  return k == 0 ? 1 : k;  // 0 marks empty slots
}

UserSampler::UserSampler(uint64_t seed, std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 16)) {
  uint64_t s = seed ^ 0x5A3C9E1B7D2F4608ull;
  seed_mix_ = splitmix64(s);
  rehash(64);
}

uint64_t UserSampler::priority(uint64_t key) const {
  uint64_t s = key ^ seed_mix_;
  return splitmix64(s);
}

void UserSampler::rehash(std::size_t slots) {
  std::vector<uint64_t> old_keys = std::move(keys_);
  std::vector<uint32_t> old_counts = std::move(counts_);
  keys_.assign(slots, 0);
  counts_.assign(slots, 0);
  size_ = 0;
  const std::size_t mask = slots - 1;
  for (std::size_t i = 0; i < old_keys.size(); ++i) {
    if (old_keys[i] == 0 || priority(old_keys[i]) >= threshold_) continue;
    std::size_t j = old_keys[i] & mask;
    while (keys_[j] != 0) j = (j + 1) & mask;
    keys_[j] = old_keys[i];
    counts_[j] = old_counts[i];
    ++size_;
  }
}

void UserSampler::halve() {
  // New threshold: the median priority of the tracked users; the upper half is dropped for good.
  std::vector<uint64_t> pr;
  pr.reserve(size_);
  for (uint64_t k : keys_)
    if (k) pr.push_back(priority(k));
  auto mid = pr.begin() + static_cast<std::ptrdiff_t>(pr.size() / 2);
  std::nth_element(pr.begin(), mid, pr.end());
  threshold_ = *mid;
  ++halvings_;
  rehash(keys_.size());
}

void UserSampler::add(uint64_t key) {
  if (key == 0) key = 1;
  if (priority(key) >= threshold_) return;
  std::size_t mask = keys_.size() - 1;
  std::size_t j = key & mask;
  while (keys_[j] != 0) {
    if (keys_[j] == key) {
      if (counts_[j] != UINT32_MAX) ++counts_[j];
      return;
    }
    j = (j + 1) & mask;
  }
  if (size_ + 1 > capacity_) {
    halve();
    add(key);  // the threshold moved: the key may no longer be tracked
    return;
  }
  keys_[j] = key;
  counts_[j] = 1;
  ++size_;
  if (size_ * 2 > keys_.size()) rehash(keys_.size() * 2);  // load factor ≤ 1/2
}

std::vector<UserSampler::Candidate> UserSampler::candidates(uint32_t min_count, uint32_t max_count,
                                                            std::size_t limit) const {
  std::vector<std::pair<uint64_t, Candidate>> all;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == 0) continue;
    if (counts_[i] < min_count || (max_count > 0 && counts_[i] > max_count)) continue;
    all.push_back({priority(keys_[i]), {keys_[i], counts_[i]}});
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.key < b.second.key;
  });
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < all.size() && i < limit; ++i) out.push_back(all[i].second);
  return out;
}

}  // namespace pwab::construct
