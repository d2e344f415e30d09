#include "support/test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

extern char** environ;

#include "support/missing_tool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace pwab::test {
namespace fs = std::filesystem;

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  path_ = fs::temp_directory_path() /
          ("pwab-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(rd()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path fixture(std::string_view relative) { return fs::path(PWAB_TEST_FIXTURES) / relative; }
fs::path shared(std::string_view relative) { return fs::path(PWAB_SHARED_DIR) / relative; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, std::string_view text) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

void copy_dir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing);
}

bool under_ci() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  std::string value(ci);
  return !value.empty() && value != "false" && value != "0";
}

int run_pwab(const std::string& args, std::string* output, std::string* errors) {
  TempDir out_dir;
  std::string cmd = std::string(PWAB_BINARY) + " " + args + " > " + (out_dir / "out").string() + " 2> " +
                    (out_dir / "err").string();
  int status = std::system(cmd.c_str());
  if (output) *output = read_text(out_dir / "out");
  if (errors) *errors = read_text(out_dir / "err");
  return WEXITSTATUS(status);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("free_port: cannot bind a socket on 127.0.0.1");
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace pwab::test

namespace pwab::test {

PwabProcess::PwabProcess(const std::vector<std::string>& args, const std::string& stderr_file) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  if (!stderr_file.empty())
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {PWAB_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&pid_, PWAB_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    pid_ = -1;
    throw std::runtime_error("cannot start " + std::string(PWAB_BINARY));
  }
  out_ = ::fdopen(fds[0], "r");
  char line[512] = {};
  if (std::fgets(line, sizeof line, out_)) url_ = line;
  while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
}

PwabProcess::~PwabProcess() {
  if (pid_ > 0) stop();
  if (out_) std::fclose(out_);
}

void PwabProcess::kill_hard() {
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

int PwabProcess::stop() {
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace pwab::test
