// src/llama/lanes.h: eight floats as one value (GCC's vector extension) for the decoding kernels' hot loops
// (decode_attention.cpp, decode_step.cpp): one ymm register in the AVX-512 and AVX2 clones of core/multiversion.h,
// two xmm ones in the baseline. Written out because GCC's own vectoriser, left with plain loops, turned their dot
// products into one serial chain of adds, and once interchanged a value loop into scalar code over the keys
// (docs/performance.md, "Reading only the cache a row can see").
#pragma once

// GCC notes that passing such a value changes the baseline's calling convention; these helpers are inlined into
// internal functions, so no call crosses that boundary.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace pwab::llama::lanes {

typedef float Lanes __attribute__((vector_size(32)));
typedef float LanesUnaligned __attribute__((vector_size(32), aligned(4)));

[[gnu::always_inline]] inline Lanes load(const float* p) { return *reinterpret_cast<const LanesUnaligned*>(p); }

//! The sum of the eight lanes, by halves.
[[gnu::always_inline]] inline float lane_sum(Lanes x) {
  x += __builtin_shufflevector(x, x, 4, 5, 6, 7, 0, 1, 2, 3);
  x += __builtin_shufflevector(x, x, 2, 3, 0, 1, 6, 7, 4, 5);
  x += __builtin_shufflevector(x, x, 1, 0, 3, 2, 5, 4, 7, 6);
  return x[0];
}

}  // namespace pwab::llama::lanes
