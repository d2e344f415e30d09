// Tables 5 and 6 (ablate.h): the rows' pipelines, then the tables from their per-task scores.
#include "puma/ablate.h"
#include "core/json_depth.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

uint64_t seed_of(const AblationOptions& o, int i) { return o.base.seed + static_cast<uint64_t>(i); }

fs::path row_dir(const AblationOptions& o, const std::string& variant, int i) {
  return o.out / variant / ("seed-" + std::to_string(seed_of(o, i)));
}

PipelineOptions with_seed(PipelineOptions p, uint64_t seed, fs::path out) {
  p.seed = p.sft.seed = p.dpo.seed = seed;
  p.out = std::move(out);
  return p;
}

}  // namespace

std::vector<metrics::TaskOutcome> read_fast_test_scores(const fs::path& eval_dir, int trial) {
  const fs::path file = eval_dir / "scores.jsonl";
  std::vector<metrics::TaskOutcome> out;
  if (!fs::exists(file)) return out;
  const std::string text = read_file(file);
  for_each_nonblank_line(text, [&](std::string_view line, std::size_t line_no) {
    json j = parse_json_or_discarded(line);
    if (j.is_discarded() || !j.contains("task") || !j.contains("type"))
      throw DataError(file.string() + ":" + std::to_string(line_no) + ": not a fast-test score record");
    metrics::TaskOutcome t;
    t.task_key = j["task"].get<std::string>();
    auto type = data::parse_task_type(j["type"].get<std::string>());
    if (!type) throw DataError(file.string() + ":" + std::to_string(line_no) + ": unknown task type");
    t.type = *type;
    // the fast test's one attempt; a wrong function is an attempt with F = 0, which docs/decisions.md §3.2 scores 0
    t.attempts.push_back({j.value("f", 0.0), j.value("r", 0.0)});
    t.steps = 1;
    t.trial = trial;
    out.push_back(std::move(t));
  });
  return out;
}

namespace {

const std::pair<const char*, data::TaskType> kTypes[] = {{"Search", data::TaskType::kSearch},
                                                          {"Recommendation", data::TaskType::kRecommend},
                                                          {"Review", data::TaskType::kReview}};

std::string cells_of(const metrics::GroupSummary& g) {
  return " " + metrics::format_cell(g.f_acc) + " | " + metrics::format_cell(g.r_acc) + " |";
}

json cell_json(const metrics::Cell& c) { return {{"value", c.value}, {"ci_low", c.ci_low}, {"ci_high", c.ci_high}}; }

json group_json(const metrics::GroupSummary& g) {
  return {{"n_tasks", g.n_tasks}, {"f_acc", cell_json(g.f_acc)}, {"r_acc", cell_json(g.r_acc)}};
}

struct RowResult {
  AblationRow row;
  std::vector<metrics::TaskOutcome> outcomes;  // every seed's tasks, trial = seed index
  std::vector<double> seed_r, seed_f;          // overall per seed
  int seeds_found = 0;
};

}  // namespace

std::vector<int> default_memory_lengths(const PipelineOptions& base) {
  const int m = base.prepare.memory.max_tokens;
  if (m == 768) return {256, 512, 768};
  return {std::max(8, m / 4), std::max(8, m / 2), m};
}

std::vector<AblationRow> ablation_rows(const AblationOptions& o) {
  std::vector<AblationRow> rows;
  auto add = [&](std::string name, std::string table, const std::string& variant, const char* model) {
    AblationRow r{std::move(name), std::move(table), {}};
    for (int i = 0; i < o.seeds; ++i) r.eval_dirs.push_back(row_dir(o, variant, i) / model / "eval");
    rows.push_back(std::move(r));
  };
  if (o.table5) {
    add("PUMA", "5", "puma", "dpo");
    add("w/o Task-specific Memory", "5", "wo-memory", "dpo");
    add("w/o SFT", "5", "wo-sft", "dpo");
    add("w/o DPO", "5", "puma", "sft");
    if (o.rl_rows) {
      add("SFT + RL", "5", "puma", "rl");
      add("RL without SFT", "5", "wo-sft", "rl");
    }
  }
  if (o.table6) {
    const std::vector<int> lengths = o.memory_lengths.empty() ? default_memory_lengths(o.base) : o.memory_lengths;
    for (int n : lengths) {
      if (n == o.base.prepare.memory.max_tokens) add(std::to_string(n), "6", "puma", "dpo");
      else add(std::to_string(n), "6", "memory-" + std::to_string(n), "dpo");
    }
  }
  return rows;
}

std::string run_ablation(const PipelineRunner& run_pipeline, const AblationOptions& o,
                         const std::function<void(const std::string&)>& log) {
  if (o.seeds < 1) throw UsageError("--seeds takes an integer ≥ 1");
  if (!o.table5 && !o.table6) throw UsageError("nothing to do: both tables are off");
  for (int n : o.memory_lengths)
    if (n < 8) throw UsageError("memory lengths must be at least 8 tokens, not " + std::to_string(n));
  const std::vector<int> lengths = o.memory_lengths.empty() ? default_memory_lengths(o.base) : o.memory_lengths;
  auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  for (int i = 0; i < o.seeds; ++i) {
    const uint64_t seed = seed_of(o, i);
    const fs::path puma_dir = row_dir(o, "puma", i);
    auto run = [&](const std::string& what, PipelineOptions p, const std::string& until = "") {
      say(fmt::format("ablation seed {}: {}", seed, what));
      PipelineReport r = run_pipeline(p, until);
      if (r.cancelled) throw Error("interrupted; run the same command again to continue where it stopped");
    };
    PipelineOptions full = with_seed(o.base, seed, puma_dir);
    full.align = "dpo";
    run("PUMA (the full pipeline)", full);
    if (o.table5 && o.rl_rows) run("SFT + RL (the RL branch of the full pipeline)", full, "eval-rl");
    auto variant = [&](const std::string& name) {
      PipelineOptions p = with_seed(o.base, seed, row_dir(o, name, i));
      p.reuse_from = puma_dir;
      return p;
    };
    if (o.table5) {
      PipelineOptions no_memory = variant("wo-memory");
      no_memory.prepare.memory.k = 0;
      run("w/o task-specific memory", no_memory);
      PipelineOptions no_sft = variant("wo-sft");
      no_sft.sft.epochs = 0;
      no_sft.function_file = puma_dir / "dpo" / "eval" / "functions.json";
      no_sft.align = "dpo";
      run("w/o SFT", no_sft);
      if (o.rl_rows) run("RL without SFT", no_sft, "eval-rl");
    }
    if (o.table6) {
      for (int n : lengths) {
        if (n == o.base.prepare.memory.max_tokens) continue;
        PipelineOptions p = variant("memory-" + std::to_string(n));
        p.prepare.memory.max_tokens = n;
        run(fmt::format("memory {} tokens", n), p);
      }
    }
  }
  return write_ablation_report(o);
}

std::string write_ablation_report(const AblationOptions& o) {
  std::vector<RowResult> results;
  for (const AblationRow& row : ablation_rows(o)) {
    RowResult r{row, {}, {}, {}, 0};
    for (std::size_t i = 0; i < row.eval_dirs.size(); ++i) {
      auto seed_outcomes = read_fast_test_scores(row.eval_dirs[i], static_cast<int>(i));
      if (seed_outcomes.empty()) continue;
      ++r.seeds_found;
      metrics::BootstrapOptions none = o.bootstrap;
      none.resamples = 0;
      metrics::Summary s = metrics::summarize(seed_outcomes, none);
      r.seed_f.push_back(s.overall.f_acc.value);
      r.seed_r.push_back(s.overall.r_acc.value);
      r.outcomes.insert(r.outcomes.end(), seed_outcomes.begin(), seed_outcomes.end());
    }
    results.push_back(std::move(r));
  }
  // The reference of the paired differences: the full run's DPO model, whichever rows are shown.
  std::vector<metrics::TaskOutcome> puma;
  std::vector<fs::path> puma_dirs;
  for (int i = 0; i < o.seeds; ++i) {
    puma_dirs.push_back(row_dir(o, "puma", i) / "dpo" / "eval");
    auto seed_outcomes = read_fast_test_scores(puma_dirs.back(), i);
    puma.insert(puma.end(), seed_outcomes.begin(), seed_outcomes.end());
  }
  json j = {{"seeds", o.seeds}, {"bootstrap", {{"resamples", o.bootstrap.resamples},
                                                {"confidence", o.bootstrap.confidence}}}, {"rows", json::array()}};
  std::string md = "# PUMA ablation (the paper's Tables 5 and 6)\n\n";
  md += fmt::format("Preset `{}`, {} seed{} ({}), fast test on the test split. Cells: value [{:g}% bootstrap "
                    "interval over tasks].\n",
                    o.base.preset, o.seeds, o.seeds == 1 ? "" : "s",
                    o.seeds == 1 ? fmt::format("seed {}", o.base.seed)
                                 : fmt::format("seeds {}–{}", o.base.seed, o.base.seed + o.seeds - 1),
                    o.bootstrap.confidence * 100);
  for (const char* table : {"5", "6"}) {
    bool any = false;
    for (const RowResult& r : results) any |= r.row.table == table;
    if (!any) continue;
    md += std::string("\n## Table ") + table + (std::string(table) == "5" ? ": ablation" : ": memory length") + "\n\n";
    md += std::string("| ") + (std::string(table) == "5" ? "Method" : "Memory Length") +
          " | Search F. Acc | Search R. Acc | Recommendation F. Acc | Recommendation R. Acc | Review F. Acc | Review "
          "R. Acc | Overall F. Acc | Overall R. Acc |\n|---|---|---|---|---|---|---|---|---|\n";
    std::string diffs = "| Row | Δ Search R. Acc | Δ Recommendation R. Acc | Δ Review R. Acc | Δ Overall F. Acc | Δ "
                        "Overall R. Acc |\n|---|---|---|---|---|---|\n";
    std::string spread;
    for (const RowResult& r : results) {
      if (r.row.table != table) continue;
      json jr = {{"name", r.row.name}, {"table", r.row.table}, {"seeds_found", r.seeds_found}};
      if (r.outcomes.empty()) {
        md += "| " + r.row.name + " | (not evaluated yet) |||||||\n";
        j["rows"].push_back(jr);
        continue;
      }
      metrics::Summary s = metrics::summarize(r.outcomes, o.bootstrap);
      md += "| " + r.row.name + " |";
      for (const auto& [name, type] : kTypes) {
        md += cells_of(s.by_type[metrics::type_index(type)]);
        jr[name] = group_json(s.by_type[metrics::type_index(type)]);
      }
      md += cells_of(s.overall) + "\n";
      jr["Overall"] = group_json(s.overall);
      if (!puma.empty() && r.row.eval_dirs != puma_dirs) {
        metrics::Comparison c = metrics::compare(puma, r.outcomes, o.bootstrap);
        diffs += "| " + r.row.name + " |";
        json jd = json::object();
        for (const auto& [name, type] : kTypes) {
          const metrics::Cell& d = c.by_type[metrics::type_index(type)].r_acc.diff;
          diffs += " " + metrics::format_diff(d) + " |";
          jd[name] = cell_json(d);
        }
        diffs += " " + metrics::format_diff(c.overall.f_acc.diff) + " | " + metrics::format_diff(c.overall.r_acc.diff) +
                 " |\n";
        jd["Overall F. Acc"] = cell_json(c.overall.f_acc.diff);
        jd["Overall"] = cell_json(c.overall.r_acc.diff);
        jr["paired_difference_from_puma"] = jd;
      }
      if (r.seed_r.size() > 1) {
        auto mean_sd = [](const std::vector<double>& v) {
          double m = 0, ss = 0;
          for (double x : v) m += x;
          m /= static_cast<double>(v.size());
          for (double x : v) ss += (x - m) * (x - m);
          return std::pair{m, std::sqrt(ss / static_cast<double>(v.size() - 1))};
        };
        auto [mf, sf] = mean_sd(r.seed_f);
        auto [mr, sr] = mean_sd(r.seed_r);
        std::string per_seed;
        for (double x : r.seed_r) per_seed += fmt::format("{}{:.3f}", per_seed.empty() ? "" : ", ", x);
        spread += fmt::format("| {} | {:.3f} ± {:.3f} | {:.3f} ± {:.3f} | {} |\n", r.row.name, mf, sf, mr, sr, per_seed);
        jr["seeds"] = {{"overall_f_acc", r.seed_f}, {"overall_r_acc", r.seed_r}, {"mean_r_acc", mr}, {"sd_r_acc", sr},
                       {"mean_f_acc", mf}, {"sd_f_acc", sf}};
      }
      j["rows"].push_back(jr);
    }
    if (!puma.empty()) md += "\nPaired difference from the PUMA row (same tasks; B − A [interval]):\n\n" + diffs;
    if (!spread.empty())
      md += "\nAcross seeds (overall, mean ± standard deviation of the per-seed values):\n\n| Row | F. Acc | R. Acc | "
            "R. Acc per seed |\n|---|---|---|---|\n" +
            spread;
  }
  write_file_atomic(o.out / "ablation.md", md);
  write_file_atomic(o.out / "ablation.json", j.dump(2) + "\n");
  return md;
}

}  // namespace pwab::puma
