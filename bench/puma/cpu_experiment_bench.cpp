// The CPU experiment of docs/puma.md ("A PUMA that learns on a CPU", issue 18): `pwab puma train --preset cpu` on
// the full synthetic dataset, end to end, and the checks that say the method works at this scale:
//   - the whole pipeline (tokenizer … eval-dpo) takes at most 60 minutes;
//   - without SFT (the from-scratch model untrained) search R. Acc is near zero;
//   - after SFT, search R. Acc is at least half of the heuristic teacher's (its labels' queries, `pwab run
//     --agent heuristic`) on the test split;
//   - DPO keeps function accuracy and raises overall R. Acc over SFT with a paired 95% interval above zero.
// Extras: every step's time, SFT and DPO tokens/s, sampling candidates/s, the candidates' tie share and reward
// spread, pairs, DPO's final eval margin, accuracy and KL. One run (~50 min on a 2-core machine).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "core/sys.h"
#include "metrics/metrics.h"
#include "puma/ablate.h"

namespace pwab::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path root(const Context& ctx) { return ctx.out_dir / "puma-cpu"; }
Json read_json(const fs::path& file) { return Json::parse(read_file(file)); }

double teacher_search = 0;  // the heuristic agent's search R. Acc on the test split
double train_seconds = 0;

// DPO − SFT per task on the test split, paired.
metrics::Comparison dpo_minus_sft(const fs::path& run) {
  return metrics::compare(puma::read_fast_test_scores(run / "sft" / "eval"),
                          puma::read_fast_test_scores(run / "dpo" / "eval"));
}

const int registered = add({
    "puma/cpu_experiment",
    "pwab puma train --preset cpu on the full synthetic dataset (≤ 60 min): SFT learns to write queries, DPO adds a "
    "paired-significant gain; extra: per-step times, tokens/s, candidates/s, pairs, margin, KL",
    1,
    [](const Context& ctx) {
      fs::create_directories(root(ctx));
      const fs::path data = full_dataset_dir(ctx);
      const std::string pwab = pwab_binary(ctx).string();
      // the services the pipeline uses, built before the clock starts (a first run would build them itself)
      if (!fs::exists(data / ".pwab-rec")) time_command(fmt::format("{} rec train {} > /dev/null 2>&1", pwab, data.string()));
      const fs::path teacher = root(ctx) / "teacher";
      fs::remove_all(teacher);
      time_command(fmt::format("{} run --quiet --data {} --track single --agent heuristic --out {} > /dev/null 2>&1",
                               pwab, data.string(), teacher.string()));
      teacher_search = read_json(teacher / "summary.json")["groups"]["search"]["r_acc"]["value"].get<double>();
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      const fs::path data = full_dataset_dir(ctx), run = root(ctx) / "run", untrained = root(ctx) / "no-sft";
      const std::string pwab = pwab_binary(ctx).string();
      fs::remove_all(run);
      fs::remove_all(untrained);
      train_seconds = time_command(fmt::format("{} puma train --data {} --out {} --preset cpu > {} 2>&1", pwab,
                                               data.string(), run.string(), (root(ctx) / "log.txt").string()));
      // w/o SFT: the same model untrained, evaluated on the same test split (tokenizer and data reused)
      time_command(fmt::format("{} puma eval-sft --data {} --out {} --preset cpu --sft-epochs 0 --reuse-from {} >> {} "
                               "2>&1",
                               pwab, data.string(), untrained.string(), run.string(), (root(ctx) / "log.txt").string()));
      Json report = read_json(run / "report.json");
      for (auto it = report["seconds"].begin(); it != report["seconds"].end(); ++it)
        extras.push_back({"seconds_" + it.key(), it->get<double>(), "s"});
      extras.push_back({"sft_tokens_per_s", report["sft"]["tokens_per_s"].get<double>(), "tokens/s"});
      extras.push_back({"dpo_tokens_per_s", report["dpo"].value("tokens_per_s", 0.0), "tokens/s"});
      extras.push_back({"sample_candidates_per_s", report["sample"]["candidates_per_s"].get<double>(), "1/s"});
      extras.push_back({"pairs", report["candidates"]["pairs"].get<double>(), ""});
      extras.push_back({"tie_share", report["candidates"]["tie_share"].get<double>(), ""});
      extras.push_back({"reward_spread", report["candidates"]["mean_spread"].get<double>(), ""});
      if (report["dpo"].contains("eval")) {
        extras.push_back({"dpo_eval_margin", report["dpo"]["eval"]["margin"].get<double>(), "nats"});
        extras.push_back({"dpo_eval_accuracy", report["dpo"]["eval"]["accuracy"].get<double>(), ""});
        extras.push_back({"dpo_eval_kl", report["dpo"]["eval"]["kl"].get<double>(), "nats/token"});
      }
      extras.push_back({"teacher_search_r_acc", teacher_search, ""});
      Json none = read_json(untrained / "sft" / "eval" / "fast_test.json");
      extras.push_back({"no_sft_search_r_acc", none["search"]["result_acc"].get<double>(), ""});
      for (const char* which : {"sft", "dpo"}) {
        Json t = read_json(run / which / "eval" / "fast_test.json");
        extras.push_back({std::string(which) + "_function_acc", t["overall"]["function_acc"].get<double>(), ""});
        extras.push_back({std::string(which) + "_r_acc", t["overall"]["result_acc"].get<double>(), ""});
        for (const char* type : {"search", "recommend", "review"})
          extras.push_back({std::string(which) + "_r_acc_" + type, t[type]["result_acc"].get<double>(), ""});
      }
      metrics::Comparison c = dpo_minus_sft(run);
      extras.push_back({"dpo_minus_sft_r_acc", c.overall.r_acc.diff.value, ""});
      extras.push_back({"dpo_minus_sft_ci_low", c.overall.r_acc.diff.ci_low, ""});
      extras.push_back({"dpo_minus_sft_ci_high", c.overall.r_acc.diff.ci_high, ""});
      return train_seconds;
    },
    [](const Context& ctx) -> std::string {
      const fs::path run = root(ctx) / "run";
      std::vector<std::string> problems;
      if (train_seconds > 3600) problems.push_back(fmt::format("the pipeline took {:.0f} s > 3600 s", train_seconds));
      Json none = read_json(root(ctx) / "no-sft" / "sft" / "eval" / "fast_test.json");
      Json sft = read_json(run / "sft" / "eval" / "fast_test.json");
      Json dpo = read_json(run / "dpo" / "eval" / "fast_test.json");
      const double untrained = none["search"]["result_acc"].get<double>();
      if (untrained > 0.05) problems.push_back(fmt::format("w/o SFT search R. Acc {:.3f} > 0.05", untrained));
      const double search = sft["search"]["result_acc"].get<double>();
      if (search < 0.5 * teacher_search)
        problems.push_back(fmt::format("SFT search R. Acc {:.3f} < half the teacher's {:.3f}", search, teacher_search));
      if (dpo["overall"]["function_acc"].get<double>() < sft["overall"]["function_acc"].get<double>())
        problems.push_back("DPO lowered function accuracy");
      metrics::Comparison c = dpo_minus_sft(run);
      if (!(c.overall.r_acc.diff.ci_low > 0))
        problems.push_back(fmt::format("DPO − SFT overall R. Acc {:+.4f} [{:+.4f}, {:+.4f}]: the interval is not above 0",
                                       c.overall.r_acc.diff.value, c.overall.r_acc.diff.ci_low,
                                       c.overall.r_acc.diff.ci_high));
      std::string out;
      for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
      return out;
    },
    /*warm_up=*/false,  // one run is ~35 minutes
});

}  // namespace
}  // namespace pwab::bench
