// PUMA's tiny preset end to end on the mini synthetic dataset (`pwab puma train`): wall time per run and the
// fast test of the SFT and the DPO models (function accuracy and R. Acc), so the effect of DPO is measured, not
// asserted. The check only requires the SFT model's function accuracy of at least 0.9 (issue 7).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "core/sys.h"

namespace pwab::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path root(const Context& ctx) { return ctx.out_dir / "puma"; }

Json read_json(const fs::path& file) { return Json::parse(read_file(file)); }

const int registered = add({
    "puma/tiny_pipeline",
    "pwab puma train --preset tiny on the mini dataset: tokenizer, prepare, SFT, eval, sample, score, DPO, eval",
    1,
    [](const Context& ctx) {
      fs::create_directories(root(ctx));
      const std::string pwab = pwab_binary(ctx).string(), mini = (root(ctx) / "mini").string();
      if (!fs::exists(root(ctx) / "mini" / "user_instructions.json"))
        time_command(fmt::format("{} data synth --out {} --scale mini --seed 5 > /dev/null", pwab, mini));
      if (!fs::exists(root(ctx) / "mini" / ".pwab-rec"))
        time_command(fmt::format("{} rec train {} --epochs 100 --eval-every 0 > /dev/null 2>&1", pwab, mini));
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      fs::remove_all(root(ctx) / "run");
      double seconds = time_command(fmt::format("{} puma train --data {} --out {} > {} 2>&1", pwab_binary(ctx).string(),
                                                (root(ctx) / "mini").string(), (root(ctx) / "run").string(),
                                                (root(ctx) / "log.txt").string()));
      Json sft = read_json(root(ctx) / "run" / "sft" / "eval" / "fast_test.json");
      Json dpo = read_json(root(ctx) / "run" / "dpo" / "eval" / "fast_test.json");
      Json train = read_json(root(ctx) / "run" / "sft" / "train.json");
      Json pairs = read_json(root(ctx) / "run" / "dpo" / "score" / "report.json");
      extras.push_back({"sft_seconds", train["seconds"].get<double>(), "s"});
      extras.push_back({"sft_function_acc", sft["overall"]["function_acc"].get<double>(), ""});
      extras.push_back({"sft_r_acc", sft["overall"]["result_acc"].get<double>(), ""});
      extras.push_back({"dpo_function_acc", dpo["overall"]["function_acc"].get<double>(), ""});
      extras.push_back({"dpo_r_acc", dpo["overall"]["result_acc"].get<double>(), ""});
      for (const char* type : {"search", "recommend", "review"}) {
        extras.push_back({std::string("sft_r_acc_") + type, sft[type]["result_acc"].get<double>(), ""});
        extras.push_back({std::string("dpo_r_acc_") + type, dpo[type]["result_acc"].get<double>(), ""});
      }
      extras.push_back({"preference_pairs", pairs["pairs"].get<double>(), ""});
      return seconds;
    },
    [](const Context& ctx) -> std::string {
      Json sft = read_json(root(ctx) / "run" / "sft" / "eval" / "fast_test.json");
      double acc = sft["overall"]["function_acc"].get<double>();
      return acc >= 0.9 ? "" : fmt::format("SFT function accuracy {:.3f} < 0.9", acc);
    },
    /*warm_up=*/false,  // minutes per run, from scratch each time
});

}  // namespace
}  // namespace pwab::bench
