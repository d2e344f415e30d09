#include "core/sys.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace pwab {

std::size_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream in(line.substr(6));
      std::size_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string());
  std::string out;
  in.seekg(0, std::ios::end);
  out.resize(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  if (!in) throw Error("cannot read " + path.string());
  return out;
}

namespace {

std::string fmt_octal(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%03o", mode);
  return buf;
}

//! Opens a fresh temp file beside `target` exclusively; returns its descriptor and path.
std::pair<int, std::filesystem::path> open_temp_beside(const std::filesystem::path& target, std::string_view what,
                                                       mode_t mode) {
  for (int attempt = 0;; ++attempt) {
    std::filesystem::path tmp = temp_path_beside(target, what);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return {fd, tmp};
    if (errno != EEXIST || attempt > 100)
      throw Error("cannot create " + tmp.string() + ": " + std::strerror(errno));
  }
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  auto [fd, tmp] = open_temp_beside(path, "tmp", 0644);
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error("cannot write " + path.string() + ": " + std::strerror(err) + (err == ENOSPC ? " (disk full)" : ""));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + ": " + std::strerror(err));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + ": " + ec.message());
  }
}

void append_file(const std::filesystem::path& path, std::string_view content) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out) throw Error("cannot append to " + path.string());
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw Error("cannot write " + path.string() + " (disk full?)");
}

unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

std::filesystem::path temp_path_beside(const std::filesystem::path& target, std::string_view what) {
  static std::atomic<uint64_t> counter{0};
  return target.parent_path() / (target.filename().string() + "." + std::string(what) + "-" +
                                  std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)));
}

std::filesystem::path create_temp_beside(const std::filesystem::path& target, std::string_view what) {
  auto [fd, tmp] = open_temp_beside(target, what, 0600);
  ::close(fd);
  return tmp;
}

std::filesystem::path private_cache_dir(std::string_view name) {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "pwab" / name;
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "pwab" / name;
  const fs::path mine = fs::temp_directory_path() / ("pwab-" + std::to_string(::geteuid()));
  if (::mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error("cannot create the private directory " + mine.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(mine.c_str(), &st) != 0) throw Error("cannot inspect " + mine.string() + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw Error(mine.string() + " is not a directory (a symlink or file planted there?); remove it or set "
                "XDG_CACHE_HOME");
  if (st.st_uid != ::geteuid())
    throw Error(mine.string() + " belongs to another user (uid " + std::to_string(st.st_uid) +
                "); remove it or set XDG_CACHE_HOME");
  if ((st.st_mode & 077) != 0)
    throw Error(mine.string() + " is open to other users (mode " + fmt_octal(st.st_mode & 0777) +
                "); chmod 700 it or set XDG_CACHE_HOME");
  return mine / name;
}

FileLock::FileLock(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open lock file " + path.string());
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      ::close(fd_);
      throw Error("cannot lock " + path.string());
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace pwab
