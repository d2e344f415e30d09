// src/env/backends.h: the environment's search and recommendation services on top of the real engines.
#pragma once
#include "env/environment.h"
#include "rec/recommender.h"
#include "search/search.h"

namespace pwab::env {

//! search_product_by_query on the Lucene-faithful BM25 index.
class IndexSearch final : public SearchBackend {
 public:
  explicit IndexSearch(const search::Index& index) : index_(index) {}
  std::vector<std::string> search(std::string_view query, int k) const override;

 private:
  const search::Index& index_;
};

//! get_recommendations_by_history on SASRec.
class SasrecRecommend final : public RecommendBackend {
 public:
  explicit SasrecRecommend(const rec::Recommender& model) : model_(model) {}
  std::vector<std::string> recommend(const std::vector<std::string>& sequence, int k) const override;

 private:
  const rec::Recommender& model_;
};

}  // namespace pwab::env
