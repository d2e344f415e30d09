// src/report/summaries.cpp: a run's summary rendered and written (summaries.h).
#include "report/summaries.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/sys.h"
#include "report/analysis.h"
#include "report/diagnosis.h"

namespace pwab::report {
namespace {

using Json = nlohmann::json;

}  // namespace

std::string render_summary(const metrics::Summary& s, const runner::Run& run, const std::string& format,
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
  return write_summaries(runner::read_run(dir), bootstrap, dataset);
}

std::string write_summaries(const runner::Run& run, const metrics::BootstrapOptions& bootstrap, const data::Dataset* dataset) {
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
