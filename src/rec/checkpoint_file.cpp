#include "rec/checkpoint_file.h"
#include "core/json_depth.h"

#include <nlohmann/json.hpp>

#include <cstring>

#include "core/error.h"

namespace pwab::rec {

static_assert(sizeof(float) == 4, "float32 payload");

bool is_pwab_checkpoint(std::string_view head) { return head.substr(0, kCheckpointMagic.size()) == kCheckpointMagic; }

std::string encode_checkpoint(const CheckpointContents& contents) {
  nlohmann::json header;
  header["meta"] = nlohmann::json::parse(contents.meta_json);
  header["arrays"] = nlohmann::json::array();
  uint64_t offset = 0;
  for (const auto& array : contents.arrays) {
    header["arrays"].push_back({{"name", array.name}, {"shape", array.shape}, {"offset", offset}, {"count", array.values.size()}});
    offset += array.values.size() * sizeof(float);
  }
  header["blob"] = {{"offset", offset}, {"size", contents.blob.size()}};
  std::string header_text = header.dump();

  std::string out(kCheckpointMagic);
  uint64_t length = header_text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  out += header_text;
  out.reserve(out.size() + offset + contents.blob.size());
  for (const auto& array : contents.arrays)
    out.append(reinterpret_cast<const char*>(array.values.data()), array.values.size() * sizeof(float));
  out += contents.blob;
  return out;
}

namespace {

int64_t product_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 40) / d)) return -1;
    n *= d;
  }
  return n;
}

}  // namespace

CheckpointContents decode_checkpoint(std::string_view bytes, std::string_view what) {
  auto fail = [&](const std::string& problem) -> Error { return Error(std::string(what) + ": " + problem); };
  if (!is_pwab_checkpoint(bytes)) throw fail("not a pwab SASRec checkpoint (bad magic)");
  std::size_t pos = kCheckpointMagic.size();
  if (bytes.size() < pos + 8) throw fail("truncated checkpoint header");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[pos + i]);
  pos += 8;
  if (length > bytes.size() - pos) throw fail("truncated checkpoint header");
  nlohmann::json header = parse_json_or_discarded(bytes.substr(pos, length));
  if (header.is_discarded() || !header.is_object()) throw fail("corrupt checkpoint header (invalid JSON)");
  std::string_view payload = bytes.substr(pos + length);

  CheckpointContents contents;
  try {
    contents.meta_json = header.at("meta").dump();
    for (const auto& entry : header.at("arrays")) {
      NamedArray array;
      array.name = entry.at("name").get<std::string>();
      array.shape = entry.at("shape").get<std::vector<int64_t>>();
      auto offset = entry.at("offset").get<uint64_t>();
      auto count = entry.at("count").get<uint64_t>();
      if (product_of(array.shape) != static_cast<int64_t>(count))
        throw fail("tensor '" + array.name + "': shape does not match its element count");
      if (offset > payload.size() || count * sizeof(float) > payload.size() - offset)
        throw fail("tensor '" + array.name + "' lies beyond the end of the file (truncated?)");
      array.values.resize(count);
      std::memcpy(array.values.data(), payload.data() + offset, count * sizeof(float));
      contents.arrays.push_back(std::move(array));
    }
    auto blob_offset = header.at("blob").at("offset").get<uint64_t>();
    auto blob_size = header.at("blob").at("size").get<uint64_t>();
    if (blob_offset > payload.size() || blob_size > payload.size() - blob_offset)
      throw fail("optimizer state lies beyond the end of the file (truncated?)");
    contents.blob = std::string(payload.substr(blob_offset, blob_size));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("corrupt checkpoint header: ") + e.what());
  }
  return contents;
}

}  // namespace pwab::rec
