// ZipArchive: the end records, the central directory and local headers of a zip (APPNOTE 6.3), stored entries.
#include "rec/zip_archive.h"

#include "core/error.h"

namespace pwab::rec {

namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndLocator = 0x07064b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kCentralDirectoryHeader = 0x02014b50;
constexpr uint32_t kLocalFileHeader = 0x04034b50;
constexpr uint16_t kZip64ExtraField = 0x0001;
constexpr std::size_t kEndRecordSize = 22, kZip64LocatorSize = 20, kZip64EndRecordSize = 56;
constexpr std::size_t kCentralHeaderSize = 46, kLocalHeaderSize = 30;
constexpr uint16_t kSaturated16 = 0xffff;
constexpr uint32_t kSaturated32 = 0xffffffff;

//! Little-endian integer at `at`; the caller has checked the bounds.
uint64_t little_endian(std::string_view bytes, uint64_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[at + i]);
  return value;
}
uint64_t u16(std::string_view bytes, uint64_t at) { return little_endian(bytes, at, 2); }
uint64_t u32(std::string_view bytes, uint64_t at) { return little_endian(bytes, at, 4); }
uint64_t u64(std::string_view bytes, uint64_t at) { return little_endian(bytes, at, 8); }

//! Whether [offset, offset + size) lies inside `bytes`, without overflow.
bool fits(std::string_view bytes, uint64_t offset, uint64_t size) {
  return offset <= bytes.size() && size <= bytes.size() - offset;
}

}  // namespace

ZipArchive::ZipArchive(std::string_view bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {

  // The end record is the last thing in the file, followed only by its comment (at most 65,535 bytes).
  if (bytes_.size() < kEndRecordSize)
    throw Error(what_ + ": not a zip archive (too short for an end-of-central-directory record; truncated?)");
  const uint64_t lowest = bytes_.size() > kEndRecordSize + 0xffff ? bytes_.size() - kEndRecordSize - 0xffff : 0;
  uint64_t end = bytes_.size() - kEndRecordSize;
  auto is_end_record = [&](uint64_t at) {
    return u32(bytes_, at) == kEndOfCentralDirectory && at + kEndRecordSize + u16(bytes_, at + 20) <= bytes_.size();
  };
  while (!is_end_record(end)) {
    if (end == lowest) throw Error(what_ + ": not a zip archive (no end-of-central-directory record; truncated?)");
    --end;
  }
  uint64_t count = u16(bytes_, end + 10);
  uint64_t directory_size = u32(bytes_, end + 12), directory_offset = u32(bytes_, end + 16);

  // Saturated fields: the real values are in the zip64 end record, which the locator just before points to.
  if (count == kSaturated16 || directory_size == kSaturated32 || directory_offset == kSaturated32) {
    if (end < kZip64LocatorSize || u32(bytes_, end - kZip64LocatorSize) != kZip64EndLocator)
      throw Error(what_ + ": corrupt zip archive (zip64 end-of-central-directory locator missing)");
    const uint64_t record = u64(bytes_, end - kZip64LocatorSize + 8);
    if (!fits(bytes_, record, kZip64EndRecordSize) || u32(bytes_, record) != kZip64EndOfCentralDirectory)
      throw Error(what_ + ": corrupt zip archive (bad zip64 end-of-central-directory record)");
    count = u64(bytes_, record + 32);
    directory_size = u64(bytes_, record + 40);
    directory_offset = u64(bytes_, record + 48);
  }
  if (!fits(bytes_, directory_offset, directory_size))
    throw Error(what_ + ": truncated or corrupt zip archive (the central directory lies beyond the end of the file)");
  read_central_directory(directory_offset, directory_size, count);
}

void ZipArchive::read_central_directory(uint64_t offset, uint64_t size, uint64_t count) {
  const uint64_t directory_end = offset + size;
  auto corrupt = [&](const std::string& problem) {
    return Error(what_ + ": corrupt zip archive (central directory: " + problem + ")");
  };
  uint64_t at = offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (directory_end - at < kCentralHeaderSize || u32(bytes_, at) != kCentralDirectoryHeader)
      throw corrupt("entry " + std::to_string(i) + " has no valid header");
    const uint64_t name_length = u16(bytes_, at + 28), extra_length = u16(bytes_, at + 30);
    const uint64_t comment_length = u16(bytes_, at + 32);
    const uint64_t record_size = kCentralHeaderSize + name_length + extra_length + comment_length;
    if (directory_end - at < record_size) throw corrupt("entry " + std::to_string(i) + " is cut off");
    std::string name(bytes_.substr(at + kCentralHeaderSize, name_length));
    Entry entry{static_cast<uint16_t>(u16(bytes_, at + 10)), u32(bytes_, at + 24), u32(bytes_, at + 20),
                u32(bytes_, at + 42)};
    if (u16(bytes_, at + 8) & 1) throw Error(what_ + ": zip entry '" + name + "' is encrypted");

    // Saturated sizes or offset: the zip64 extra field holds them, in this order, only the saturated ones.
    for (uint64_t field = at + kCentralHeaderSize + name_length, fields_end = field + extra_length;
         field + 4 <= fields_end;) {
      const uint64_t id = u16(bytes_, field), length = u16(bytes_, field + 2);
      if (field + 4 + length > fields_end) throw corrupt("entry '" + name + "' has a cut-off extra field");
      if (id == kZip64ExtraField) {
        uint64_t value = field + 4;
        for (uint64_t* target : {&entry.size, &entry.compressed_size, &entry.local_header}) {
          if (*target != kSaturated32) continue;
          if (value + 8 > field + 4 + length) throw corrupt("entry '" + name + "' has a short zip64 field");
          *target = u64(bytes_, value);
          value += 8;
        }
      }
      field += 4 + length;
    }
    names_.push_back(name);
    entries_[std::move(name)] = entry;
    at += record_size;
  }
}

std::string_view ZipArchive::entry(std::string_view name) const {
  auto it = entries_.find(name);
  const std::string quoted = "zip entry '" + std::string(name) + "'";
  if (it == entries_.end()) throw Error(what_ + ": " + quoted + " is missing");
  const Entry& e = it->second;
  if (e.method != 0)
    throw Error(what_ + ": " + quoted + " is compressed (method " + std::to_string(e.method) +
                "); only stored (uncompressed) entries are supported, as torch.save writes them");
  if (!fits(bytes_, e.local_header, kLocalHeaderSize) || u32(bytes_, e.local_header) != kLocalFileHeader)
    throw Error(what_ + ": truncated or corrupt zip archive (" + quoted + " has no local header)");
  // The local header's own name and extra lengths (torch pads the extra field to align the data).
  const uint64_t data = e.local_header + kLocalHeaderSize + u16(bytes_, e.local_header + 26) +
                        u16(bytes_, e.local_header + 28);
  if (!fits(bytes_, data, e.size))
    throw Error(what_ + ": truncated or corrupt zip archive (" + quoted + " lies beyond the end of the file)");
  return bytes_.substr(data, e.size);
}

}  // namespace pwab::rec
