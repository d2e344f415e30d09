// File helpers against hostile file systems (issue 19): atomic writes never write through a file or symlink planted
// at a temp name, and the private cache directory refuses a /tmp parent another user could control.
#include "core/sys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "support/test_support.h"

namespace pwab {
namespace {

namespace fs = std::filesystem;

//! Sets an environment variable for the scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Sys, AtomicWritesNeverFollowAPlantedTempFile) {
  test::TempDir dir;
  const fs::path victim = dir / "victim.txt", target = dir / "manifest.json";
  write_file_atomic(victim, "precious");
  // Every name the old code used, and the first names the new one tries, hold a symlink to the victim.
  fs::create_symlink(victim, dir / "manifest.json.tmp");
  for (int n = 0; n < 4; ++n)
    fs::create_symlink(victim, dir / ("manifest.json.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(n)));
  write_file_atomic(target, "{\"ok\": true}");
  EXPECT_EQ(read_file(target), "{\"ok\": true}");
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(dir / "manifest.json.tmp"));  // left alone, not written through
  // The temp a writer such as torch fills by name is a fresh, private, regular file.
  const fs::path tmp = create_temp_beside(target, "ckpt");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(tmp)));
  EXPECT_EQ(fs::file_size(tmp), 0u);
  struct stat st {};
  ASSERT_EQ(::stat(tmp.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Sys, AFailedAtomicWriteLeavesNoTempAndNamesTheFile) {
  test::TempDir dir;
  const fs::path into_missing = dir / "not-a-dir";
  write_file_atomic(into_missing, "x");  // a file where a directory is expected below
  try {
    write_file_atomic(into_missing / "f.json", "{}");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not-a-dir"), std::string::npos) << e.what();
  }
}

TEST(Sys, PrivateCacheDirIsPerUserAndRefusesWhatOthersCouldPlant) {
  test::TempDir dir;
  {
    ScopedEnv xdg("XDG_CACHE_HOME", (dir / "xdg").c_str());
    EXPECT_EQ(private_cache_dir("index"), dir / "xdg" / "pwab" / "index");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", nullptr);
  ScopedEnv tmpdir("TMPDIR", dir.path().c_str());  // where fs::temp_directory_path() points
  const fs::path mine = dir / ("pwab-" + std::to_string(::geteuid()));
  EXPECT_EQ(private_cache_dir("agents"), mine / "agents");
  struct stat st {};
  ASSERT_EQ(::lstat(mine.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  fs::permissions(mine, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  EXPECT_THROW(private_cache_dir("agents"), Error);  // open to the group
  fs::remove_all(mine);
  fs::create_directories(dir / "elsewhere");
  fs::create_symlink(dir / "elsewhere", mine);
  try {
    private_cache_dir("agents");
    FAIL() << "a symlink was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pwab
