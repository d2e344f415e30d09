// src/core/hash.h: fast, stable 64-bit hashing for fingerprints (datasets, caches, LLM requests).
// Not cryptographic; stable across platforms and versions (changing it invalidates every cache).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace pwab {

//! Incremental hash: feed bytes in any chunking, the result only depends on the concatenation.
class Hasher {
 public:
  Hasher& update(std::string_view bytes);
  Hasher& update_u64(uint64_t v);
  uint64_t digest() const;
  //! 16 lower-case hex digits of digest().
  std::string hex() const;

 private:
  void mix_block(uint64_t w);
  uint64_t h_ = 0x6A09E667F3BCC908ull;
  uint64_t length_ = 0;
  uint64_t tail_ = 0;
  int tail_len_ = 0;
};

uint64_t hash_bytes(std::string_view bytes);
//! Hash of a file's bytes (streamed); throws pwab::Error if it cannot be read.
uint64_t hash_file(const std::filesystem::path& path);
std::string to_hex(uint64_t v);

}  // namespace pwab
