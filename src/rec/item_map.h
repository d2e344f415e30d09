// src/rec/item_map.h: the ASIN ↔ SASRec item id map, which is also the candidate set (docs/decisions.md §1.6).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace pwab::rec {

class ItemMap {
 public:
  //! The dataset's item_ids.json, or ids 1..N in catalogue order when it has none.
  static ItemMap from_dataset(const data::Dataset& ds);

  //! Item id of an ASIN, 0 if unknown.
  int64_t find(std::string_view asin) const;
  //! ASIN of a candidate index (position in ids()).
  const std::string& asin_at(std::size_t index) const { return asins_[index]; }
  //! Candidate ids, ascending.
  const std::vector<int64_t>& ids() const { return ids_; }
  int64_t max_id() const { return ids_.empty() ? 0 : ids_.back(); }
  std::size_t size() const { return ids_.size(); }
  //! Hash of the (id, asin) pairs: a checkpoint trained with another map scores other items.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  data::StringMap<int64_t> id_of_;
  std::vector<int64_t> ids_;
  std::vector<std::string> asins_;  //!< parallel to ids_
  std::string fingerprint_;
};

}  // namespace pwab::rec
