// test/support/test_support.h: temp directories, fixture paths and small file helpers for every test area.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

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

//! A TCP port on 127.0.0.1 that nobody listens on now (the kernel's pick for a socket bound to port 0).
int free_port();

}  // namespace pwab::test
