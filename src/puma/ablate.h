// src/puma/ablate.h: the paper's Table 5 (ablation) and Table 6 (memory length) by one command, on any dataset
// and preset (`pwab puma ablate`, docs/puma.md "Tables 5 and 6").
//
// Every row is a pipeline directory under the output directory, one per seed:
//
//   PUMA                       puma/seed-S            the full pipeline; its DPO model's fast test
//   w/o Task-specific Memory   wo-memory/seed-S       memory "none" in training and evaluation (--memory-k 0)
//   w/o SFT                    wo-sft/seed-S          no SFT (0 epochs): candidates sampled from the base model and
//                                                     DPO from it; evaluated with the PUMA row's functions, as the
//                                                     paper's row keeps PUMA's function accuracy
//   w/o DPO                    puma/seed-S            the full run's SFT model (nothing to train)
//   SFT + RL                   puma/seed-S            the RL branch of the full run (rl, eval-rl): online RL from
//                                                     its SFT model instead of DPO
//   RL without SFT             wo-sft/seed-S          the RL branch from the untrained model, evaluated with the
//                                                     PUMA row's functions as "w/o SFT" is
//   memory N (Table 6)         memory-N/seed-S        the full pipeline with an N-token memory; the PUMA row for
//                                                     the preset's own length
//
// Variants take over the steps they share with the full run (pipeline.h reuse_from), so the tokenizer, the data and
// the SFT model are built once. Rows are scored per task; each cell carries a bootstrap interval over tasks (seeds
// of a task are pooled as trials) and every row its paired difference from the PUMA row; with several seeds the
// per-seed overall values give a mean and a standard deviation.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "puma/pipeline.h"

namespace pwab::puma {

//! Runs one pipeline up to a step ("" = every step) over a dataset opened once (assemble::TrainingSession::run).
using PipelineRunner = std::function<PipelineReport(const PipelineOptions&, const std::string& until)>;

struct AblationOptions {
  PipelineOptions base;           //!< the full PUMA's settings (its `out` is set per row)
  std::filesystem::path out;      //!< the ablation directory
  int seeds = 1;                  //!< training repeated with seeds base.seed, base.seed + 1, ...
  bool table5 = true;             //!< the rows PUMA, w/o memory, w/o SFT, w/o DPO
  bool table6 = true;             //!< the memory rows
  bool rl_rows = true;            //!< Table 5 also has the rows "SFT + RL" and "RL without SFT"
  std::vector<int> memory_lengths;  //!< Table 6's token budgets; empty = default_memory_lengths(base)
  metrics::BootstrapOptions bootstrap{};
};

//! The paper's 256, 512, 768 for the paper preset's 768-token memory; otherwise a quarter, a half and all of the
//! preset's budget (a from-scratch model's short prompts).
std::vector<int> default_memory_lengths(const PipelineOptions& base);

//! The per-task fast-test scores an evaluation folder holds (scores.jsonl) as outcomes of trial `trial`: one attempt
//! each (F, R), one step; empty when the folder has none. DataError naming the line of a malformed record.
std::vector<metrics::TaskOutcome> read_fast_test_scores(const std::filesystem::path& eval_dir, int trial = 0);

//! One row of the tables: the name, and where its fast-test scores are (eval dir per seed).
struct AblationRow {
  std::string name;
  std::string table;  //!< "5" or "6"
  std::vector<std::filesystem::path> eval_dirs;  //!< one per seed: a folder with scores.jsonl
};

//! The rows of `options` and their pipeline directories (nothing is run).
std::vector<AblationRow> ablation_rows(const AblationOptions& options);

//! Runs every pipeline the rows need (finished steps are skipped or reused), then writes the tables.
//! Returns the Markdown of write_ablation_report.
std::string run_ablation(const PipelineRunner& run_pipeline, const AblationOptions& options,
                         const std::function<void(const std::string&)>& log);

//! Writes out/ablation.md and out/ablation.json from the rows' scores (rows not evaluated yet are listed as
//! missing) and returns the Markdown: per row F. Acc and R. Acc by type with bootstrap intervals, the paired
//! difference from the PUMA row, and with several seeds the per-seed mean ± standard deviation.
std::string write_ablation_report(const AblationOptions& options);

}  // namespace pwab::puma
