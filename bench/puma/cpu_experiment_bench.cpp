// The CPU experiment of docs/puma.md ("A PUMA that learns on a CPU", issue 18; "Online RL", issue 28): the cpu
// preset on the full synthetic dataset, end to end, both second stages from the same SFT model:
//   pwab puma train --preset cpu          tokenizer … sft, eval-sft, then the DPO branch (sample … eval-dpo)
//   pwab puma eval-rl --preset cpu        the RL branch in the same directory (rl, eval-rl)
// and the checks that say the methods work at this scale:
//   - the whole pipeline, RL included, takes at most 60 minutes;
//   - without SFT (the from-scratch model untrained, decoding freely) search R. Acc is near zero; the same model with
//     the preset's copy-constrained queries is reported beside it (what the constraint gives without training);
//   - after SFT, search R. Acc is at least half of the heuristic teacher's on the test split;
//   - DPO keeps function accuracy;
//   - issue 28's targets for online RL: SFT + RL − SFT ≥ +0.03 overall R. Acc with the paired 95% interval above 0;
//     SFT + RL − SFT + DPO with the interval above 0; search R. Acc ≥ 0.60; function accuracy not below SFT's;
//     recommendation above SFT's.
// Extras: every step's time, SFT / DPO / RL tokens/s, sampling candidates/s and RL rollouts/s, pairs, tie shares,
// DPO's margin and KL, RL's final KL and greedy rewards, every fast-test number and the paired differences.
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

// B − A per task on the test split, paired, for two of the pipeline's models ("sft", "dpo", "rl").
metrics::Comparison paired(const fs::path& run, const char* a, const char* b) {
  return metrics::compare(puma::read_fast_test_scores(run / a / "eval"), puma::read_fast_test_scores(run / b / "eval"));
}

void add_difference(std::vector<Extra>& extras, const std::string& name, const metrics::Comparison& c) {
  extras.push_back({name, c.overall.r_acc.diff.value, ""});
  extras.push_back({name + "_ci_low", c.overall.r_acc.diff.ci_low, ""});
  extras.push_back({name + "_ci_high", c.overall.r_acc.diff.ci_high, ""});
}

std::string interval(const metrics::DiffCell& d) {
  return fmt::format("{:+.4f} [{:+.4f}, {:+.4f}]", d.diff.value, d.diff.ci_low, d.diff.ci_high);
}

const int registered = add({
    "puma/cpu_experiment",
    "pwab puma train --preset cpu on the full synthetic dataset, both second stages (≤ 60 min): SFT learns to write "
    "queries; DPO and online RL against SFT and each other; extra: per-step times, tokens/s, rollouts/s, pairs, KL",
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
      const fs::path data = full_dataset_dir(ctx), run = root(ctx) / "run", untrained = root(ctx) / "no-sft",
                     untrained_copy = root(ctx) / "no-sft-copy";
      const std::string pwab = pwab_binary(ctx).string(), log = (root(ctx) / "log.txt").string();
      fs::remove_all(run);
      fs::remove_all(untrained);
      fs::remove_all(untrained_copy);
      train_seconds = time_command(fmt::format("{} puma train --data {} --out {} --preset cpu > {} 2>&1", pwab,
                                               data.string(), run.string(), log));
      train_seconds += time_command(fmt::format("{} puma eval-rl --data {} --out {} --preset cpu >> {} 2>&1", pwab,
                                                data.string(), run.string(), log));
      // w/o SFT: the same model untrained, evaluated on the same test split (tokenizer and data reused), decoding
      // freely and with the preset's copy-constrained search queries
      for (const auto& [dir, decoding] : {std::pair{untrained, "free"}, std::pair{untrained_copy, "copy"}})
        time_command(fmt::format("{} puma eval-sft --data {} --out {} --preset cpu --sft-epochs 0 --search-decoding {} "
                                 "--reuse-from {} >> {} 2>&1",
                                 pwab, data.string(), dir.string(), decoding, run.string(), log));
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
      const Json& rl = report["rl"];
      extras.push_back({"rl_rollouts_per_s", rl.value("rollouts_per_s", 0.0), "1/s"});
      extras.push_back({"rl_sample_seconds", rl.value("sample_seconds", 0.0), "s"});
      extras.push_back({"rl_update_seconds", rl.value("update_seconds", 0.0), "s"});
      extras.push_back({"rl_train_tokens", rl.value("train_tokens", 0.0), ""});
      double tokens = 0, seconds = 0, kl = 0, ties = 0, n = 0;
      for (const Json& p : report["rl_curve"])
        if (p.value("kind", "") == "train") {
          tokens += p.value("tokens_per_s", 0.0) * p.value("update_seconds", 0.0);
          seconds += p.value("update_seconds", 0.0);
          kl = p.value("kl", 0.0);
          ties += p.value("tie_share", 0.0);
          ++n;
        }
      extras.push_back({"rl_update_tokens_per_s", tokens / std::max(1e-9, seconds), "tokens/s"});
      extras.push_back({"rl_final_kl", kl, "nats/token"});
      extras.push_back({"rl_mean_tie_share", ties / std::max(1.0, n), ""});
      if (rl.contains("first_eval")) extras.push_back({"rl_greedy_first", rl["first_eval"]["reward"].get<double>(), ""});
      if (rl.contains("last_eval")) extras.push_back({"rl_greedy_last", rl["last_eval"]["reward"].get<double>(), ""});
      extras.push_back({"teacher_search_r_acc", teacher_search, ""});
      Json none = read_json(untrained / "sft" / "eval" / "fast_test.json");
      extras.push_back({"no_sft_search_r_acc", none["search"]["result_acc"].get<double>(), ""});
      extras.push_back({"no_sft_copy_search_r_acc",
                        read_json(untrained_copy / "sft" / "eval" / "fast_test.json")["search"]["result_acc"].get<double>(),
                        ""});
      for (const char* which : {"sft", "dpo", "rl"}) {
        Json t = read_json(run / which / "eval" / "fast_test.json");
        extras.push_back({std::string(which) + "_function_acc", t["overall"]["function_acc"].get<double>(), ""});
        extras.push_back({std::string(which) + "_r_acc", t["overall"]["result_acc"].get<double>(), ""});
        for (const char* type : {"search", "recommend", "review"})
          extras.push_back({std::string(which) + "_r_acc_" + type, t[type]["result_acc"].get<double>(), ""});
      }
      add_difference(extras, "dpo_minus_sft_r_acc", paired(run, "sft", "dpo"));
      add_difference(extras, "rl_minus_sft_r_acc", paired(run, "sft", "rl"));
      add_difference(extras, "rl_minus_dpo_r_acc", paired(run, "dpo", "rl"));
      return train_seconds;
    },
    [](const Context& ctx) -> std::string {
      const fs::path run = root(ctx) / "run";
      std::vector<std::string> problems;
      if (train_seconds > 3600) problems.push_back(fmt::format("the pipeline took {:.0f} s > 3600 s", train_seconds));
      Json none = read_json(root(ctx) / "no-sft" / "sft" / "eval" / "fast_test.json");
      Json sft = read_json(run / "sft" / "eval" / "fast_test.json");
      Json dpo = read_json(run / "dpo" / "eval" / "fast_test.json");
      Json rl = read_json(run / "rl" / "eval" / "fast_test.json");
      const double untrained = none["search"]["result_acc"].get<double>();
      if (untrained > 0.05) problems.push_back(fmt::format("w/o SFT search R. Acc {:.3f} > 0.05", untrained));
      const double search = sft["search"]["result_acc"].get<double>();
      if (search < 0.5 * teacher_search)
        problems.push_back(fmt::format("SFT search R. Acc {:.3f} < half the teacher's {:.3f}", search, teacher_search));
      if (dpo["overall"]["function_acc"].get<double>() < sft["overall"]["function_acc"].get<double>())
        problems.push_back("DPO lowered function accuracy");
      // issue 28's targets for online RL
      metrics::Comparison rl_sft = paired(run, "sft", "rl"), rl_dpo = paired(run, "dpo", "rl");
      if (!(rl_sft.overall.r_acc.diff.value >= 0.03 && rl_sft.overall.r_acc.diff.ci_low > 0))
        problems.push_back("RL − SFT overall R. Acc " + interval(rl_sft.overall.r_acc) + ": not ≥ +0.03 above 0");
      if (!(rl_dpo.overall.r_acc.diff.ci_low > 0))
        problems.push_back("RL − DPO overall R. Acc " + interval(rl_dpo.overall.r_acc) + ": the interval is not above 0");
      if (rl["search"]["result_acc"].get<double>() < 0.60)
        problems.push_back(fmt::format("RL search R. Acc {:.3f} < 0.60", rl["search"]["result_acc"].get<double>()));
      if (rl["overall"]["function_acc"].get<double>() < sft["overall"]["function_acc"].get<double>())
        problems.push_back("RL lowered function accuracy");
      if (!(rl["recommend"]["result_acc"].get<double>() > sft["recommend"]["result_acc"].get<double>()))
        problems.push_back(fmt::format("RL recommend R. Acc {:.4f} not above SFT's {:.4f}",
                                       rl["recommend"]["result_acc"].get<double>(),
                                       sft["recommend"]["result_acc"].get<double>()));
      std::string out;
      for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
      return out;
    },
    /*warm_up=*/false,  // one run is ~50 minutes
});

}  // namespace
}  // namespace pwab::bench
