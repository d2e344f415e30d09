// Data benchmarks: synthesizing the full-scale dataset, loading it (wall time and peak RSS, measured in a
// fresh child process), and python3's json.load of the same files as the anchor.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "bench.h"
#include "core/sys.h"
#include "data/loader.h"
#include "data/synth.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

fs::path full_dir(const Context& ctx) { return full_dataset_dir(ctx); }
void ensure_full_dataset(const Context& ctx) { full_dataset_dir(ctx); }

struct LoadResult {
  double seconds = 0, rss_mb = 0;
  std::string counts;
};
LoadResult last_load;
std::vector<double> pwab_load_times;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

const int kSynth = add({
    "data/synth_full",
    "pwab data synth --scale full: generate and write the Table 2-scale dataset",
    3,
    nullptr,
    [](const Context& ctx, std::vector<Extra>& extras) {
      fs::path dir = ctx.out_dir / "data" / "synth-timing";
      Stopwatch clock;
      data::SynthOptions o;
      o.scale = data::SynthScale::kFull;
      data::synthesize_to(o, dir);
      double s = clock.seconds();
      std::uintmax_t bytes = 0;
      for (const auto& e : fs::directory_iterator(dir)) bytes += fs::file_size(e.path());
      extras.push_back({"written", static_cast<double>(bytes) / 1e6, "MB"});
      return s;
    },
    [](const Context& ctx) -> std::string {
      fs::path dir = ctx.out_dir / "data" / "synth-timing";
      std::string problem = fs::exists(dir / "user_instructions.json") ? "" : "no user_instructions.json written";
      fs::remove_all(dir);
      return problem;
    },
});

const int kLoad = add({
    "data/load_full",
    "load the full synthetic dataset (fresh process; wall time of load_dataset and peak RSS)",
    5,
    ensure_full_dataset,
    [](const Context& ctx, std::vector<Extra>& extras) {
      std::string out = run_capture(ctx.self.string() + " --measure-load " + full_dir(ctx).string());
      std::istringstream in(out);
      in >> last_load.seconds >> last_load.rss_mb;
      std::getline(in, last_load.counts);
      pwab_load_times.push_back(last_load.seconds);
      extras.push_back({"peak RSS", last_load.rss_mb, "MB"});
      return last_load.seconds;
    },
    [](const Context&) -> std::string {
      // The full scale's fixed counts: products, users, train and test instructions.
      if (last_load.counts.find(" 35772 1000 6896 2174 ") == std::string::npos)
        return "unexpected dataset counts:" + last_load.counts;
      return "";
    },
});

double python_median = 0;

const int kPython = add({
    "data/load_python_json",
    "anchor: python3 json.load of the same files (process start included, ~0.02 s)",
    3,
    ensure_full_dataset,
    [](const Context& ctx, std::vector<Extra>& extras) {
      std::string cmd = "python3 -c 'import json,glob,sys; d=[json.load(open(f)) for f in sorted(glob.glob(sys.argv[1]+\"/*.json\"))]' " +
                        full_dir(ctx).string();
      double s = time_command(cmd);
      static std::vector<double> times;
      times.push_back(s);
      python_median = median(times);
      if (!pwab_load_times.empty())
        extras.push_back({"python / pwab load time", python_median / median(pwab_load_times), "x"});
      return s;
    },
    nullptr,
});

}  // namespace

// Child-process entry: `pwab-bench --measure-load DIR` prints "seconds peak_rss_mb counts..." and exits.
int bench_child_main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--measure-load") == 0) {
    Stopwatch clock;
    data::Dataset ds = data::load_dataset(argv[2]);
    double s = clock.seconds();
    std::size_t behaviours = 0;
    for (const auto& u : ds.users()) behaviours += u.behaviours.size();
    std::printf("%.6f %.1f %zu %zu %zu %zu %zu\n", s, static_cast<double>(peak_rss_bytes()) / 1e6, ds.products().size(),
                ds.users().size(), ds.tasks(data::Split::kTrain).size(), ds.tasks(data::Split::kTest).size(), behaviours);
    return 0;
  }
  return -1;
}
