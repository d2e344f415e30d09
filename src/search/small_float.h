// src/search/small_float.h: Lucene's one-byte document-length norm (SmallFloat.intToByte4 / byte4ToInt).
//
// Lengths 0-23 are stored exactly; longer lengths as a tiny float with an implicit leading bit, three mantissa
// bits and a five-bit shift, so a stored length is the true one rounded down to 4 significant bits (e.g. 100
// decodes to 96). BM25 sees only the decoded length, which is why pwab scores with it too.
#pragma once
#include <bit>
#include <cstdint>

namespace pwab::search {

//! Lengths below this byte value are stored as themselves: 255 minus the largest code the float part needs.
inline constexpr int kNormExactBelow = 24;

namespace detail {
// A non-negative integer as a 4-significant-bit float: values below 8 as themselves, larger ones as
// (shift + 1) << 3 | the three bits after the leading one.
constexpr uint32_t int_to_float4(uint64_t value) {
  int n_bits = 64 - std::countl_zero(value);
  if (n_bits < 4) return static_cast<uint32_t>(value);
  int shift = n_bits - 4;
  auto mantissa = static_cast<uint32_t>(value >> shift) & 0x07;
  return mantissa | static_cast<uint32_t>(shift + 1) << 3;
}
constexpr uint64_t float4_to_int(uint32_t code) {
  uint64_t mantissa = code & 0x07;
  int shift = static_cast<int>(code >> 3) - 1;
  return shift < 0 ? mantissa : (mantissa | 0x08) << shift;
}
}  // namespace detail

//! The norm byte Lucene stores for a field of `length` tokens.
constexpr uint8_t length_to_norm(uint64_t length) {
  if (length < kNormExactBelow) return static_cast<uint8_t>(length);
  return static_cast<uint8_t>(kNormExactBelow + detail::int_to_float4(length - kNormExactBelow));
}

//! The length a norm byte stands for (the largest value that encodes to it, rounded down to 4 bits).
constexpr uint64_t norm_to_length(uint8_t norm) {
  if (norm < kNormExactBelow) return norm;
  return kNormExactBelow + detail::float4_to_int(norm - kNormExactBelow);
}

static_assert(norm_to_length(length_to_norm(0x7FFFFFFF)) <= 0x7FFFFFFF && length_to_norm(0x7FFFFFFF) == 255);

}  // namespace pwab::search
