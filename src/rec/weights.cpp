// Named SASRec weights without torch: expected tensors, shape checks, and the torch.save zip reader.
#include "rec/weights.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/sys.h"
#include "rec/state_dict_pickle.h"
#include "rec/zip_archive.h"

namespace pwab::rec {

static_assert(std::endian::native == std::endian::little, "torch.save storages are little-endian, read in place");

// ---- names and shapes ---------------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(int64_t item_rows, const ModelShape& s) {
  const int64_t h = s.hidden;
  std::vector<std::pair<std::string, std::vector<int64_t>>> out = {{"item_emb.weight", {item_rows, h}},
                                                                   {"pos_emb.weight", {s.maxlen + 1, h}}};
  for (int i = 0; i < s.blocks; ++i) {
    std::string n = std::to_string(i);
    out.push_back({"attention_layernorms." + n + ".weight", {h}});
    out.push_back({"attention_layernorms." + n + ".bias", {h}});
    out.push_back({"attention_layers." + n + ".in_proj_weight", {3 * h, h}});
    out.push_back({"attention_layers." + n + ".in_proj_bias", {3 * h}});
    out.push_back({"attention_layers." + n + ".out_proj.weight", {h, h}});
    out.push_back({"attention_layers." + n + ".out_proj.bias", {h}});
    out.push_back({"forward_layernorms." + n + ".weight", {h}});
    out.push_back({"forward_layernorms." + n + ".bias", {h}});
    out.push_back({"forward_layers." + n + ".conv1.weight", {h, h, 1}});
    out.push_back({"forward_layers." + n + ".conv1.bias", {h}});
    out.push_back({"forward_layers." + n + ".conv2.weight", {h, h, 1}});
    out.push_back({"forward_layers." + n + ".conv2.bias", {h}});
  }
  out.push_back({"last_layernorm.weight", {h}});
  out.push_back({"last_layernorm.bias", {h}});
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

std::vector<int64_t> require_shape(const ShapeLookup& shape_of, const std::string& name, const std::string& what) {
  auto shape = shape_of(name);
  if (!shape) throw Error(what + ": tensor '" + name + "' is missing (not a SASRec checkpoint?)");
  return *shape;
}

ShapeLookup shapes_in(const WeightMap& weights) {
  return [&weights](const std::string& name) -> std::optional<std::vector<int64_t>> {
    auto it = weights.find(name);
    if (it == weights.end()) return std::nullopt;
    return it->second.shape;
  };
}

}  // namespace

std::pair<int64_t, ModelShape> infer_dimensions(const ShapeLookup& shape_of, const std::string& what) {
  const auto items = require_shape(shape_of, "item_emb.weight", what);
  const auto positions = require_shape(shape_of, "pos_emb.weight", what);
  if (items.size() != 2 || positions.size() != 2 || items[1] != positions[1] || positions[0] < 2 || items[0] < 2)
    throw Error(what + ": item_emb.weight " + shape_text(items) + " and pos_emb.weight " + shape_text(positions) +
                " do not describe a SASRec model");
  ModelShape shape;
  shape.hidden = static_cast<int>(items[1]);
  shape.maxlen = static_cast<int>(positions[0] - 1);
  shape.blocks = 0;
  while (shape_of("attention_layernorms." + std::to_string(shape.blocks) + ".weight")) ++shape.blocks;
  if (shape.blocks == 0) throw Error(what + ": tensor 'attention_layernorms.0.weight' is missing");
  shape.heads = shape.hidden % 2 == 0 ? 2 : 1;  // not stored in a state_dict; the original uses 2
  return {items[0], shape};
}

std::pair<int64_t, ModelShape> infer_dimensions(const WeightMap& weights, const std::string& what) {
  return infer_dimensions(shapes_in(weights), what);
}

void check_tensors(const ShapeLookup& shape_of, int64_t item_rows, const ModelShape& shape, const std::string& what) {
  for (const auto& [name, expected] : expected_tensors(item_rows, shape)) {
    const auto actual = require_shape(shape_of, name, what);
    if (actual != expected)
      throw Error(what + ": tensor '" + name + "' has shape " + shape_text(actual) + ", expected " +
                  shape_text(expected));
  }
}

void check_tensors(const WeightMap& weights, int64_t item_rows, const ModelShape& shape, const std::string& what) {
  check_tensors(shapes_in(weights), item_rows, shape, what);
}

// ---- torch.save zip -----------------------------------------------------------------------------------------

namespace {

//! IEEE binary16 → float32, subnormals, infinities and NaN included.
float half_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t bits = exponent == 0x1f ? (sign | 0x7f800000u | (mantissa << 13))
                                         : (sign | ((exponent + 112) << 23) | (mantissa << 13));
  return std::bit_cast<float>(bits);
}

template <typename T>
T load_as(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

//! One storage element at `p` as float32.
float element_as_float(const char* p, StorageDtype dtype) {
  switch (dtype) {
    case StorageDtype::kFloat32: return load_as<float>(p);
    case StorageDtype::kFloat64: return static_cast<float>(load_as<double>(p));
    case StorageDtype::kFloat16: return half_to_float(load_as<uint16_t>(p));
    case StorageDtype::kBFloat16: return std::bit_cast<float>(static_cast<uint32_t>(load_as<uint16_t>(p)) << 16);
    case StorageDtype::kInt64: return static_cast<float>(load_as<int64_t>(p));
    case StorageDtype::kInt32: return static_cast<float>(load_as<int32_t>(p));
    case StorageDtype::kInt16: return static_cast<float>(load_as<int16_t>(p));
    case StorageDtype::kInt8: return static_cast<float>(load_as<int8_t>(p));
    case StorageDtype::kUInt8: return static_cast<float>(load_as<uint8_t>(p));
    case StorageDtype::kBool: return *p != 0 ? 1.0f : 0.0f;
  }
  return 0.0f;
}

//! Elements of the view (0 if any dimension is 0); throws for a negative or absurd shape.
int64_t view_numel(const PickledTensor& t, const std::string& what) {
  constexpr int64_t kLimit = int64_t{1} << 34;
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0) throw Error(what + ": tensor '" + t.name + "' has a negative dimension");
    if (d > 0 && n > kLimit / d) throw Error(what + ": tensor '" + t.name + "' is too large");
    n *= d;
  }
  return n;
}

//! Checks that every element of the strided view lies inside its storage (of storage_numel elements).
void check_view(const PickledTensor& t, int64_t numel, const std::string& what) {
  if (t.shape.size() != t.stride.size()) throw Error(what + ": tensor '" + t.name + "' has an invalid stride");
  if (numel == 0) return;
  auto beyond = [&] { return Error(what + ": tensor '" + t.name + "' reaches beyond its storage"); };
  if (t.storage_offset < 0 || t.storage_offset >= t.storage_numel) throw beyond();
  int64_t last = t.storage_offset;  // the largest element index reached so far; stays < storage_numel
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    if (t.stride[d] < 0) throw Error(what + ": tensor '" + t.name + "' has an invalid stride");
    if (t.stride[d] > 0 && t.shape[d] - 1 > (t.storage_numel - 1 - last) / t.stride[d]) throw beyond();
    last += (t.shape[d] - 1) * t.stride[d];
  }
}

//! The view as a row-major float32 array: walks the index odometer, moving the storage position by strides.
WeightArray gather_view(const PickledTensor& t, int64_t numel, std::string_view storage) {
  WeightArray out{t.shape, std::vector<float>(static_cast<std::size_t>(numel))};
  const std::size_t width = static_cast<std::size_t>(dtype_size(t.dtype));
  std::vector<int64_t> index(t.shape.size(), 0);
  int64_t position = t.storage_offset;
  for (int64_t i = 0; i < numel; ++i) {
    out.values[static_cast<std::size_t>(i)] = element_as_float(storage.data() + position * width, t.dtype);
    for (std::size_t d = t.shape.size(); d-- > 0;) {
      position += t.stride[d];
      if (++index[d] < t.shape[d]) break;
      position -= t.shape[d] * t.stride[d];
      index[d] = 0;
    }
  }
  return out;
}

//! torch.save puts every record in one top folder, named after the file it first wrote; libtorch finds it from
//! the first entry, and so does this.
std::string record_folder(const ZipArchive& zip, const std::string& what) {
  if (zip.names().empty()) throw Error(what + ": the zip archive is empty (not a torch.save file)");
  const std::string& first = zip.names().front();
  auto slash = first.find('/');
  if (slash == std::string::npos) throw Error(what + ": the zip's entries are not in a folder (not a torch.save file)");
  return first.substr(0, slash + 1);
}

}  // namespace

WeightMap read_torch_save_weights(const std::filesystem::path& path) {
  const std::string what = path.string();
  const std::string bytes = read_file(path);
  const ZipArchive zip(bytes, what);
  const std::string folder = record_folder(zip, what);
  if (!zip.contains(folder + "data.pkl")) throw Error(what + ": the zip has no data.pkl (not a torch.save file)");
  const auto pickled = parse_state_dict_pickle(zip.entry(folder + "data.pkl"), what);
  WeightMap weights;
  for (const auto& t : pickled) {
    const std::string record = "data/" + t.storage_key;
    if (!zip.contains(folder + record))
      throw Error(what + ": storage '" + record + "' of tensor '" + t.name + "' is missing");
    const std::string_view storage = zip.entry(folder + record);
    if (t.storage_numel < 0 ||
        static_cast<uint64_t>(t.storage_numel) > storage.size() / static_cast<uint64_t>(dtype_size(t.dtype)))
      throw Error(what + ": storage of tensor '" + t.name + "' is shorter than its declared size");
    const int64_t numel = view_numel(t, what);
    check_view(t, numel, what);
    weights[t.name] = gather_view(t, numel, storage);
  }
  return weights;
}

}  // namespace pwab::rec
