#include "core/hash.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace pwab {
namespace {
inline uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 32;
  return x;
}
}  // namespace

void Hasher::mix_block(uint64_t w) {
  h_ = (h_ ^ mix(w + 0x9E3779B97F4A7C15ull)) * 0xFF51AFD7ED558CCDull;
  h_ = (h_ << 29) | (h_ >> 35);
}

Hasher& Hasher::update(std::string_view bytes) {
  length_ += bytes.size();
  const char* p = bytes.data();
  std::size_t n = bytes.size();
  while (n > 0 && tail_len_ != 0) {
    tail_ |= static_cast<uint64_t>(static_cast<unsigned char>(*p)) << (8 * tail_len_);
    ++p, --n;
    if (++tail_len_ == 8) {
      mix_block(tail_);
      tail_ = 0;
      tail_len_ = 0;
    }
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian machines only (x86_64, aarch64)
    mix_block(w);
    p += 8, n -= 8;
  }
  while (n > 0) {
    tail_ |= static_cast<uint64_t>(static_cast<unsigned char>(*p)) << (8 * tail_len_);
    ++tail_len_;
    ++p, --n;
  }
  return *this;
}

Hasher& Hasher::update_u64(uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  return update(std::string_view(b, 8));
}

uint64_t Hasher::digest() const {
  uint64_t h = h_;
  h = (h ^ mix(tail_ ^ (static_cast<uint64_t>(tail_len_) << 56))) * 0xFF51AFD7ED558CCDull;
  return mix(h ^ length_);
}

std::string Hasher::hex() const { return to_hex(digest()); }

std::string to_hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t hash_bytes(std::string_view bytes) { return Hasher().update(bytes).digest(); }

uint64_t hash_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string());
  Hasher h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  }
  return h.digest();
}

}  // namespace pwab
