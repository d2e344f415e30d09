// src/core/rng.h: a small, explicitly seeded random generator with portable distributions.
//
// std:: distributions differ between standard libraries, so generated data would not be byte-identical
// everywhere. This generator (xoshiro256**, seeded through splitmix64) and its distributions are fully
// specified here, so the same seed gives the same bytes on every platform.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

namespace pwab {

//! splitmix64 step: also a good 64-bit mixer for deriving seeds from (seed, stream, index).
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

//! Mixes several values into one seed: derive_seed(run_seed, task_id, trial).
inline uint64_t derive_seed(uint64_t a, uint64_t b, uint64_t c = 0) {
  uint64_t s = a;
  uint64_t x = splitmix64(s);
  s = x ^ b;
  x = splitmix64(s);
  s = x ^ c;
  return splitmix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) {
    uint64_t s = seed;
    for (auto& w : state_) w = splitmix64(s);
  }

  uint64_t next_u64() {
    uint64_t result = rotl(state_[1] * 5, 7) * 9;
    uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  //! Uniform in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  //! Uniform integer in [0, n); n > 0. Lemire's multiply-shift with rejection: unbiased.
  uint64_t below(uint64_t n) {
    uint64_t x = next_u64();
    __uint128_t m = static_cast<__uint128_t>(x) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      uint64_t threshold = -n % n;
      while (low < threshold) {
        x = next_u64();
        m = static_cast<__uint128_t>(x) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  //! Uniform integer in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo + 1))); }
  bool chance(double p) { return uniform() < p; }
  //! Standard normal (Box-Muller, one value per call for simplicity).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  double normal(double mean, double sd) { return mean + sd * normal(); }
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }
  //! Gamma(shape, scale) by Marsaglia-Tsang (shape < 1 boosted).
  double gamma(double shape, double scale) {
    if (shape < 1.0) return gamma(shape + 1.0, scale) * std::pow(uniform() + 1e-300, 1.0 / shape);
    double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = normal(), v = 1.0 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      double u = uniform();
      if (u < 1 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v * scale;
    }
  }
  //! Index drawn with probability proportional to weights (non-negative, not all zero).
  std::size_t weighted(std::span<const double> weights) {
    double total = 0;
    for (double w : weights) total += w;
    double r = uniform() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      r -= weights[i];
      if (r < 0) return i;
    }
    return weights.size() - 1;
  }
  template <class T>
  const T& pick(std::span<const T> items) {
    return items[below(items.size())];
  }
  template <class T, std::size_t N>
  const T& pick(const T (&items)[N]) {
    return items[below(N)];
  }
  //! Fisher-Yates shuffle.
  template <class Vec>
  void shuffle(Vec& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace pwab
