// One decoding step's attention for one (row, key/value head), on plain float arrays (see decode_attention.h).
//
// Two passes over the row's visible positions: the scores (one dot product of each key with each query of the
// group), then, after a vectorised exp, the weighted sum of the values. The hot loops are compiled for AVX-512,
// AVX2 and baseline x86-64 and picked at load time (core/multiversion.h).
#include "llama/decode_attention.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "core/multiversion.h"
#include "llama/lanes.h"

namespace pwab::llama {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

using lanes::Lanes;
using lanes::lane_sum;
using lanes::load;

//! One group at a time, so that its query (and, below, its sums) stay in registers across the keys; a second group
//! reads the keys again from the core's cache. kHead: the head width, a multiple of 8 (the presets' 32, 64, 128).
template <int kHead>
[[gnu::always_inline]] inline void scores_fixed(const float* __restrict q, const float* __restrict k, int64_t stride,
                                                const int32_t* __restrict visible, int64_t m, int64_t groups,
                                                float scale, const float* __restrict bias, float* __restrict s) {
  constexpr int kChunks = kHead / 8;
  for (int64_t g = 0; g < groups; ++g) {
    Lanes query[kChunks];
    for (int c = 0; c < kChunks; ++c) query[c] = load(q + g * kHead + 8 * c);
    float* sg = s + g * m;
    for (int64_t i = 0; i < m; ++i) {
      const float* key = k + visible[i] * stride;
      Lanes acc = query[0] * load(key);
      for (int c = 1; c < kChunks; ++c) acc += query[c] * load(key + 8 * c);
      sg[i] = lane_sum(acc) * scale + (bias ? bias[visible[i]] : 0.0f);
    }
  }
}

template <int kHead>
[[gnu::always_inline]] inline void values_fixed(const float* __restrict p, const float* __restrict v, int64_t stride,
                                                const int32_t* __restrict visible, int64_t m, int64_t groups,
                                                const float* __restrict norm, float* __restrict out) {
  constexpr int kChunks = kHead / 8;
  for (int64_t g = 0; g < groups; ++g) {
    Lanes sum[kChunks] = {};
    const float* pg = p + g * m;
    for (int64_t i = 0; i < m; ++i) {
      const float* value = v + visible[i] * stride;
      const float w = pg[i];
      for (int c = 0; c < kChunks; ++c) sum[c] += w * load(value + 8 * c);
    }
    const float inv = 1.0f / norm[g];
    for (int c = 0; c < kChunks; ++c) {
      const Lanes o = sum[c] * inv;
      for (int l = 0; l < 8; ++l) out[g * kHead + 8 * c + l] = o[l];
    }
  }
}

//! Any other head width, plainly.
void scores_any(const float* q, const float* k, int64_t stride, const int32_t* visible, int64_t m, int64_t groups,
                int64_t head, float scale, const float* bias, float* s) {
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < m; ++i) {
      const float* key = k + visible[i] * stride;
      float acc = 0.0f;
      for (int64_t d = 0; d < head; ++d) acc += q[g * head + d] * key[d];
      s[g * m + i] = acc * scale + (bias ? bias[visible[i]] : 0.0f);
    }
}

void values_any(const float* p, const float* v, int64_t stride, const int32_t* visible, int64_t m, int64_t groups,
                int64_t head, const float* norm, float* out) {
  std::fill(out, out + groups * head, 0.0f);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t d = 0; d < head; ++d) out[g * head + d] += p[g * m + i] * v[visible[i] * stride + d];
    for (int64_t d = 0; d < head; ++d) out[g * head + d] /= norm[g];
  }
}

//! s[g·m + i] = q[g]·k_{visible[i]}·scale + bias (bias left out when `bias` is null).
PWAB_MULTIVERSION void scores_of(const float* __restrict q, const float* __restrict k, int64_t stride,
                                 const int32_t* __restrict visible, int64_t m, int64_t groups, int64_t head,
                                 float scale, const float* __restrict bias, float* __restrict s) {
  switch (head) {
    case 32: return scores_fixed<32>(q, k, stride, visible, m, groups, scale, bias, s);
    case 64: return scores_fixed<64>(q, k, stride, visible, m, groups, scale, bias, s);
    case 128: return scores_fixed<128>(q, k, stride, visible, m, groups, scale, bias, s);
    default: return scores_any(q, k, stride, visible, m, groups, head, scale, bias, s);
  }
}

//! out[g] = Σ_i p[g·m + i] · v_{visible[i]} / norm[g].
PWAB_MULTIVERSION void weighted_values(const float* __restrict p, const float* __restrict v, int64_t stride,
                                       const int32_t* __restrict visible, int64_t m, int64_t groups, int64_t head,
                                       const float* __restrict norm, float* __restrict out) {
  switch (head) {
    case 32: return values_fixed<32>(p, v, stride, visible, m, groups, norm, out);
    case 64: return values_fixed<64>(p, v, stride, visible, m, groups, norm, out);
    case 128: return values_fixed<128>(p, v, stride, visible, m, groups, norm, out);
    default: return values_any(p, v, stride, visible, m, groups, head, norm, out);
  }
}

//! Cephes' expf: x = m·ln 2 + r with m an integer and |r| ≤ ln 2 / 2 (ln 2 split in two for the subtraction), a
//! degree-6 polynomial for exp(r), and 2^m put straight into the exponent bits. Rounding to the nearest integer by
//! adding and subtracting 1.5·2^23 keeps the loop free of library calls in every target.
[[gnu::always_inline]] inline void exp_into(float* __restrict x, int64_t n, float shift) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float a = x[i] - shift < -80.0f ? -80.0f : x[i] - shift;
    const float m = (a * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = (a - m * 0.693359375f) - m * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const auto bits = static_cast<uint32_t>(static_cast<int32_t>(m) + 127) << 23;
    x[i] = p * std::bit_cast<float>(bits);
  }
}

PWAB_MULTIVERSION void exp_lanes(float* __restrict x, int64_t n) { exp_into(x, n, 0.0f); }

//! Each group's row of scores s[g·m .. g·m + m) becomes exp(s − max of the row); norm[g] gets the row's sum. Max and
//! sum go through eight lanes, as dot() does.
PWAB_MULTIVERSION void softmax_numerators(float* __restrict s, int64_t groups, int64_t m, float* __restrict norm) {
  for (int64_t g = 0; g < groups; ++g) {
    float* row = s + g * m;
    float top[8];
    std::fill(top, top + 8, row[0]);
    int64_t i = 0;
    for (; i + 8 <= m; i += 8)
      for (int l = 0; l < 8; ++l) top[l] = row[i + l] > top[l] ? row[i + l] : top[l];
    float best = *std::max_element(top, top + 8);
    for (; i < m; ++i) best = row[i] > best ? row[i] : best;
    exp_into(row, m, best);
    float lane[8] = {};
    for (i = 0; i + 8 <= m; i += 8)
      for (int l = 0; l < 8; ++l) lane[l] += row[i + l];
    float sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    for (; i < m; ++i) sum += row[i];
    norm[g] = sum;
  }
}

}  // namespace

void exp_nonpositive(float* x, int64_t n) { exp_lanes(x, n); }

int64_t visible_positions(const float* bias, int64_t total, std::vector<int32_t>& visible) {
  visible.resize(static_cast<std::size_t>(total));
  int64_t m = 0;
  for (int64_t j = 0; j < total; ++j)
    if (bias[j] > kLowest) visible[static_cast<std::size_t>(m++)] = static_cast<int32_t>(j);
  if (m > 0) return m;
  // Every score is the lowest float (q·k is far below its spacing there): equal weights on every position.
  for (int64_t j = 0; j < total; ++j) visible[static_cast<std::size_t>(j)] = static_cast<int32_t>(j);
  return -total;
}

void decode_attention_head(const float* q, const float* k, const float* v, const float* bias, const int32_t* visible,
                           int64_t m, const DecodeAttentionHead& shape, float* out) {
  thread_local std::vector<float> scores;  // reused by each thread from call to call
  const float* used_bias = m > 0 ? bias : nullptr;
  m = m > 0 ? m : -m;
  const int64_t groups = shape.groups, head = shape.head;
  scores.resize(static_cast<std::size_t>(groups * m + groups));
  float* s = scores.data();
  float* norm = s + groups * m;
  scores_of(q, k, shape.key_stride, visible, m, groups, head, shape.scale, used_bias, s);
  softmax_numerators(s, groups, m, norm);
  weighted_values(s, v, shape.value_stride, visible, m, groups, head, norm, out);
}

}  // namespace pwab::llama
