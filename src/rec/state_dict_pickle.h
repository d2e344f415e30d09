// src/rec/state_dict_pickle.h: reads the pickle of a PyTorch state_dict (the data.pkl of a torch.save zip).
//
// libtorch's own unpickler rejects an OrderedDict carrying `_metadata` (docs/recommender.md), so this is a
// small interpreter of the opcode subset torch.save emits for a state_dict: protocol 2-4 framing, GLOBAL /
// STACK_GLOBAL, memo, MARK/TUPLE/LIST/DICT building, BINPERSID storages and REDUCE of
// torch._utils._rebuild_tensor_v2. It describes where each tensor lives; it reads no tensor data itself.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::rec {

//! Element type of a storage, from its pickled class name (torch.FloatStorage → kFloat32, ...).
enum class StorageDtype { kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool };
//! Bytes per element.
int dtype_size(StorageDtype dtype);

//! One tensor of the state_dict: a strided view of a storage saved as the zip record `data/<storage_key>`.
struct PickledTensor {
  std::string name;         //!< the state_dict key, e.g. "item_emb.weight"
  std::string storage_key;  //!< record name under data/
  StorageDtype dtype = StorageDtype::kFloat32;
  int64_t storage_numel = 0;
  int64_t storage_offset = 0;  //!< in elements
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
};

//! Parses a state_dict pickle into its tensors, in key order. Throws pwab::Error (message prefixed by
//! `what`) for a truncated or unsupported pickle, or a top-level value that is not a dict of tensors.
std::vector<PickledTensor> parse_state_dict_pickle(std::string_view bytes, std::string_view what);

}  // namespace pwab::rec
