#include "bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "data/synth.h"

namespace pwab::bench {

std::vector<Benchmark>& registry() {
  static std::vector<Benchmark> r;
  return r;
}

int add(Benchmark b) {
  registry().push_back(std::move(b));
  return 0;
}

std::filesystem::path full_dataset_dir(const Context& ctx) {
  std::filesystem::path dir = ctx.out_dir / "data" / "full";
  std::string marker = "seed 1, generator " + std::to_string(data::kSynthVersion) + "\n";
  std::ifstream in(dir / ".complete");
  std::string seen((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (seen == marker) return dir;
  std::fprintf(stderr, "[bench] synthesizing the full dataset into %s\n", dir.c_str());
  data::SynthOptions o;
  o.scale = data::SynthScale::kFull;
  data::synthesize_to(o, dir);
  std::ofstream(dir / ".complete") << marker;
  return dir;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::string run_capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe.get())) out += buf;
  return out;
}

double time_command(const std::string& cmd) {
  auto start = std::chrono::steady_clock::now();
  int rc = std::system(cmd.c_str());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc != 0) throw std::runtime_error("command failed: " + cmd);
  return s;
}

}  // namespace pwab::bench
