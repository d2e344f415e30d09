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
//! Writes a file atomically (temp file + rename), creating parent directories. The temp file is created
//! exclusively (O_EXCL | O_NOFOLLOW, a fresh name beside `path`), so a file or symlink planted there is never
//! written through; a failed write removes it and throws pwab::Error naming the file.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
//! Appends to a file (created with its parent directories when missing); throws pwab::Error naming the file.
void append_file(const std::filesystem::path& path, std::string_view content);
//! Number of hardware threads, at least 1.
unsigned hardware_threads();
//! A path beside `target` ("<name>.<what>-<pid>-<n>") that no other process or thread uses: where to write a
//! file before renaming it into place.
std::filesystem::path temp_path_beside(const std::filesystem::path& target, std::string_view what);
//! temp_path_beside, created empty and exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600) so that a writer that
//! opens it by name (torch's save_to) writes a file this process owns, never through a planted symlink.
std::filesystem::path create_temp_beside(const std::filesystem::path& target, std::string_view what);
//! A directory only this user may use, for caches that have no place of their own: $XDG_CACHE_HOME/pwab/NAME,
//! else $HOME/.cache/pwab/NAME, else /tmp/pwab-UID/NAME. The /tmp parent is created 0700 and must be a real
//! directory (no symlink) owned by this user with no group or other access, else pwab::Error says what is wrong:
//! a shared /tmp path another user could have planted is never loaded from.
std::filesystem::path private_cache_dir(std::string_view name);
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
