#include "embed/embedder.h"

#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "core/hash.h"

namespace pwab::embed {

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

double Embedder::similarity(std::string_view a, std::string_view b) const {
  auto v = embed({std::string(a), std::string(b)});
  return dot(v[0], v[1]);
}

std::string HashingEmbedder::name() const { return "hashing-v1/" + std::to_string(dim_); }

namespace {

// Lower-cased ASCII words (any non-ASCII byte counts as a letter, so UTF-8 words stay whole).
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  for (unsigned char c : text) {
    bool word = c >= 0x80 || std::isalnum(c);
    if (word) {
      cur += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (!cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

}  // namespace

std::vector<float> HashingEmbedder::embed_one(std::string_view text) const {
  // Count features first so repeated words get sub-linear weight.
  std::unordered_map<uint64_t, double> counts;
  auto words = words_of(text);
  for (std::size_t i = 0; i < words.size(); ++i) {
    counts[hash_bytes("w:" + words[i])] += 1.0;
    if (i + 1 < words.size()) counts[hash_bytes("b:" + words[i] + " " + words[i + 1])] += 0.7;
    std::string padded = "<" + words[i] + ">";
    for (std::size_t k = 0; k + 3 <= padded.size(); ++k) counts[hash_bytes("c:" + padded.substr(k, 3))] += 0.25;
  }
  std::vector<float> v(dim_, 0.0f);
  for (const auto& [h, n] : counts) {
    double weight = 1.0 + std::log(1.0 + n);
    std::size_t bucket = static_cast<std::size_t>(h % dim_);
    double sign = (h >> 63) ? -1.0 : 1.0;  // signed hashing keeps collisions unbiased
    v[bucket] += static_cast<float>(sign * weight);
  }
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm > 0) {
    float inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (float& x : v) x *= inv;
  }
  return v;
}

std::vector<std::vector<float>> HashingEmbedder::embed(const std::vector<std::string>& texts) const {
  std::vector<std::vector<float>> out;
  out.reserve(texts.size());
  for (const auto& t : texts) out.push_back(embed_one(t));
  return out;
}

std::unique_ptr<Embedder> make_embedder(std::string_view spec) {
  if (spec == "hashing") return std::make_unique<HashingEmbedder>();
  if (spec.starts_with("hashing:")) {
    std::string dim(spec.substr(8));
    char* end = nullptr;
    long n = std::strtol(dim.c_str(), &end, 10);
    if (end && *end == '\0' && n >= 8 && n <= 65536) return std::make_unique<HashingEmbedder>(static_cast<std::size_t>(n));
  }
  throw UsageError("unknown embedder '" + std::string(spec) + "' (available: hashing, hashing:DIM)");
}

}  // namespace pwab::embed
