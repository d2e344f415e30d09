#include "rec/item_map.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/hash.h"

namespace pwab::rec {

ItemMap ItemMap::from_dataset(const data::Dataset& ds) {
  std::vector<std::pair<int64_t, std::string>> pairs;
  if (!ds.item_ids().empty()) {
    for (const auto& [asin, id] : ds.item_ids()) pairs.emplace_back(id, asin);
  } else {
    for (std::size_t i = 0; i < ds.products().size(); ++i)
      pairs.emplace_back(static_cast<int64_t>(i + 1), ds.products()[i].parent_asin);
  }
  std::sort(pairs.begin(), pairs.end());
  ItemMap map;
  Hasher hasher;
  for (auto& [id, asin] : pairs) {
    if (id <= 0) throw DataError("item map: item id " + std::to_string(id) + " of " + asin + " is not positive");
    if (!map.ids_.empty() && map.ids_.back() == id)
      throw DataError("item map: item id " + std::to_string(id) + " is used twice");
    hasher.update_u64(static_cast<uint64_t>(id)).update(asin).update(std::string_view("\0", 1));
    map.id_of_.emplace(asin, id);
    map.ids_.push_back(id);
    map.asins_.push_back(std::move(asin));
  }
  map.fingerprint_ = hasher.hex();
  return map;
}

int64_t ItemMap::find(std::string_view asin) const {
  auto it = id_of_.find(asin);
  return it == id_of_.end() ? 0 : it->second;
}

}  // namespace pwab::rec
