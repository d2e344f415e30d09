// Start-up benchmarks. cli/start_*: the wall time of whole `pwab` processes that need no model -- process start,
// argument parsing, the work itself and exit -- on the mini synthetic dataset, whose work is small enough that
// start-up dominates. The target is < 50 ms each: such commands never map libtorch (src/models/, the one seam);
// cli/start_version loads the libtorch plugin and shows what every command used to pay.
#include <fmt/format.h>

#include <algorithm>

#include "bench.h"

namespace fs = std::filesystem;
using namespace pwab::bench;

namespace {

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path root(const Context& ctx) { return ctx.out_dir / "start"; }
fs::path mini(const Context& ctx) { return root(ctx) / "mini"; }
fs::path run_dir(const Context& ctx) { return root(ctx) / "run"; }

// Untimed: the mini dataset with its index, recommender and fastText caches, and a small scored run.
void setup(const Context& ctx) {
  const std::string pwab = pwab_binary(ctx).string();
  if (fs::exists(run_dir(ctx) / "summary.json")) return;
  fs::remove_all(root(ctx));
  time_command(pwab + " data synth --out " + mini(ctx).string() + " --scale mini --seed 1 > /dev/null 2>&1");
  time_command(pwab + " rec train " + mini(ctx).string() + " --epochs 2 --eval-every 0 > /dev/null 2>&1");
  time_command(pwab + " run --quiet --data " + mini(ctx).string() + " --out " + run_dir(ctx).string() +
               " > /dev/null 2>&1");
}

//! One benchmark per command: `args` after the binary, `expect` in its output (checked on the last run).
void add_start(const std::string& name, const std::string& what, std::function<std::string(const Context&)> args,
               std::string expect) {
  auto command = [args](const Context& ctx) { return pwab_binary(ctx).string() + " " + args(ctx); };
  add({"cli/start_" + name, what, 20, setup,
       [command](const Context& ctx, std::vector<Extra>&) {
         return time_command(command(ctx) + " > " + (root(ctx) / "out.txt").string() + " 2>&1");
       },
       [command, expect](const Context& ctx) -> std::string {
         std::string out = run_capture(command(ctx) + " 2>&1");
         return out.find(expect) != std::string::npos ? "" : "output lacks '" + expect + "': " + out.substr(0, 300);
       }});
}

const int registered = [] {
  add_start("help", "pwab --help", [](const Context&) { return std::string("--help"); }, "Subcommands");
  add_start("data_validate", "pwab data validate on the mini dataset",
            [](const Context& ctx) { return "data validate " + mini(ctx).string(); }, "# Users");
  add_start("search", "one BM25 query on the mini dataset's cached index",
            [](const Context& ctx) { return "search --data " + mini(ctx).string() + " --k 5 'wireless headphones'"; },
            "q0\t1\t");
  add_start("score", "pwab score of a 109-task run (bootstrap intervals)",
            [](const Context& ctx) { return "score " + run_dir(ctx).string(); }, "Review similarity");
  // Loaded, whichever libtorch: its line shows the threads, not "(unavailable ...)".
  add_start("version", "pwab version: loads the libtorch plugin (the cost the others no longer pay)",
            [](const Context&) { return std::string("version"); }, "(intra-op threads");
  return 0;
}();

// Issue 31: `pwab data validate MINI` against `pwab version` (which loads the libtorch plugin), the two
// commands run one after the other in every timed run so that both see the same machine.
const int kValidateVsVersion = add({
    "cli/validate_mini_vs_version",
    "pwab data validate MINI (whole command) vs the anchor pwab version (loads libtorch), interleaved",
    10,
    setup,
    [](const Context& ctx, std::vector<Extra>& extras) {
      static std::vector<double> validate_times, version_times;
      const std::string pwab = pwab_binary(ctx).string();
      const std::string sink = " > " + (root(ctx) / "out.txt").string() + " 2>&1";
      double s = time_command(pwab + " data validate " + mini(ctx).string() + sink);
      double v = time_command(pwab + " version" + sink);
      validate_times.push_back(s);
      version_times.push_back(v);
      auto median = [](std::vector<double> x) {
        std::sort(x.begin(), x.end());
        return x[x.size() / 2];
      };
      extras.push_back({"pwab version (median)", median(version_times), "s"});
      extras.push_back({"validate / version", median(validate_times) / median(version_times), "x"});
      return s;
    },
    [](const Context& ctx) -> std::string {
      std::string out = run_capture(pwab_binary(ctx).string() + " data validate " + mini(ctx).string() + " 2>&1");
      return out.find("Checks: 0 errors") != std::string::npos ? "" : "validate output: " + out.substr(0, 300);
    },
});

}  // namespace
