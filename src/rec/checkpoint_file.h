// src/rec/checkpoint_file.h: pwab's own SASRec checkpoint container (no torch needed to read or write it).
//
// Layout: the magic line "PWAB-SASREC 1\n", an 8-byte little-endian header length, a JSON header
// {"meta": {...}, "arrays": [{"name", "shape", "offset", "count"}...], "blob": {"offset", "size"}}, then the
// payload: float32 little-endian arrays and one opaque blob (the optimizer state), at the header's offsets.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::rec {

//! A float32 tensor with its name and shape, row-major.
struct NamedArray {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct CheckpointContents {
  std::string meta_json = "{}";  //!< free-form JSON object (config, fingerprints, probes, training state)
  std::vector<NamedArray> arrays;
  std::string blob;              //!< opaque bytes (the serialized optimizer)
};

inline constexpr std::string_view kCheckpointMagic = "PWAB-SASREC 1\n";
//! Arrays named with this prefix are the last epoch's weights, kept for resume; the others are served.
inline constexpr std::string_view kLatestPrefix = "latest/";

//! True if `head` (the first bytes of a file) starts with the magic line.
bool is_pwab_checkpoint(std::string_view head);
std::string encode_checkpoint(const CheckpointContents& contents);
//! Throws pwab::Error prefixed by `what` for a truncated or inconsistent file.
CheckpointContents decode_checkpoint(std::string_view bytes, std::string_view what);

}  // namespace pwab::rec
