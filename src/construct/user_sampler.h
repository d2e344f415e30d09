// src/construct/user_sampler.h: a uniform sample of active users from a stream of reviews, in bounded memory.
//
// A full category dump has tens of millions of distinct users, so counting every user's reviews exactly does
// not fit in a bounded budget. Each user instead gets a pseudo-random priority (a hash of the user id mixed
// with the seed); the sampler counts reviews only for users whose priority is below a threshold, and halves the
// set of tracked users (lowering the threshold to their median priority) whenever it reaches its capacity.
// Because the threshold only goes down, every user still tracked at the end has been tracked since their first
// review, so their counts are exact. The sample is then the users with the lowest priorities among those whose
// count passes the activity filter: exactly the bottom-k of all qualifying users by priority, i.e. a uniform
// sample without replacement, as long as at least k tracked users qualify (report says when not).
// Memory: 12 bytes per slot and fewer than 4 × capacity slots (the table keeps its load factor at most 1/2 and
// its size a power of two): 50 MB (2^22 slots) for the default capacity of 2 million users.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace pwab::construct {

//! The 64-bit key of a user id (stable across platforms and runs; the priority mixes it with the seed).
uint64_t user_key(std::string_view user_id);

class UserSampler {
 public:
  //! `capacity`: most users tracked at once (≥ 16).
  UserSampler(uint64_t seed, std::size_t capacity);

  //! Counts one review of the user with this key.
  void add(uint64_t key);

  //! The priority of a key: lower is sampled first.
  uint64_t priority(uint64_t key) const;

  struct Candidate {
    uint64_t key = 0;
    uint32_t count = 0;
  };
  //! Tracked users with min_count ≤ count ≤ max_count (max 0 = no upper bound), lowest priority first, at
  //! most `limit`.
  std::vector<Candidate> candidates(uint32_t min_count, uint32_t max_count, std::size_t limit) const;

  //! Users tracked now.
  std::size_t tracked() const { return size_; }
  //! How many times the tracked set was halved (0 = every user of the stream was counted).
  int n_halvings() const { return halvings_; }
  //! Bytes of the table.
  std::size_t memory_bytes() const { return keys_.size() * (sizeof(uint64_t) + sizeof(uint32_t)); }

 private:
  void rehash(std::size_t slots);
  void halve();

  uint64_t seed_mix_;
  std::size_t capacity_;
  uint64_t threshold_ = UINT64_MAX;  // users with priority >= threshold_ are not tracked
  std::vector<uint64_t> keys_;       // open addressing; 0 marks an empty slot (key 0 is remapped to 1)
  std::vector<uint32_t> counts_;
  std::size_t size_ = 0;
  int halvings_ = 0;
};

}  // namespace pwab::construct
