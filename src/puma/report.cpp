// write_pipeline_report (pipeline.h): one report of a pipeline directory, from the files its steps wrote. Torch-free,
// so `pwab puma report` and the ablation read finished runs without loading the model plugin.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "puma/ablate.h"
#include "puma/pipeline.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

json read_json_or_null(const fs::path& file) {
  if (!fs::exists(file)) return nullptr;
  json j = json::parse(read_file(file), nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

json read_curve(const fs::path& file) {
  json points = json::array();
  if (!fs::exists(file)) return points;
  const std::string text = read_file(file);
  for_each_nonblank_line(text, [&](std::string_view line, std::size_t) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) points.push_back(std::move(j));
  });
  return points;
}

double seconds_of(const fs::path& dir) {
  const fs::path file = dir / ".seconds";
  if (!fs::exists(file)) return -1;
  try {
    return std::stod(read_file(file));
  } catch (const std::exception&) {
    return -1;
  }
}

// j[key], or null where j is no object or lacks the key: nlohmann's const operator[] on a missing key is undefined
// behaviour (it crashed the report on a run without some step's output).
const json& field(const json& j, const char* key) {
  static const json null_value;
  if (!j.is_object()) return null_value;
  auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

double number(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_number() ? v.get<double>() : 0.0;
}

std::string num(const json& j, const char* key, const char* format = "{:.4f}") {
  const json& v = field(j, key);
  if (!v.is_number()) return "";
  return fmt::format(fmt::runtime(format), v.get<double>());
}

// At most `limit` of the training points, evenly spread, always with the last one.
std::vector<json> thinned(const json& curve, const std::string& kind, std::size_t limit) {
  std::vector<json> points;
  for (const json& p : curve)
    if (p.value("kind", "") == kind) points.push_back(p);
  if (points.size() <= limit) return points;
  std::vector<json> out;
  for (std::size_t i = 0; i < limit; ++i) out.push_back(points[i * (points.size() - 1) / (limit - 1)]);
  return out;
}

std::string fast_test_rows(const json& report) {
  std::string out = "| model | search F | search R | recommend F | recommend R | review F | review R | overall F | "
                    "overall R |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [which, name] : {std::pair{"sft", "after SFT"}, std::pair{"dpo", "after DPO"},
                                    std::pair{"rl", "after RL"}}) {
    const json& t = field(field(report, "fast_test"), which);
    if (t.is_null()) continue;
    out += fmt::format("| {} |", name);
    for (const char* type : {"search", "recommend", "review", "overall"})
      out += " " + num(t.value(type, json::object()), "function_acc", "{:.3f}") + " | " +
             num(t.value(type, json::object()), "result_acc", "{:.3f}") + " |";
    out += "\n";
  }
  return out;
}

// The RL section: the run's totals, then the curve (per iteration: reward, its spread, groups without signal, KL,
// entropy, clip fraction, completion length, speed; the greedy reward on the evaluation tasks where measured).
std::string rl_markdown(const json& r) {
  const json& rl = field(r, "rl");
  if (!rl.is_object()) return "";
  std::string md = fmt::format(
      "\n## RL\n\n{} iterations, {} episodes ({} completions) in {} s: sampling and scoring {} s ({} rollouts/s), "
      "updates {} s, evaluation {} s; {} completion tokens trained on.\n\n",
      rl.value("iterations", 0), rl.value("episodes", 0), rl.value("completions", 0), num(rl, "seconds", "{:.0f}"),
      num(rl, "sample_seconds", "{:.0f}"), num(rl, "rollouts_per_s", "{:.0f}"), num(rl, "update_seconds", "{:.0f}"),
      num(rl, "eval_seconds", "{:.0f}"), rl.value("train_tokens", 0));
  md += "| iteration | reward | reward std | group std | no signal | KL | entropy | clipped | length | rollouts/s | "
        "tokens/s | greedy reward (test) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::map<int64_t, std::pair<json, json>> rows;
  for (const json& p : thinned(field(r, "rl_curve"), "train", 16)) rows[p.value("iteration", int64_t{0})].first = p;
  for (const json& p : thinned(field(r, "rl_curve"), "eval", 16)) rows[p.value("iteration", int64_t{0})].second = p;
  for (const auto& [iteration, pe] : rows)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", iteration,
                      num(pe.first, "reward"), num(pe.first, "reward_std", "{:.3f}"),
                      num(pe.first, "group_reward_std", "{:.3f}"), num(pe.first, "tie_share", "{:.2f}"),
                      num(pe.first, "kl", "{:.4f}"), num(pe.first, "entropy", "{:.3f}"),
                      num(pe.first, "clip_fraction", "{:.3f}"), num(pe.first, "completion_tokens", "{:.1f}"),
                      num(pe.first, "rollouts_per_s", "{:.0f}"), num(pe.first, "tokens_per_s", "{:.0f}"),
                      num(pe.second, "reward"));
  return md;
}

std::string markdown(const json& r) {
  std::string md = "# PUMA pipeline report\n\n";
  const json& o = field(r, "options");
  if (o.is_object()) {
    md += fmt::format("Preset `{}`, base model {}, seed {}, embedder `{}`, search labels `{}`, memory {} behaviours / "
                      "{} tokens, SFT mode `{}`.\n\n",
                      o.value("preset", "?"), o.value("base_model", "?"), o.value("seed", 0), o.value("embedder", "?"),
                      o.value("search_labels", "?"), num(field(o, "memory"), "k", "{:.0f}"), num(field(o, "memory"), "tokens", "{:.0f}"),
                      o.value("sft_mode", "?"));
  }
  md += "## Fast test on the test split\n\n" + fast_test_rows(r) + "\n";
  for (const auto& [key, name] : {std::pair{"dpo_minus_sft", "DPO − SFT"}, std::pair{"rl_minus_sft", "RL − SFT"},
                                   std::pair{"rl_minus_dpo", "RL − DPO"}}) {
    const json& d = field(r, key);
    if (!d.is_object()) continue;
    md += fmt::format("{} on the same {} tasks (paired bootstrap, 95%): overall R. Acc {:+.4f} [{:+.4f}, {:+.4f}], "
                      "F. Acc {:+.4f} [{:+.4f}, {:+.4f}]; R. Acc search {:+.4f} [{:+.4f}, {:+.4f}], recommend "
                      "{:+.4f} [{:+.4f}, {:+.4f}], review {:+.4f} [{:+.4f}, {:+.4f}].\n\n",
                      name, d.value("tasks", 0), number(field(d, "r_acc"), "value"), number(field(d, "r_acc"), "ci_low"),
                      number(field(d, "r_acc"), "ci_high"), number(field(d, "f_acc"), "value"),
                      number(field(d, "f_acc"), "ci_low"), number(field(d, "f_acc"), "ci_high"),
                      number(field(d, "search"), "value"), number(field(d, "search"), "ci_low"),
                      number(field(d, "search"), "ci_high"), number(field(d, "recommend"), "value"),
                      number(field(d, "recommend"), "ci_low"), number(field(d, "recommend"), "ci_high"),
                      number(field(d, "review"), "value"), number(field(d, "review"), "ci_low"),
                      number(field(d, "review"), "ci_high"));
  }
  md += "## Time per step\n\n| step | seconds |\n|---|---|\n";
  for (auto it = field(r, "seconds").begin(); it != field(r, "seconds").end(); ++it)
    if (it->get<double>() >= 0) md += fmt::format("| {} | {:.1f} |\n", it.key(), it->get<double>());
  const json& sft = field(r, "sft");
  if (sft.is_object()) {
    md += fmt::format("\n## SFT\n\n{} optimizer steps, {} tokens/s, final train loss {}, eval loss {}.\n\n",
                      sft.value("steps", 0), num(sft, "tokens_per_s", "{:.0f}"), num(sft, "train_loss"),
                      num(sft, "eval_loss"));
    md += "| step | train loss | eval loss | lr | grad norm |\n|---|---|---|---|---|\n";
    std::map<int64_t, std::pair<json, json>> rows;
    for (const json& p : thinned(field(r, "sft_curve"), "train", 16)) rows[p.value("step", int64_t{0})].first = p;
    for (const json& p : thinned(field(r, "sft_curve"), "eval", 16)) rows[p.value("step", int64_t{0})].second = p;
    for (const auto& [step, pe] : rows)
      md += fmt::format("| {} | {} | {} | {} | {} |\n", step, num(pe.first, "loss"), num(pe.second, "loss"),
                        num(pe.first, "lr", "{:.2e}"), num(pe.first, "grad_norm", "{:.3f}"));
  }
  const json& cand = field(r, "candidates");
  if (cand.is_object()) {
    md += "\n## Candidates (sample, score)\n\n| split | tasks | pairs | tie share | distinct per task | best | worst | "
          "spread | chosen − rejected |\n|---|---|---|---|---|---|---|---|---|\n";
    auto row = [&](const char* name, const json& c) {
      if (!c.is_object()) return;
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", name, c.value("tasks", 0),
                        c.value("pairs", 0), num(c, "tie_share", "{:.3f}"), num(c, "mean_distinct", "{:.2f}"),
                        num(c, "mean_best", "{:.3f}"), num(c, "mean_worst", "{:.3f}"), num(c, "mean_spread", "{:.3f}"),
                        num(c, "mean_margin", "{:.3f}"));
    };
    row("train", cand);
    row("test (DPO eval)", cand.value("test", json(nullptr)));
    if (field(r, "sample").is_object())
      md += fmt::format("\nSampling: {} candidates in {} s ({} candidates/s, {}).\n", field(r, "sample").value("candidates", 0),
                        num(field(r, "sample"), "seconds", "{:.1f}"), num(field(r, "sample"), "candidates_per_s", "{:.1f}"),
                        field(r, "sample").value("source", "?"));
  }
  const json& dpo = field(r, "dpo");
  if (dpo.is_object() && dpo.value("steps", 0) > 0) {
    md += fmt::format("\n## DPO\n\n{} pairs, {} optimizer steps, {} tokens/s, final train loss {}.\n\n",
                      dpo.value("pairs", 0), dpo.value("steps", 0), num(dpo, "tokens_per_s", "{:.0f}"),
                      num(dpo, "train_loss"));
    md += "| step | kind | loss | margin | accuracy | chosen reward | rejected reward | KL |\n"
          "|---|---|---|---|---|---|---|---|\n";
    std::vector<json> points = thinned(field(r, "dpo_curve"), "train", 12);
    for (const json& p : thinned(field(r, "dpo_curve"), "eval", 12)) points.push_back(p);
    std::stable_sort(points.begin(), points.end(),
                     [](const json& a, const json& b) { return a.value("step", 0) < b.value("step", 0); });
    for (const json& p : points)
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", p.value("step", 0), p.value("kind", ""),
                        num(p, "loss"), num(p, "margin"), num(p, "accuracy", "{:.3f}"), num(p, "chosen_reward"),
                        num(p, "rejected_reward"), num(p, "kl", "{:.5f}"));
  }
  md += rl_markdown(r);
  return md;
}

}  // namespace

std::string write_pipeline_report(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw DataError("PUMA pipeline directory " + dir.string() + " does not exist");
  json r = json::object();
  r["options"] = read_json_or_null(dir / "options.json");
  r["data"] = read_json_or_null(dir / "data" / "report.json");
  r["sft"] = read_json_or_null(dir / "sft" / "train.json");
  r["sft_curve"] = read_curve(dir / "sft" / "work" / "curve.jsonl");
  r["sample"] = read_json_or_null(dir / "dpo" / "sample" / "report.json");
  r["candidates"] = read_json_or_null(dir / "dpo" / "score" / "report.json");
  r["dpo"] = read_json_or_null(dir / "dpo" / "train.json");
  r["dpo_curve"] = read_curve(dir / "dpo" / "work" / "curve.jsonl");
  r["rl"] = read_json_or_null(dir / "rl" / "train.json");
  r["rl_curve"] = read_curve(dir / "rl" / "work" / "curve.jsonl");
  r["fast_test"] = {{"sft", read_json_or_null(dir / "sft" / "eval" / "fast_test.json")},
                    {"dpo", read_json_or_null(dir / "dpo" / "eval" / "fast_test.json")},
                    {"rl", read_json_or_null(dir / "rl" / "eval" / "fast_test.json")}};
  // The second stages against SFT and each other, per task, paired, with bootstrap intervals: did they help?
  const auto sft_scores = read_fast_test_scores(dir / "sft" / "eval");
  const auto dpo_scores = read_fast_test_scores(dir / "dpo" / "eval");
  const auto rl_scores = read_fast_test_scores(dir / "rl" / "eval");
  auto paired = [&](const std::vector<metrics::TaskOutcome>& a, const std::vector<metrics::TaskOutcome>& b, const char* key) {
    if (a.empty() || b.empty()) return;
    metrics::Comparison c = metrics::compare(a, b);
    auto cell = [](const metrics::Cell& x) { return json{{"value", x.value}, {"ci_low", x.ci_low}, {"ci_high", x.ci_high}}; };
    json d = {{"tasks", c.overall.n_paired}, {"r_acc", cell(c.overall.r_acc.diff)}, {"f_acc", cell(c.overall.f_acc.diff)}};
    for (const auto& [name, type] : {std::pair{"search", data::TaskType::kSearch},
                                     std::pair{"recommend", data::TaskType::kRecommend},
                                     std::pair{"review", data::TaskType::kReview}})
      d[name] = cell(c.by_type[metrics::type_index(type)].r_acc.diff);
    r[key] = d;
  };
  paired(sft_scores, dpo_scores, "dpo_minus_sft");
  paired(sft_scores, rl_scores, "rl_minus_sft");
  paired(dpo_scores, rl_scores, "rl_minus_dpo");
  json seconds = json::object();
  const std::pair<const char*, fs::path> steps[] = {
      {"tokenizer", dir / "base"},      {"prepare", dir / "data"},           {"sft", dir / "sft"},
      {"eval-sft", dir / "sft" / "eval"}, {"sample", dir / "dpo" / "sample"}, {"score", dir / "dpo" / "score"},
      {"dpo", dir / "dpo"},             {"eval-dpo", dir / "dpo" / "eval"}, {"rl", dir / "rl"},
      {"eval-rl", dir / "rl" / "eval"}};
  for (const auto& [name, step_dir] : steps) seconds[name] = seconds_of(step_dir);
  r["seconds"] = seconds;
  std::string md = markdown(r);
  write_file_atomic(dir / "report.json", r.dump(2) + "\n");
  write_file_atomic(dir / "report.md", md);
  return md;
}

}  // namespace pwab::puma
