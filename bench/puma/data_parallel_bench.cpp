// Data-parallel PUMA training (issue 20): the tiny preset's SFT on the mini dataset (60 train tasks, one epoch) as one
// process and as two ranks on this machine (torchrun's variables, Gloo on loopback), both through `pwab puma sft`.
// Extras: tokens/s of each, and for the two ranks the time per optimizer step spent in collectives and the bytes
// all-reduced per step. The check: both end with the same training loss (to float tolerance).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "core/sys.h"

namespace pwab::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path root(const Context& ctx) { return ctx.out_dir / "puma-ranks"; }
std::string pwab(const Context& ctx) { return (ctx.self.parent_path().parent_path() / "pwab").string(); }
std::string args(const Context& ctx, const std::string& out) {
  return fmt::format(" --data {} --out {} --train-limit 60 --embedder hashing --sft-epochs 1",
                     (root(ctx) / "mini").string(), (root(ctx) / out).string());
}
Json one_rank, two_ranks;

Json train_report(const Context& ctx, const std::string& out) {
  return Json::parse(read_file(root(ctx) / out / "sft" / "train.json"));
}

const int kRanks = add({
    "puma/data_parallel",
    "tiny-preset SFT, 60 mini train tasks, 1 epoch, through `pwab puma sft`: 1 process (2 threads) vs 2 ranks "
    "(1 thread each, Gloo on loopback); extras: tokens/s of each, collective seconds and MB all-reduced per step",
    3,
    [](const Context& ctx) {
      const fs::path mini = root(ctx) / "mini";
      if (!fs::exists(mini / "user_instructions.json"))
        time_command(fmt::format("{} data synth --out {} --scale mini --seed 5 > /dev/null", pwab(ctx), mini.string()));
      time_command(fmt::format("{} rec train {} --epochs 1 --eval-every 0 > /dev/null 2>&1", pwab(ctx), mini.string()));
      for (const char* out : {"one", "two"})
        time_command(fmt::format("{} puma prepare{} > /dev/null 2>&1", pwab(ctx), args(ctx, out)));
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      for (const char* out : {"one", "two"}) fs::remove_all(root(ctx) / out / "sft");
      const double one_s = time_command(
          fmt::format("OMP_NUM_THREADS=2 {} puma sft{} > /dev/null 2>&1", pwab(ctx), args(ctx, "one")));
      const int port = 29700;
      auto rank = [&](int r) {
        return fmt::format("RANK={} WORLD_SIZE=2 MASTER_PORT={} OMP_NUM_THREADS=1 {} puma sft{} > {} 2>&1", r, port,
                           pwab(ctx), args(ctx, "two"), (root(ctx) / fmt::format("rank{}.log", r)).string());
      };
      const double two_s = time_command(fmt::format("({}) & {}; wait", rank(1), rank(0)));
      one_rank = train_report(ctx, "one");
      two_ranks = train_report(ctx, "two");
      const double steps = std::max(1.0, two_ranks["steps"].get<double>());
      extras.push_back({"tokens_per_s_1_process", one_rank["tokens_per_s"].get<double>(), "1/s"});
      extras.push_back({"tokens_per_s_2_ranks", two_ranks["tokens_per_s"].get<double>(), "1/s"});
      extras.push_back({"collective_ms_per_step", 1000 * two_ranks["comm_seconds"].get<double>() / steps, "ms"});
      extras.push_back({"mb_all_reduced_per_step", two_ranks["bytes_all_reduced"].get<double>() / steps / 1e6, "MB"});
      extras.push_back({"steps", steps, ""});
      return one_s + two_s;
    },
    [](const Context&) -> std::string {
      const double a = one_rank.value("train_loss", 0.0), b = two_ranks.value("train_loss", -1.0);
      if (two_ranks.value("ranks", 0) != 2) return "the two-rank run did not train on 2 ranks";
      return std::abs(a - b) <= 1e-3 * std::abs(a) ? "" : fmt::format("training losses differ: {} vs {}", a, b);
    },
    /*warm_up=*/false,
});

}  // namespace
}  // namespace pwab::bench
