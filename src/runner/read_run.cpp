// src/runner/read_run.cpp: reading a run directory for scoring and reports (read_run.h).
#include "runner/read_run.h"

#include <nlohmann/json.hpp>

#include "runner/run_settings.h"

namespace pwab::runner {

std::string run_title(const RunManifest& manifest) {
  const RunSettings settings = settings_of(manifest);
  std::string title = settings.agent.value_or("run");
  // The detail in brackets: the memory strategy of built-in agents, the label (or URL) of a remote agent.
  if (!settings.agent_config) return title;
  const auto agent = nlohmann::json::parse(*settings.agent_config);
  if (!agent.is_object()) return title;
  for (const char* detail : {"memory", "name"})
    if (agent.contains(detail) && agent[detail].is_string())
      return title + " (" + agent[detail].get<std::string>() + ")";
  return title;
}

std::string run_embedder(const RunManifest& manifest) { return settings_of(manifest).embedder_or_unknown(); }

Run read_run(const std::filesystem::path& dir) {
  auto manifest = read_manifest(dir);
  return make_run(dir, std::move(manifest), read_records(dir));
}

Run make_run(const std::filesystem::path& dir, RunManifest manifest, std::vector<TaskRecord> records) {
  Run run;
  run.dir = dir;
  run.manifest = std::move(manifest);
  run.title = run_title(run.manifest);
  run.track = manifest_track(run.manifest);
  run.embedder = run_embedder(run.manifest);
  run.records = std::move(records);
  sort_by_task(run.records);
  for (const auto& r : run.records) run.n_errored += r.error.empty() ? 0 : 1;
  run.outcomes = scored_outcomes(run.records);
  return run;
}

}  // namespace pwab::runner
