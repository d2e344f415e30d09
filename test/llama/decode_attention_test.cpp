// decode_attention.h's kernel against a double-precision softmax attention written out plainly, on random
// queries, keys and values with blocked prefixes, holes and strided rows; and its exp against std::exp.
#include "llama/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace pwab::llama {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

//! The attention as the fused kernels define it, in double: every position scored, bias added, softmax, weights.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& bias, const DecodeAttentionHead& s) {
  std::vector<double> out(static_cast<std::size_t>(s.groups * s.head), 0.0);
  for (int64_t g = 0; g < s.groups; ++g) {
    std::vector<double> score(static_cast<std::size_t>(s.total));
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < s.total; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < s.head; ++d) dot += double(q[g * s.head + d]) * k[j * s.key_stride + d];
      // In float, q·k·scale + lowest is the lowest float itself: what the fused kernels compute for a blocked key.
      score[j] = bias[j] <= kLowest ? double(kLowest) : dot * s.scale + bias[j];
      top = std::max(top, score[j]);
    }
    double sum = 0;
    for (auto& x : score) sum += (x = std::exp(x - top));
    for (int64_t j = 0; j < s.total; ++j)
      for (int64_t d = 0; d < s.head; ++d) out[g * s.head + d] += score[j] / sum * v[j * s.value_stride + d];
  }
  return out;
}

TEST(DecodeAttention, EqualsSoftmaxAttentionOverTheVisiblePositions) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Case {
    int64_t groups, head, total, padding, holes;
  };
  // Head widths of the presets (32, 64, 128) and an odd one; grouped and plain heads; left padding and holes.
  for (const Case c : {Case{2, 32, 230, 100, 0}, Case{1, 64, 17, 0, 3}, Case{4, 128, 300, 37, 5}, Case{3, 5, 9, 2, 1},
                       Case{2, 32, 1, 0, 0}}) {
    DecodeAttentionHead s;
    s.groups = c.groups;
    s.head = c.head;
    s.total = c.total;
    s.key_stride = c.head + 3;  // rows of a wider buffer: keys and values need not be packed
    s.value_stride = c.head + 11;
    s.scale = 1.0f / std::sqrt(float(c.head));
    std::vector<float> q(c.groups * c.head), k(c.total * s.key_stride), v(c.total * s.value_stride);
    for (auto* t : {&q, &k, &v})
      for (float& x : *t) x = 2.0f * normal(gen);
    std::vector<float> bias(c.total, 0.0f);
    for (int64_t j = 0; j < c.padding; ++j) bias[j] = kLowest;
    for (int64_t h = 0; h < c.holes; ++h) bias[c.padding + (h * 7) % (c.total - c.padding)] = kLowest;
    bias[c.total - 1] = 0.0f;  // the new position always sees itself
    std::vector<float> out(c.groups * c.head, std::nanf(""));
    std::vector<int32_t> visible;
    const int64_t m = visible_positions(bias.data(), c.total, visible);
    EXPECT_EQ(m, std::count(bias.begin(), bias.end(), 0.0f));
    decode_attention_head(q.data(), k.data(), v.data(), bias.data(), visible.data(), m, s, out.data());
    const auto want = reference(q, k, v, bias, s);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], 2e-5 * (1 + std::abs(want[i]))) << "head " << c.head << " total " << c.total << " at " << i;
  }
}

TEST(DecodeAttention, ARowWithEveryPositionBlockedAveragesItsValues) {
  DecodeAttentionHead s;
  s.groups = 2;
  s.head = 4;
  s.total = 3;
  s.key_stride = s.value_stride = 4;
  std::vector<float> q{1, 2, 3, 4, -1, 0, 1, 0}, k(12, 0.5f), v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> bias(3, kLowest), out(8);
  std::vector<int32_t> visible;
  const int64_t m = visible_positions(bias.data(), 3, visible);
  EXPECT_EQ(m, -3);
  decode_attention_head(q.data(), k.data(), v.data(), bias.data(), visible.data(), m, s, out.data());
  for (int g = 0; g < 2; ++g)
    for (int d = 0; d < 4; ++d) EXPECT_NEAR(out[g * 4 + d], (v[d] + v[4 + d] + v[8 + d]) / 3.0, 1e-6);
}

TEST(DecodeAttention, ExpIsWithinTwoUlpOfTheLibrarysDownToMinus80) {
  std::vector<float> x;
  for (float t = -80.0f; t <= 0.0f; t += 0.00137f) x.push_back(t);
  x.push_back(0.0f);
  x.push_back(-1e-7f);
  auto y = x;
  exp_nonpositive(y.data(), static_cast<int64_t>(y.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i]);
    ASSERT_LE(std::abs(y[i] - want), 2.5f * (std::nextafter(want, 1.0f) - want)) << "exp(" << x[i] << ")";
  }
  std::vector<float> far{-81.0f, -1000.0f, kLowest};
  exp_nonpositive(far.data(), 3);
  for (float f : far) EXPECT_NEAR(f, std::exp(-80.0f), 1e-40) << "clamped below -80";
}

}  // namespace
}  // namespace pwab::llama
