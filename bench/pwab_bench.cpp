// pwab-bench: runs the registered benchmarks, prints `name<TAB>run<TAB>seconds` rows (results.tsv) and a
// Markdown summary (summary.md) with median/min times and extras, for docs/performance.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>
#include <sys/utsname.h>
#include <thread>

#include "bench.h"

using namespace pwab::bench;

namespace {
std::string machine() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  utsname u{};
  uname(&u);
  return fmt::format("{}, {} hardware threads, {} {}", cpu, std::thread::hardware_concurrency(), u.sysname, u.release);
}
}  // namespace

int main(int argc, char** argv) {
  // Child-process hooks (e.g. --measure-load DIR) are handled by the benchmarks themselves.
  extern int bench_child_main(int argc, char** argv);
  if (int rc = bench_child_main(argc, argv); rc >= 0) return rc;

  CLI::App app{"pwab-bench: pwab's benchmarks"};
  std::string out = "build/bench", filter = ".*";
  bool list = false;
  app.add_option("--out", out, "Directory for results and cached inputs");
  app.add_option("--filter", filter, "Regex over benchmark names");
  app.add_flag("--list", list, "List the benchmarks and exit");
  CLI11_PARSE(app, argc, argv);

  Context ctx{out, std::filesystem::canonical("/proc/self/exe")};
  std::filesystem::create_directories(ctx.out_dir);
  std::regex re(filter);
  std::ofstream tsv(ctx.out_dir / "results.tsv");
  std::string summary = fmt::format("Machine: {}\n\n| benchmark | runs | median s | min s | extras |\n|---|---|---|---|---|\n", machine());
  int failures = 0;
  for (auto& b : registry()) {
    if (!std::regex_search(b.name, re)) continue;
    if (list) {
      std::cout << b.name << "\t" << b.description << "\n";
      continue;
    }
    std::cerr << "[bench] " << b.name << ": setup\n";
    if (b.setup) b.setup(ctx);
    std::vector<Extra> extras;
    std::vector<double> times;
    for (int r = b.warm_up ? 0 : 1; r <= b.runs; ++r) {  // run 0 is the warm-up
      extras.clear();
      double s = b.run(ctx, extras);
      if (r == 0) continue;
      times.push_back(s);
      tsv << b.name << "\t" << r << "\t" << s << "\n";
      std::cout << b.name << "\t" << r << "\t" << fmt::format("{:.4f}", s) << "\n";
    }
    std::string problem = b.check ? b.check(ctx) : "";
    if (!problem.empty()) {
      ++failures;
      std::cerr << "[bench] " << b.name << ": WRONG RESULT: " << problem << "\n";
    }
    std::sort(times.begin(), times.end());
    std::string extra_text;
    for (const auto& e : extras) extra_text += fmt::format("{}{} = {:.3g} {}", extra_text.empty() ? "" : "; ", e.name, e.value, e.unit);
    summary += fmt::format("| {} | {} | {:.3f} | {:.3f} | {}{} |\n", b.name, times.size(), times[times.size() / 2],
                           times.front(), extra_text, problem.empty() ? "" : " **WRONG: " + problem + "**");
  }
  if (list) return 0;
  std::ofstream(ctx.out_dir / "summary.md") << summary;
  std::cout << "\n" << summary;
  return failures ? 1 : 0;
}
