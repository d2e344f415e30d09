#include "env/backends.h"

namespace pwab::env {

std::vector<std::string> IndexSearch::search(std::string_view query, int k) const {
  std::vector<std::string> asins;
  for (auto& hit : index_.search(query, k)) asins.push_back(std::move(hit.asin));
  return asins;
}

std::vector<std::string> SasrecRecommend::recommend(const std::vector<std::string>& sequence, int k) const {
  std::vector<std::string> asins;
  for (auto& r : model_.recommend(sequence, k)) asins.push_back(std::move(r.asin));
  return asins;
}

}  // namespace pwab::env
