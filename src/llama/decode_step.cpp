// The decoding step's row kernels (see decode_step.h). Plain loops the compiler vectorises, except the dot products,
// whose eight lanes are spelled out (llama/lanes.h); the hot ones are compiled for AVX-512, AVX2 and baseline x86-64
// (core/multiversion.h).
#include "llama/decode_step.h"

#include <algorithm>
#include <cmath>

#include "core/multiversion.h"
#include "llama/decode_attention.h"
#include "llama/lanes.h"

namespace pwab::llama {
namespace {

using lanes::Lanes;
using lanes::lane_sum;
using lanes::load;

//! a · b over n floats: two sets of eight lanes (two chains of adds in flight), then the tail.
[[gnu::always_inline]] inline float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  Lanes s0 = {}, s1 = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 += load(a + i) * load(b + i);
    s1 += load(a + i + 8) * load(b + i + 8);
  }
  if (i + 8 <= n) {
    s0 += load(a + i) * load(b + i);
    i += 8;
  }
  float sum = lane_sum(s0 + s1);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

PWAB_MULTIVERSION void product_range(const float* __restrict x, int64_t rows, int64_t in, const float* __restrict w,
                                     int64_t out, int64_t first, int64_t last, float* __restrict y) {
  for (int64_t o = first; o < last; ++o) {
    const float* row = w + o * in;
    for (int64_t r = 0; r < rows; ++r) y[r * out + o] = dot(x + r * in, row, in);
  }
}

PWAB_MULTIVERSION void norm_rows(const float* __restrict x, const float* __restrict weight, int64_t rows,
                                 int64_t width, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    const float inv = 1.0f / std::sqrt(dot(xr, xr, width) / static_cast<float>(width) + eps);
    float* o = out + r * width;
    for (int64_t i = 0; i < width; ++i) o[i] = weight[i] * (xr[i] * inv);
  }
}

//! silu(g) = g / (1 + exp(−g)), PyTorch's formula; exp is taken of −|g| only (decode_attention.h's exp, made for
//! x ≤ 0), and for g < 0 the same ratio reads g·e / (e + 1) with e = exp(g). Branch-free, so that it vectorises.
PWAB_MULTIVERSION void swiglu_lanes(float* __restrict gate, const float* __restrict up, int64_t n) {
  constexpr int64_t kChunk = 256;
  float e[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t m = std::min(kChunk, n - start);
    float* g = gate + start;
    const float* u = up + start;
    for (int64_t i = 0; i < m; ++i) e[i] = g[i] >= 0.0f ? -g[i] : g[i];
    exp_nonpositive(e, m);
    for (int64_t i = 0; i < m; ++i) {
      const float top = g[i] >= 0.0f ? g[i] : g[i] * e[i];
      g[i] = top / (1.0f + e[i]) * u[i];
    }
  }
}

PWAB_MULTIVERSION void add_lanes(float* __restrict x, const float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

void rms_norm_rows(const float* x, const float* weight, int64_t rows, int64_t width, float eps, float* out) {
  norm_rows(x, weight, rows, width, eps, out);
}

void rotate_heads(float* x, int64_t heads, int64_t width, const float* cos, const float* sin) {
  const int64_t half = width / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float* a = x + h * width;
    float* b = a + half;
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = a[i], x2 = b[i];
      const float c1 = x1 * cos[i], s2 = x2 * sin[i], c2 = x2 * cos[i], s1 = x1 * sin[i];
      a[i] = c1 - s2;
      b[i] = c2 + s1;
    }
  }
}

void swiglu(float* gate, const float* up, int64_t n) { swiglu_lanes(gate, up, n); }

void add_into(float* x, const float* y, int64_t n) { add_lanes(x, y, n); }

void rows_times_weight(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, int64_t first,
                       int64_t last, float* y) {
  product_range(x, rows, in, w, out, first, last, y);
}

}  // namespace pwab::llama
