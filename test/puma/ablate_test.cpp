// The ablation's tables (ablate.h) from per-task scores, without training: the rows and their folders, cells with
// intervals, paired differences from the PUMA row, the spread over seeds, and rows not evaluated yet.
#include "puma/ablate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/sys.h"
#include "support/test_support.h"

namespace pwab::puma {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 30 tasks, 10 of each type; R = `r` on every task (F = 1), search tasks shifted by `search_bonus`.
void write_scores(const fs::path& eval_dir, double r, double search_bonus = 0) {
  std::string lines;
  const char* types[] = {"search", "recommend", "review"};
  for (int i = 0; i < 30; ++i) {
    const bool search = i % 3 == 0;
    lines += json{{"task", "test/" + std::to_string(i)}, {"type", types[i % 3]}, {"function", "x"}, {"f", 1.0},
                  {"r", r + (search ? search_bonus : 0.0)}}
                 .dump() +
             "\n";
  }
  write_file_atomic(eval_dir / "scores.jsonl", lines);
}

AblationOptions options(const fs::path& out, int seeds) {
  AblationOptions o;
  o.base = PipelineOptions::tiny_preset();  // memory 192 tokens: Table 6 rows 48, 96, 192
  o.out = out;
  o.seeds = seeds;
  o.bootstrap.resamples = 200;
  return o;
}

TEST(PumaAblation, RowsAndTheirFolders) {
  AblationOptions o = options("/tmp/x", 2);
  std::vector<AblationRow> rows = ablation_rows(o);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0].name, "PUMA");
  EXPECT_EQ(rows[0].eval_dirs[1], fs::path("/tmp/x/puma/seed-2/dpo/eval"));
  EXPECT_EQ(rows[3].name, "w/o DPO");
  EXPECT_EQ(rows[3].eval_dirs[0], fs::path("/tmp/x/puma/seed-1/sft/eval"));
  EXPECT_EQ(rows[4].name, "SFT + RL");  // the RL branch of the full pipeline
  EXPECT_EQ(rows[4].eval_dirs[1], fs::path("/tmp/x/puma/seed-2/rl/eval"));
  EXPECT_EQ(rows[5].name, "RL without SFT");
  EXPECT_EQ(rows[5].eval_dirs[0], fs::path("/tmp/x/wo-sft/seed-1/rl/eval"));
  EXPECT_EQ(rows[6].name, "48");
  EXPECT_EQ(rows[6].eval_dirs[0], fs::path("/tmp/x/memory-48/seed-1/dpo/eval"));
  EXPECT_EQ(rows[8].eval_dirs[0], fs::path("/tmp/x/puma/seed-1/dpo/eval"));  // the preset's own length is PUMA
  EXPECT_EQ(default_memory_lengths(PipelineOptions::paper_preset()), (std::vector<int>{256, 512, 768}));
  o.rl_rows = false;
  EXPECT_EQ(ablation_rows(o).size(), 7u);
  o.table5 = false;
  o.memory_lengths = {100, 192};
  EXPECT_EQ(ablation_rows(o).size(), 2u);
}

TEST(PumaAblation, TablesWithIntervalsDifferencesAndSeeds) {
  pwab::test::TempDir dir;
  AblationOptions o = options(dir.path(), 2);
  for (int seed : {1, 2}) {
    const std::string s = "seed-" + std::to_string(seed);
    write_scores(dir / "puma" / s / "dpo" / "eval", 0.5, seed == 1 ? 0.2 : 0.1);
    write_scores(dir / "puma" / s / "sft" / "eval", 0.4);
    write_scores(dir / "wo-memory" / s / "dpo" / "eval", 0.45);
    write_scores(dir / "memory-48" / s / "dpo" / "eval", 0.3);
    write_scores(dir / "puma" / s / "rl" / "eval", 0.6);
  }  // w/o SFT, RL without SFT and memory 96 not evaluated
  std::string md = write_ablation_report(o);
  // PUMA: search R = 0.5 + 0.15 (mean of the seeds), recommend and review 0.5; overall (0.65 + 0.5 + 0.5) / 3.
  EXPECT_NE(md.find("| PUMA | 1.000 [1.00, 1.00] | 0.650 [0.65, 0.65] | 1.000 [1.00, 1.00] | 0.500 [0.50, 0.50] |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| w/o SFT | (not evaluated yet)"), std::string::npos) << md;
  // w/o DPO: search 0.4 − 0.65, overall 0.4 − 0.55.
  EXPECT_NE(md.find("| w/o DPO | -0.250 [-0.25, -0.25] | -0.100 [-0.10, -0.10] | -0.100 [-0.10, -0.10] | +0.000 [0.00, "
                    "0.00] | -0.150 ["),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| PUMA | 1.000 ± 0.000 | 0.550 ± 0.024 | 0.567, 0.533 |"), std::string::npos) << md;
  // SFT + RL: 0.6 everywhere; against PUMA search −0.05, recommend and review +0.1, overall +0.05.
  EXPECT_NE(md.find("| SFT + RL | -0.050 [-0.05, -0.05] | +0.100 [0.10, 0.10] | +0.100 [0.10, 0.10] | +0.000 [0.00, "
                    "0.00] | +0.050 ["),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| RL without SFT | (not evaluated yet)"), std::string::npos) << md;
  EXPECT_NE(md.find("## Table 6: memory length"), std::string::npos) << md;
  EXPECT_NE(md.find("| 96 | (not evaluated yet)"), std::string::npos) << md;
  json j = json::parse(read_file(dir / "ablation.json"));
  EXPECT_EQ(j["rows"][0]["name"], "PUMA");
  EXPECT_NEAR(j["rows"][1]["paired_difference_from_puma"]["Overall"]["value"].get<double>(), 0.45 - 0.55, 1e-9);
  EXPECT_TRUE(fs::exists(dir / "ablation.md"));
}

}  // namespace
}  // namespace pwab::puma
