// src/core/sys.h: process facts (peak memory, wall clock) and file helpers.
#pragma once
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace pwab {

//! Peak resident set size of this process in bytes (VmHWM), 0 if unknown.
std::size_t peak_rss_bytes();

//! Seconds since construction, monotonic.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

//! Reads a whole file; throws pwab::Error naming the file if it cannot be read.
std::string read_file(const std::filesystem::path& path);
//! Writes a file atomically (temp file + rename), creating parent directories.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
//! Appends to a file (created with its parent directories when missing); throws pwab::Error naming the file.
void append_file(const std::filesystem::path& path, std::string_view content);
//! Number of hardware threads, at least 1.
unsigned hardware_threads();
//! A path beside `target` ("<name>.<what>-<pid>-<n>") that no other process or thread uses: where to write a
//! file before renaming it into place.
std::filesystem::path temp_path_beside(const std::filesystem::path& target, std::string_view what);
//! An exclusive advisory lock (flock) on a lock file, held for the object's lifetime: other processes and
//! threads that lock the same path wait. The file is created (with its parent directories) if missing and left
//! behind. Throws pwab::Error naming the file if it cannot be opened.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

//! The current time as ISO 8601 UTC, e.g. "2026-11-22T04:05:06Z".
std::string utc_now_iso();

}  // namespace pwab
