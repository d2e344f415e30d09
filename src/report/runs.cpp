// src/report/runs.cpp: reading a run directory for scoring and reports.
#include "report/runs.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/sys.h"
#include "report/analysis.h"
#include "report/diagnosis.h"
#include "runner/results.h"

namespace pwab::report {
namespace {

using Json = nlohmann::json;

//! The manifest's config as an object (an empty one when it is not valid JSON: older or hand-made runs).
Json config_of(const runner::RunManifest& manifest) {
  auto config = Json::parse(manifest.config_json, nullptr, false);
  return config.is_object() ? config : Json::object();
}

}  // namespace

std::string run_title(const runner::RunManifest& manifest) {
  auto config = config_of(manifest);
  std::string title = config.contains("agent") && config["agent"].is_string() ? config["agent"].get<std::string>()
                                                                             : std::string("run");
  // The detail in brackets: the memory strategy of built-in agents, the label (or URL) of a remote agent.
  if (!config.contains("agent_config") || !config["agent_config"].is_object()) return title;
  const Json& agent = config["agent_config"];
  for (const char* detail : {"memory", "name"})
    if (agent.contains(detail) && agent[detail].is_string())
      return title + " (" + agent[detail].get<std::string>() + ")";
  return title;
}

metrics::Track run_track(const runner::RunManifest& manifest) {
  auto config = config_of(manifest);
  if (config.value("track", Json("")) == "single") return metrics::Track::kSingleTurn;
  return metrics::Track::kMultiTurn;
}

std::string run_embedder(const runner::RunManifest& manifest) {
  auto config = config_of(manifest);
  auto it = config.find("embedder");
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string("unknown");
}

Run read_run(const std::filesystem::path& dir) {
  auto manifest = runner::read_manifest(dir);
  return make_run(dir, std::move(manifest), runner::read_records(dir));
}

Run make_run(const std::filesystem::path& dir, runner::RunManifest manifest, std::vector<runner::TaskRecord> records) {
  Run run;
  run.dir = dir;
  run.manifest = std::move(manifest);
  run.title = run_title(run.manifest);
  run.track = run_track(run.manifest);
  run.embedder = run_embedder(run.manifest);
  run.records = std::move(records);
  runner::sort_by_task(run.records);
  for (const auto& r : run.records) run.n_errored += r.error.empty() ? 0 : 1;
  run.outcomes = runner::scored_outcomes(run.records);
  return run;
}

std::string render_summary(const metrics::Summary& s, const Run& run, const std::string& format,
                           const Diagnosis* diagnosis) {
  const std::string embedder_note = "Review similarity: " + run.embedder + " embedder.\n";
  const std::string diagnosis_md = diagnosis ? diagnosis_markdown(*diagnosis) : "";
  if (format == "table") return metrics::format_table(s, run.title, run.track) + embedder_note + diagnosis_md;
  if (format == "md")
    return metrics::format_markdown(s, run.title, run.track) + "\n" + embedder_note +
           analysis_markdown(analyze(run, s.trials.rule)) + diagnosis_md;
  if (format == "csv") return metrics::format_csv(s);
  if (format == "json") {
    Json j = Json::parse(metrics::format_json(s));
    j["analysis"] = Json::parse(analysis_json(analyze(run, s.trials.rule)));
    if (diagnosis) j["diagnosis"] = Json::parse(diagnosis_json(*diagnosis));
    return j.dump(2) + "\n";
  }
  throw UsageError("--format must be table, md, csv or json, got '" + format + "'");
}

std::string write_summaries(const std::filesystem::path& dir, const metrics::BootstrapOptions& bootstrap,
                            const data::Dataset* dataset) {
  return write_summaries(read_run(dir), bootstrap, dataset);
}

std::string write_summaries(const Run& run, const metrics::BootstrapOptions& bootstrap, const data::Dataset* dataset) {
  const std::filesystem::path& dir = run.dir;
  auto summary = metrics::summarize(run.outcomes, bootstrap);
  std::optional<Diagnosis> diagnosis;
  if (dataset) {
    DiagnosisOptions options;
    options.bootstrap = bootstrap;
    diagnosis = diagnose(run, *dataset, options);
  }
  const Diagnosis* d = diagnosis ? &*diagnosis : nullptr;
  write_file_atomic(dir / "summary.md", render_summary(summary, run, "md", d));
  write_file_atomic(dir / "summary.csv", metrics::format_csv(summary));
  write_file_atomic(dir / "summary.json", render_summary(summary, run, "json", d));
  return render_summary(summary, run, "table");
}

}  // namespace pwab::report
