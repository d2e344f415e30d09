// src/rec/zip_archive.h: reads the entries of a zip archive held in memory (stored entries only, no torch).
//
// torch.save (≥ 1.6) writes a zip whose entries are all "stored" (uncompressed), with zip64 records when the
// archive is large; this is the subset needed to read one. Entry sizes come from the central directory
// (torch writes them after the data, in data descriptors, so local headers may carry zeros).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::rec {

class ZipArchive {
 public:
  //! Reads the end-of-central-directory record (zip64 where its fields are saturated) and the central
  //! directory of `bytes`, which must outlive the archive. Throws pwab::Error prefixed by `what` (the file) for
  //! what is not a zip, or is truncated or corrupt.
  ZipArchive(std::string_view bytes, std::string what);

  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  //! Entry names in central-directory order.
  const std::vector<std::string>& names() const { return names_; }
  //! The bytes of entry `name`. Throws pwab::Error naming the file and the entry when it is missing,
  //! compressed, or lies beyond the end of the archive.
  std::string_view entry(std::string_view name) const;

 private:
  struct Entry {
    uint16_t method = 0;  //!< 0 = stored
    uint64_t size = 0;    //!< uncompressed size
    uint64_t compressed_size = 0;
    uint64_t local_header = 0;  //!< offset of the local file header
  };

  void read_central_directory(uint64_t offset, uint64_t size, uint64_t count);

  std::string_view bytes_;
  std::string what_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<std::string> names_;
};

}  // namespace pwab::rec
