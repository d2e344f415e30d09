// Multi-turn online RL (issue 28 item 4, docs/puma.md "Online RL"): from the CPU experiment's SFT model
// (puma/cpu_experiment's pipeline directory, trained here first when it is missing), `pwab puma rl --rl-track multi`
// plays the puma agent against the scripted user and learns from each episode's benchmark score; then the SFT and
// the RL model both run the multi-turn track as the puma agent (`pwab run --track multi --user-sim scripted
// --local-model`), and the paired difference of their overall R. Acc is reported, whether or not it is above zero.
// Sized for a 2-core machine: episodes of at most kSteps steps (an SFT model trained without multi-turn examples
// never stops, so every episode ran to the cap, two generations a step), 50 iterations of 16 tasks × 4 episodes,
// and the first kTasks test tasks (one episode at a time: ~1 s a step on 2 cores).
// Extras: RL seconds, rollouts/s, the runs' scores by type and the difference's interval.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "core/sys.h"
#include "metrics/metrics.h"
#include "runner/read_run.h"

namespace pwab::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path root(const Context& ctx) { return ctx.out_dir / "puma-rl-multi"; }
fs::path cpu_run(const Context& ctx) { return ctx.out_dir / "puma-cpu" / "run"; }
Json read_json(const fs::path& file) { return Json::parse(read_file(file)); }
constexpr int kSteps = 3, kTasks = 300;

const int registered = add({
    "puma/rl_multi_turn",
    "multi-turn online RL from the cpu preset's SFT model (the scripted user), then SFT and SFT + RL on the "
    "multi-turn track (first 300 test tasks, 3 steps) as the puma agent: the paired difference of overall R. Acc",
    1,
    [](const Context& ctx) {
      fs::create_directories(root(ctx));
      const fs::path data = full_dataset_dir(ctx);
      const std::string pwab = pwab_binary(ctx).string();
      if (!fs::exists(cpu_run(ctx) / "sft" / "eval" / ".done"))  // the CPU experiment's SFT, when it has not run
        time_command(fmt::format("{} puma eval-sft --data {} --out {} --preset cpu > {} 2>&1", pwab, data.string(),
                                 cpu_run(ctx).string(), (root(ctx) / "sft-log.txt").string()));
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      const fs::path data = full_dataset_dir(ctx), out = root(ctx) / "pipeline";
      const std::string pwab = pwab_binary(ctx).string(), log = (root(ctx) / "log.txt").string();
      fs::remove_all(out);
      const double seconds =
          time_command(fmt::format("{} puma rl --data {} --out {} --reuse-from {} --preset cpu --rl-track multi "
                                   "--rl-max-steps {} --rl-iterations 50 --rl-tasks 16 --rl-group 4 --rl-minibatches 1 "
                                   "--rl-eval-tasks 0 > {} 2>&1",
                                   pwab, data.string(), out.string(), cpu_run(ctx).string(), kSteps, log));
      for (const char* which : {"sft", "rl"}) {
        const fs::path run = root(ctx) / (std::string("multi-") + which);
        fs::remove_all(run);
        time_command(fmt::format("{} run --quiet --data {} --track multi --user-sim scripted --agent puma --model "
                                 "puma-{} --local-model {} --agent-opt tokenizer={} --memory-length 20 "
                                 "--agent-opt memory_tokens=64 --agent-opt recommend_memory=numbered "
                                 "--agent-opt recommend_memory_tokens=128 --max-steps {} --tasks 0:{} --out {} >> {} "
                                 "2>&1",
                                 pwab, data.string(), which, (out / which / "model").string(),
                                 (out / which / "model").string(), kSteps, kTasks, run.string(), log));
        Json s = read_json(run / "summary.json");
        extras.push_back({std::string(which) + "_multi_r_acc", s["groups"]["overall"]["r_acc"]["value"].get<double>(), ""});
        for (const char* type : {"search", "recommend", "review"})
          extras.push_back({std::string(which) + "_multi_r_acc_" + type,
                            s["groups"][type]["r_acc"]["value"].get<double>(), ""});
        extras.push_back({std::string(which) + "_multi_avg_steps",
                          s["groups"]["overall"]["avg_steps"]["value"].get<double>(), ""});
      }
      metrics::Comparison c = metrics::compare(runner::read_run(root(ctx) / "multi-sft").outcomes,
                                               runner::read_run(root(ctx) / "multi-rl").outcomes);
      extras.push_back({"rl_minus_sft_multi_r_acc", c.overall.r_acc.diff.value, ""});
      extras.push_back({"rl_minus_sft_multi_ci_low", c.overall.r_acc.diff.ci_low, ""});
      extras.push_back({"rl_minus_sft_multi_ci_high", c.overall.r_acc.diff.ci_high, ""});
      Json rl = read_json(out / "rl" / "train.json");
      extras.push_back({"rl_seconds", rl.value("seconds", 0.0), "s"});
      extras.push_back({"rl_rollouts_per_s", rl.value("rollouts_per_s", 0.0), "1/s"});
      extras.push_back({"rl_episodes", rl.value("episodes", 0.0), ""});
      return seconds;
    },
    [](const Context& ctx) -> std::string {
      // Reported whatever its sign (issue 28); the check is that both runs scored every test task.
      for (const char* which : {"sft", "rl"}) {
        Json s = read_json(root(ctx) / (std::string("multi-") + which) / "summary.json");
        if (s["groups"]["overall"].value("n_tasks", 0) != kTasks)
          return fmt::format("the {} run scored {} tasks, not {}", which, s["groups"]["overall"].value("n_tasks", 0),
                             kTasks);
      }
      return "";
    },
    /*warm_up=*/false,
});

}  // namespace
}  // namespace pwab::bench
