// test/support/test_support.h: temp directories, fixture paths and small file helpers for every test area.
#pragma once
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace pwab::test {

//! A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

//! test/fixtures/<relative>
std::filesystem::path fixture(std::string_view relative);
//! ../shared/<relative> beside the checkout (reference data); tests skip when it is absent.
std::filesystem::path shared(std::string_view relative);

std::string read_text(const std::filesystem::path& p);
void write_text(const std::filesystem::path& p, std::string_view text);
//! Copies every file of `from` into `to` (created).
void copy_dir(const std::filesystem::path& from, const std::filesystem::path& to);

//! Runs the built `pwab` binary (PWAB_BINARY) with `args`, a shell command-line tail, capturing its stdout and
//! stderr; returns the exit status.
int run_pwab(const std::string& args, std::string* output = nullptr, std::string* errors = nullptr);

//! The built `pwab` binary with `args` (e.g. {"serve", "--port", "0", ...}) in a child process, for commands that
//! serve until stopped: the URL they print alone on stdout's first line is read at once. Stopped (SIGTERM) on
//! destruction.
class PwabProcess {
 public:
  //! `stderr_file`: where the child's log goes (empty = this process's stderr).
  explicit PwabProcess(const std::vector<std::string>& args, const std::string& stderr_file = "");
  ~PwabProcess();
  PwabProcess(const PwabProcess&) = delete;
  PwabProcess& operator=(const PwabProcess&) = delete;
  //! The first line of its stdout ("" when it exited before writing one).
  const std::string& url() const { return url_; }
  //! SIGKILL: no chance to finish anything.
  void kill_hard();
  //! SIGTERM, then the exit code (-1 when killed by a signal).
  int stop();

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::string url_;
};

//! A TCP port on 127.0.0.1 that nobody listens on now (the kernel's pick for a socket bound to port 0).
int free_port();

}  // namespace pwab::test
