#include "core/safetensors.h"
#include "core/json_depth.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/sys.h"

namespace pwab::safetensors {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The reference implementation refuses headers above 100 MB; so does pwab (a corrupt length would otherwise
// ask for a huge parse).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {Dtype::kBool, "BOOL", 1}, {Dtype::kU8, "U8", 1},   {Dtype::kI8, "I8", 1},   {Dtype::kI16, "I16", 2},
    {Dtype::kI32, "I32", 4},   {Dtype::kI64, "I64", 8}, {Dtype::kF16, "F16", 2}, {Dtype::kBF16, "BF16", 2},
    {Dtype::kF32, "F32", 4},   {Dtype::kF64, "F64", 8},
};

const DtypeInfo& info_of(Dtype dtype) {
  for (const auto& d : kDtypes)
    if (d.dtype == dtype) return d;
  return kDtypes[0];  // unreachable for valid enum values
}

uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

std::string_view to_string(Dtype dtype) { return info_of(dtype).name; }

bool parse_dtype(std::string_view name, Dtype& out) {
  for (const auto& d : kDtypes) {
    if (d.name == name) {
      out = d.dtype;
      return true;
    }
  }
  return false;
}

std::size_t dtype_size(Dtype dtype) { return info_of(dtype).size; }

// ---- 16-bit floats --------------------------------------------------------------------------------------------

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal, exact
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7F800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float bf16_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_half(float value) {
  uint32_t x = float_bits(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // 65520 and above round to infinity
  if (abs < 0x33000000u) return static_cast<uint16_t>(sign);             // below 2^-25: rounds to zero
  if (abs < 0x38800000u) {                                               // below 2^-14: a subnormal half
    uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t h = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (abs - 0x38000000u) >> 13;  // rebias the exponent from 127 to 15
  uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | h);
}

uint16_t float_to_bf16(float value) {
  uint32_t x = float_bits(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// ---- TensorView ----------------------------------------------------------------------------------------------

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> TensorView::to_floats() const {
  const std::size_t n = static_cast<std::size_t>(numel());
  std::vector<float> out(n);
  const std::byte* p = bytes.data();
  switch (dtype) {
    case Dtype::kF32:
      if (n) std::memcpy(out.data(), p, n * 4);
      break;
    case Dtype::kF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(load<uint16_t>(p + 2 * i));
      break;
    case Dtype::kBF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(load<uint16_t>(p + 2 * i));
      break;
    case Dtype::kF64:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
      break;
    case Dtype::kI64:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<int64_t>(p + 8 * i));
      break;
    case Dtype::kI32:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<int32_t>(p + 4 * i));
      break;
    case Dtype::kI16:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<int16_t>(p + 2 * i));
      break;
    case Dtype::kI8:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<int8_t>(p + i));
      break;
    case Dtype::kU8:
    case Dtype::kBool:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<uint8_t>(p + i));
      break;
  }
  return out;
}

std::string TensorView::describe() const { return std::string(to_string(dtype)) + shape_text(shape); }

// ---- File ----------------------------------------------------------------------------------------------------

struct File::Mapping {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  void* mapped = nullptr;  // munmap'ed on destruction when set
  std::string owned;       // from_bytes keeps its image here

  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (mapped) ::munmap(mapped, size);
  }
};

File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const fs::path& path) {
  File f;
  f.path_ = path;
  f.mapping_ = std::make_shared<Mapping>();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("cannot read " + path.string() + ": not a regular file");
  }
  f.mapping_->size = static_cast<std::size_t>(st.st_size);
  if (f.mapping_->size > 0) {
    void* p = ::mmap(nullptr, f.mapping_->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error("cannot map " + path.string() + ": " + std::strerror(err));
    }
    f.mapping_->mapped = p;
    f.mapping_->data = static_cast<const std::byte*>(p);
  }
  ::close(fd);
  f.parse();
  return f;
}

File File::from_bytes(std::string bytes, std::string label) {
  File f;
  f.path_ = label;
  f.mapping_ = std::make_shared<Mapping>();
  f.mapping_->owned = std::move(bytes);
  f.mapping_->data = reinterpret_cast<const std::byte*>(f.mapping_->owned.data());
  f.mapping_->size = f.mapping_->owned.size();
  f.parse();
  return f;
}

void File::parse() {
  const std::string where = "safetensors file " + path_.string() + ": ";
  auto fail = [&](const std::string& what) { throw DataError(where + what); };
  const std::size_t size = mapping_->size;
  if (size < 8) fail("truncated: " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(mapping_->data[i]);
  if (header_len > kMaxHeaderBytes) fail("header length " + std::to_string(header_len) + " exceeds the 100 MB limit");
  if (header_len > size - 8)
    fail("truncated header: the header length says " + std::to_string(header_len) + " bytes but only " +
         std::to_string(size - 8) + " follow");
  const char* header_begin = reinterpret_cast<const char*>(mapping_->data + 8);
  json header;
  if (json_nests_deeper_than(std::string_view(header_begin, header_len))) fail("header: " + json_depth_message());
  try {
    header = json::parse(header_begin, header_begin + header_len);
  } catch (const json::exception& e) {
    fail(std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail("header is not a JSON object");

  const std::byte* data = mapping_->data + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  struct Span {
    uint64_t begin, end;
    std::size_t tensor;
  };
  std::vector<Span> spans;
  std::vector<TensorView> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ is not an object");
      for (const auto& [key, value] : entry.items())
        if (value.is_string()) metadata_[key] = value.get<std::string>();
      continue;
    }
    const std::string tensor = "tensor '" + name + "': ";
    if (!entry.is_object()) fail(tensor + "entry is not an object");
    auto dtype_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || !dtype_it->is_string()) fail(tensor + "missing or non-string \"dtype\"");
    if (shape_it == entry.end() || !shape_it->is_array()) fail(tensor + "missing or non-array \"shape\"");
    if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2)
      fail(tensor + "\"data_offsets\" must be an array of two integers");
    TensorView view;
    view.name = name;
    const auto dtype_name = dtype_it->get<std::string>();
    if (!parse_dtype(dtype_name, view.dtype)) fail(tensor + "unknown dtype '" + dtype_name + "'");
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : *shape_it) {
      if (!d.is_number_unsigned()) fail(tensor + "shape entries must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail(tensor + "shape entry too large");
      view.shape.push_back(static_cast<int64_t>(dim));
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
      numel *= dim;
    }
    uint64_t offsets[2];
    for (int i = 0; i < 2; ++i) {
      const auto& o = (*offsets_it)[i];
      if (!o.is_number_unsigned()) fail(tensor + "\"data_offsets\" must be non-negative integers");
      offsets[i] = o.get<uint64_t>();
    }
    if (offsets[1] < offsets[0])
      fail(tensor + "data_offsets [" + std::to_string(offsets[0]) + ", " + std::to_string(offsets[1]) +
           "] end before they begin");
    if (offsets[1] > data_size)
      fail(tensor + "data_offsets [" + std::to_string(offsets[0]) + ", " + std::to_string(offsets[1]) +
           "] out of range: the data area has " + std::to_string(data_size) + " bytes");
    const uint64_t elem = dtype_size(view.dtype);
    if (overflow || (numel != 0 && numel > std::numeric_limits<uint64_t>::max() / elem) ||
        numel * elem != offsets[1] - offsets[0])
      fail(tensor + "shape " + shape_text(view.shape) + " of " + dtype_name + " does not match its " +
           std::to_string(offsets[1] - offsets[0]) + " bytes of data");
    view.bytes = std::span<const std::byte>(data + offsets[0], offsets[1] - offsets[0]);
    spans.push_back({offsets[0], offsets[1], tensors.size()});
    tensors.push_back(std::move(view));
  }

  // The tensors must tile the data area exactly, as the reference implementation requires.
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t covered = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const auto& s = spans[i];
    if (s.begin < covered)
      fail("tensors '" + tensors[spans[i - 1].tensor].name + "' and '" + tensors[s.tensor].name + "' overlap");
    if (s.begin > covered)
      fail("gap of " + std::to_string(s.begin - covered) + " bytes before tensor '" + tensors[s.tensor].name + "'");
    covered = s.end;
  }
  if (covered != data_size)
    fail(std::to_string(data_size - covered) + " bytes after the last tensor belong to no tensor");

  tensors_.reserve(tensors.size());
  for (const auto& s : spans) {
    index_[tensors[s.tensor].name] = tensors_.size();
    tensors_.push_back(std::move(tensors[s.tensor]));
  }
}

const TensorView* File::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& File::at(std::string_view name) const {
  if (const auto* t = find(name)) return *t;
  throw DataError("safetensors file " + path_.string() + ": no tensor '" + std::string(name) + "'");
}

// ---- TensorSet -----------------------------------------------------------------------------------------------

TensorSet TensorSet::open(const fs::path& path) {
  TensorSet set;
  fs::path file = path;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "model.safetensors")) {
      file = path / "model.safetensors";
    } else if (fs::exists(path / "model.safetensors.index.json")) {
      file = path / "model.safetensors.index.json";
    } else {
      throw DataError("no model.safetensors or model.safetensors.index.json in " + path.string());
    }
  } else if (!fs::exists(path)) {
    throw Error("cannot open " + path.string() + ": no such file");
  }
  set.source_ = file;

  if (file.extension() != ".json") {
    set.files_.push_back(File::open(file));
  } else {
    const std::string where = "safetensors index " + file.string() + ": ";
    json index;
    const std::string text = read_file(file);
    if (json_nests_deeper_than(text)) throw DataError(where + json_depth_message());
    try {
      index = json::parse(text);
    } catch (const json::exception& e) {
      throw DataError(where + "not valid JSON (" + e.what() + ")");
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw DataError(where + "no \"weight_map\" object");
    std::map<std::string, std::string> tensor_to_shard;
    std::set<std::string> shards;
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) throw DataError(where + "the shard of '" + name + "' is not a string");
      auto shard_name = shard.get<std::string>();
      if (shard_name.empty() || shard_name.find('/') != std::string::npos || shard_name == "." || shard_name == "..")
        throw DataError(where + "shard '" + shard_name + "' of '" + name +
                        "' is not a file name in the same directory");
      tensor_to_shard[name] = shard_name;
      shards.insert(shard_name);
    }
    std::map<std::string, std::size_t> shard_file;
    for (const auto& shard : shards) {
      shard_file[shard] = set.files_.size();
      set.files_.push_back(File::open(file.parent_path() / shard));
    }
    for (const auto& [name, shard] : tensor_to_shard) {
      if (!set.files_[shard_file[shard]].find(name))
        throw DataError(where + "tensor '" + name + "' is listed in shard " + shard + ", which does not hold it");
    }
  }
  for (const auto& f : set.files_) {
    for (const auto& t : f.tensors()) {
      if (!set.by_name_.emplace(t.name, &t).second)
        throw DataError("safetensors index " + file.string() + ": tensor '" + t.name + "' is in more than one shard");
    }
  }
  return set;
}

const TensorView* TensorSet::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorView& TensorSet::at(std::string_view name) const {
  if (const auto* t = find(name)) return *t;
  throw DataError(source_.string() + ": no tensor '" + std::string(name) + "'");
}

std::vector<std::string> TensorSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : by_name_) out.push_back(name);
  return out;
}

// ---- Writer --------------------------------------------------------------------------------------------------

TensorData TensorData::from_floats(std::string name, std::vector<int64_t> shape, std::span<const float> values,
                                   Dtype dtype) {
  TensorData t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  const std::size_t n = values.size();
  switch (dtype) {
    case Dtype::kF32:
      t.bytes.resize(n * 4);
      if (n) std::memcpy(t.bytes.data(), values.data(), n * 4);
      break;
    case Dtype::kF16:
    case Dtype::kBF16:
      t.bytes.resize(n * 2);
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t h = dtype == Dtype::kF16 ? float_to_half(values[i]) : float_to_bf16(values[i]);
        std::memcpy(t.bytes.data() + 2 * i, &h, 2);
      }
      break;
    case Dtype::kF64:
      t.bytes.resize(n * 8);
      for (std::size_t i = 0; i < n; ++i) {
        double d = values[i];
        std::memcpy(t.bytes.data() + 8 * i, &d, 8);
      }
      break;
    default:
      throw Error("safetensors: TensorData::from_floats supports F32, F16, BF16 and F64, not " +
                  std::string(to_string(dtype)));
  }
  return t;
}

std::string encode(const std::vector<TensorData>& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorData*> sorted;
  for (const auto& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const TensorData* a, const TensorData* b) { return a->name < b->name; });
  json header = json::object();
  uint64_t offset = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& t = *sorted[i];
    if (t.name == "__metadata__") throw Error("safetensors: '__metadata__' cannot name a tensor");
    if (i > 0 && sorted[i - 1]->name == t.name) throw Error("safetensors: duplicate tensor '" + t.name + "'");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error("safetensors: tensor '" + t.name + "' has a negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * dtype_size(t.dtype) != t.bytes.size())
      throw Error("safetensors: tensor '" + t.name + "' has " + std::to_string(t.bytes.size()) + " bytes, its shape " +
                  shape_text(t.shape) + " of " + std::string(to_string(t.dtype)) + " needs " +
                  std::to_string(numel * dtype_size(t.dtype)));
    header[t.name] = {{"dtype", std::string(to_string(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out += text;
  for (const auto* t : sorted) out += t->bytes;
  return out;
}

void write_file(const fs::path& path, const std::vector<TensorData>& tensors,
                const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode(tensors, metadata));
}

}  // namespace pwab::safetensors
