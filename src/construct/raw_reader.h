// src/construct/raw_reader.h: streaming the Amazon Reviews 2023 JSONL dumps line by line, plain or gzip.
//
// The real category files are tens of GB, so nothing here holds more than one read buffer: a line is a view
// into that buffer, valid until the next call, and the bytes after it are always readable for
// SIMDJSON_PADDING bytes, so simdjson can parse it in place without a copy.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::construct {

//! The category a raw file belongs to, taken from its name as the Amazon Reviews 2023 downloads name them:
//! "Electronics.jsonl.gz" → "Electronics", "meta_Electronics.jsonl" → "Electronics" (a `meta_` prefix and the
//! `.gz`, `.jsonl`, `.json` suffixes are dropped).
std::string file_category(const std::filesystem::path& file);

//! Reads a JSONL file line by line; gzip is detected from the content (zlib reads plain files as they are),
//! so the name does not matter. Blank lines are skipped; a trailing '\r' and a UTF-8 byte-order mark at the
//! start of the file are dropped.
class LineReader {
 public:
  //! Lines longer than this are reported as overlong and skipped, so one huge line (a file with no newlines)
  //! cannot take unbounded memory.
  static constexpr std::size_t kMaxLineBytes = 16u << 20;

  //! Opens the file; throws pwab::Error naming it if it cannot be opened.
  explicit LineReader(const std::filesystem::path& file);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  //! The next non-blank line, or false at the end of the file. `overlong` is set (and `line` empty) for a
  //! line above kMaxLineBytes. Throws pwab::Error naming the file and line on a read error (corrupt or
  //! truncated gzip data).
  bool next(std::string_view& line, bool& overlong);
  //! 1-based number of the line last returned (blank lines count).
  uint64_t line_number() const { return line_no_; }
  //! Bytes of the file consumed so far (compressed bytes for gzip): for progress against the file size.
  uint64_t file_offset() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  bool fill();  // reads more data after end_; false at EOF

  std::filesystem::path path_;
  void* gz_ = nullptr;  // gzFile
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  bool first_ = true;
  uint64_t line_no_ = 0;
};

}  // namespace pwab::construct
