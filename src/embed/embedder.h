// src/embed/embedder.h: text embeddings behind one interface.
//
// Review similarity (result accuracy of review tasks) and relevant-memory retrieval compare texts by the cosine
// of their embeddings. The paper uses all-MiniLM-L6-v2; that encoder joins in a later issue. This area provides
// the interface and a deterministic, offline embedder so rewards are computable with no model files.
// Scores are only comparable between runs that used the same embedder: name() is recorded with every result.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::embed {

class Embedder {
 public:
  virtual ~Embedder() = default;
  //! A stable identifier, e.g. "hashing-v1/384"; recorded in run manifests and result tables.
  virtual std::string name() const = 0;
  virtual std::size_t dim() const = 0;
  //! One L2-normalized vector per text (a zero vector for a text with no features). Thread-safe.
  virtual std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const = 0;

  //! Cosine similarity of two texts, in [-1, 1].
  double similarity(std::string_view a, std::string_view b) const;
};

//! Dot product of two equally long vectors (the cosine when both are normalized).
double dot(const std::vector<float>& a, const std::vector<float>& b);

//! Feature hashing of lower-cased word unigrams, word bigrams and character trigrams into `dim` signed buckets,
//! sub-linear (1 + log) term weights, L2-normalized. Deterministic on every platform; no training, no files.
//! Similar wording scores high, unrelated text near 0; it has no notion of synonyms.
class HashingEmbedder final : public Embedder {
 public:
  explicit HashingEmbedder(std::size_t dim = 384) : dim_(dim) {}
  std::string name() const override;
  std::size_t dim() const override { return dim_; }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const override;
  std::vector<float> embed_one(std::string_view text) const;

 private:
  std::size_t dim_;
};

//! Creates an embedder from a spec: "hashing" or "hashing:DIM". Throws UsageError for unknown specs.
std::unique_ptr<Embedder> make_embedder(std::string_view spec);

}  // namespace pwab::embed
