// test/support/test_support.h: temp directories, fixture paths and small file helpers for every test area.
#pragma once
#include <gtest/gtest.h>

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

//! True under CI (the environment variable CI set and not "false" or "0", as .ci/run runs): there every tool a
//! test needs has been installed by scripts/install-deps.sh, so a missing one is a failure, not a skip.
bool under_ci();

}  // namespace pwab::test

//! Skips the current test because a tool it needs is missing (`reason` says which), except under CI, where the
//! same condition fails the test so that a green CI always means the test ran.
#define PWAB_SKIP_MISSING_TOOL(reason)                                                                   \
  do {                                                                                                    \
    if (::pwab::test::under_ci())                                                                         \
      FAIL() << (reason) << " (a failure under CI: scripts/install-deps.sh installs it)";                 \
    else                                                                                                  \
      GTEST_SKIP() << (reason);                                                                           \
  } while (0)
