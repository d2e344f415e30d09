// src/core/safetensors.h: the safetensors format (Hugging Face), read through mmap and written atomically.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON mapping tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data area after the header), an
// optional "__metadata__" object of strings, then the data. Reading checks every rule of the format (header
// bounds, known dtypes, shapes matching byte sizes, tensors tiling the data area without gaps or overlaps) and
// reports a violation as pwab::DataError naming the file and, where it applies, the tensor. Torch-free: callers
// convert views to their own tensors (to_floats(), or the raw bytes).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::safetensors {

enum class Dtype { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

//! "F32", "BF16", ...: the names the format uses.
std::string_view to_string(Dtype dtype);
//! The inverse of to_string; false for a name pwab does not know (e.g. "F8_E4M3").
bool parse_dtype(std::string_view name, Dtype& out);
std::size_t dtype_size(Dtype dtype);

//! IEEE binary16 and bfloat16 to float (exact), and back (round to nearest even; NaN stays NaN).
float half_to_float(uint16_t bits);
float bf16_to_float(uint16_t bits);
uint16_t float_to_half(float value);
uint16_t float_to_bf16(float value);

//! One tensor of an open file: its bytes stay valid while the File (or TensorSet) that produced it lives.
struct TensorView {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  int64_t numel() const;
  //! The values as floats, converted from F32/F16/BF16/F64 (and the integer types, by value). Row-major.
  std::vector<float> to_floats() const;
  //! "F32[384, 1536]"
  std::string describe() const;
};

//! An open .safetensors file, mapped read-only. Movable, not copyable.
class File {
 public:
  //! Maps and validates the file; throws pwab::DataError (malformed) or pwab::Error (cannot open).
  static File open(const std::filesystem::path& path);
  //! Validates an in-memory image (copied); `label` names it in errors.
  static File from_bytes(std::string bytes, std::string label = "<memory>");

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::filesystem::path& path() const { return path_; }
  //! Every tensor, in the order of their data offsets.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  //! nullptr when absent.
  const TensorView* find(std::string_view name) const;
  //! Throws pwab::DataError naming the file and the tensor when absent.
  const TensorView& at(std::string_view name) const;
  //! The "__metadata__" strings (non-string values are skipped).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  File() = default;
  struct Mapping;
  void parse();
  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

//! The tensors of a model: one file, or the shards listed by a "model.safetensors.index.json" (its
//! "weight_map" maps each tensor name to a shard file in the same directory).
class TensorSet {
 public:
  //! `path` is a .safetensors file, an index .json file, or a directory holding model.safetensors or
  //! model.safetensors.index.json. Throws pwab::DataError / pwab::Error naming the file.
  static TensorSet open(const std::filesystem::path& path);
  TensorSet(TensorSet&&) noexcept = default;
  TensorSet& operator=(TensorSet&&) noexcept = default;
  TensorSet(const TensorSet&) = delete;  // the name index points into this set's files
  TensorSet& operator=(const TensorSet&) = delete;

  //! nullptr when absent.
  const TensorView* find(std::string_view name) const;
  //! Throws pwab::DataError naming where it was looked for.
  const TensorView& at(std::string_view name) const;
  //! Every tensor name, sorted.
  std::vector<std::string> names() const;
  const std::vector<File>& files() const { return files_; }
  //! What errors call this set: the single file or the index file.
  const std::filesystem::path& source() const { return source_; }

 private:
  TensorSet() = default;
  std::filesystem::path source_;
  std::vector<File> files_;
  std::map<std::string, const TensorView*, std::less<>> by_name_;
};

//! A tensor to write: `bytes` must hold exactly numel × dtype_size bytes, little-endian, row-major.
struct TensorData {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  std::string bytes;

  static TensorData from_floats(std::string name, std::vector<int64_t> shape, std::span<const float> values,
                                Dtype dtype = Dtype::kF32);
};

//! The file image: header (keys sorted, padded with spaces to a multiple of 8 so data stays aligned) + data in
//! name order. Throws pwab::Error on a duplicate name or a size that does not match the shape.
std::string encode(const std::vector<TensorData>& tensors, const std::map<std::string, std::string>& metadata = {});
//! encode() written atomically (temp file + rename).
void write_file(const std::filesystem::path& path, const std::vector<TensorData>& tensors,
                const std::map<std::string, std::string>& metadata = {});

}  // namespace pwab::safetensors
