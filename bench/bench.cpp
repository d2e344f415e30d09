#include "bench.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace pwab::bench {

std::vector<Benchmark>& registry() {
  static std::vector<Benchmark> r;
  return r;
}

int add(Benchmark b) {
  registry().push_back(std::move(b));
  return 0;
}

double time_command(const std::string& cmd) {
  auto start = std::chrono::steady_clock::now();
  int rc = std::system(cmd.c_str());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc != 0) throw std::runtime_error("command failed: " + cmd);
  return s;
}

}  // namespace pwab::bench
