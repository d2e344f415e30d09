#include "construct/raw_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace pwab::construct {
namespace fs = std::filesystem;

namespace {
constexpr std::size_t kChunk = 1u << 20;     // bytes asked of zlib per read
constexpr std::size_t kPadding = 64;         // SIMDJSON_PADDING: readable slack after every line
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::string file_category(const fs::path& file) {
  std::string name = file.filename().string();
  for (std::string_view suffix : {".gz", ".jsonl", ".json"})
    if (ends_with(name, suffix)) name.resize(name.size() - suffix.size());
  if (name.rfind("meta_", 0) == 0) name.erase(0, 5);
  return name;
}

LineReader::LineReader(const fs::path& file) : path_(file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw Error(file.string() + ": is a directory, not a JSONL file");
  gzFile gz = gzopen(file.c_str(), "rb");
  if (!gz) throw Error(file.string() + ": cannot open: " + std::strerror(errno));
  gzbuffer(gz, 256u << 10);
  gz_ = gz;
  buf_.assign(kChunk * 2 + kPadding, '\0');
}

LineReader::~LineReader() {
  if (gz_) gzclose_r(static_cast<gzFile>(gz_));
}

uint64_t LineReader::file_offset() const {
  z_off_t off = gzoffset(static_cast<gzFile>(gz_));
  return off < 0 ? 0 : static_cast<uint64_t>(off);
}

bool LineReader::fill() {
  if (eof_) return false;
  // Keep the unread tail at the front, then make room for one more chunk (the buffer grows only while a single
  // line is longer than what it holds, up to kMaxLineBytes plus a chunk).
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() < end_ + kChunk + kPadding) buf_.resize(end_ + kChunk + kPadding, '\0');
  int n = gzread(static_cast<gzFile>(gz_), buf_.data() + end_, static_cast<unsigned>(kChunk));
  if (n < 0) {
    int code = 0;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &code);
    throw Error(path_.string() + ": read error after line " + std::to_string(line_no_) + ": " +
                (msg && *msg ? msg : "unknown") + " (corrupt or truncated gzip data?)");
  }
  if (n == 0) {
    // zlib reports a gzip stream cut short only through gzerror, after a read that returned what it had.
    int code = 0;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &code);
    if (code != Z_OK && code != Z_STREAM_END)
      throw Error(path_.string() + ": read error after line " + std::to_string(line_no_) + ": " +
                  (msg && *msg ? msg : "unknown") + " (corrupt or truncated gzip data?)");
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(n);
  std::memset(buf_.data() + end_, 0, kPadding);
  return true;
}

bool LineReader::next(std::string_view& line, bool& overlong) {
  overlong = false;
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = begin_ < end_ ? std::memchr(start, '\n', end_ - begin_) : nullptr;
    std::size_t len;
    if (nl) {
      len = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
      if (len > kMaxLineBytes) {  // complete but too long: skipped like one whose end is still unread
        ++line_no_;
        begin_ += len + 1;
        line = {};
        overlong = true;
        return true;
      }
    } else if (end_ - begin_ > kMaxLineBytes) {
      // Skip to the end of this overlong line without keeping it.
      ++line_no_;
      for (;;) {
        begin_ = end_;
        if (!fill()) break;
        const void* p = std::memchr(buf_.data(), '\n', end_);
        if (p) {
          begin_ = static_cast<std::size_t>(static_cast<const char*>(p) - buf_.data()) + 1;
          break;
        }
      }
      line = {};
      overlong = true;
      return true;
    } else if (fill()) {
      continue;
    } else if (begin_ < end_) {
      len = end_ - begin_;  // the last line has no newline
      start = buf_.data() + begin_;
    } else {
      return false;
    }
    start = buf_.data() + begin_;
    ++line_no_;
    begin_ += len + (nl ? 1 : 0);
    std::string_view l(start, len);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (first_) {
      first_ = false;
      if (l.substr(0, 3) == "\xEF\xBB\xBF") l.remove_prefix(3);
    }
    std::size_t i = 0;
    while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
    if (i == l.size()) continue;  // blank
    line = l;
    return true;
  }
}

}  // namespace pwab::construct
