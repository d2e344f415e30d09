// Submission bundles: prepare writes the claims beside the records; verify re-scores the records and compares
// (submission.h).
#include "assemble/submission.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/sys.h"
#include "core/version.h"
#include "env/tools.h"
#include "data/loader.h"
#include "report/diagnosis.h"
#include "report/report.h"
#include "runner/read_run.h"
#include "report/summaries.h"
#include "assemble/rescore.h"
#include "runner/results.h"
#include "runner/run_settings.h"

namespace pwab::assemble {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// What the environment was: everything besides the agent and the dataset that decides the numbers a trajectory
// scores. Its fingerprint is the hash of this object's canonical text.
Json environment_of(const runner::RunManifest& manifest) {
  const runner::RunSettings s = runner::settings_of(manifest);
  auto value = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"pwab_version", manifest.pwab_version},
          {"split", value(s.split)},
          {"track", s.track ? Json(std::string(data::to_string(*s.track))) : Json(nullptr)},
          {"user_sim", value(s.user_sim)},
          {"max_steps", value(s.max_steps)},
          {"top_k", value(s.top_k)},
          {"embedder", value(s.embedder)},
          {"search_index", value(s.search_index)},
          {"recommender", value(s.recommender)},
          {"trials", value(s.trials)}};
}

std::string fingerprint_of(const Json& object) { return to_hex(hash_bytes(object.dump())); }

// The agent as the leaderboard shows it: its name, its configuration, and the models it called (names only: the
// manifest never holds credentials).
Json agent_of(const runner::RunManifest& manifest) {
  const runner::RunSettings s = runner::settings_of(manifest);
  Json agent = {{"name", s.agent.value_or("")},
                {"config", s.agent_config ? Json::parse(*s.agent_config) : Json::object()}};
  if (s.llm) agent["llm"] = Json::parse(*s.llm);
  return agent;
}

std::string records_text(const std::vector<runner::TaskRecord>& records) {
  std::string text;
  for (const runner::TaskRecord& r : records) text += r.to_json_line() + "\n";
  return text;
}

void require_empty_or_missing(const fs::path& out) {
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw UsageError(fmt::format("{} already exists and is not an empty folder: choose a new --out", out.string()));
}

//! The string field `key` of `object`, or a DataError naming the bundle file and the field.
std::string string_field(const Json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || !object[key].is_string())
    throw DataError(fmt::format("{}: \"{}\" is missing or not a string", where, key));
  return object[key].get<std::string>();
}

// The first place where `claimed` and `computed` (two `pwab score --format json` objects) differ, or "": the same
// keys, equal strings and integers, numbers within `tolerance` (relative above 1).
std::string first_json_difference(const Json& claimed, const Json& computed, double tolerance,
                                  const std::string& path = "") {
  auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (claimed.is_number() && computed.is_number()) {
    const double a = claimed.get<double>(), b = computed.get<double>();
    if (std::fabs(a - b) <= tolerance * std::max(1.0, std::fabs(b))) return "";
    return fmt::format("{}: claimed {}, the records give {}", path, claimed.dump(), computed.dump());
  }
  if (claimed.type() != computed.type())
    return fmt::format("{}: claimed {}, the records give {}", path, claimed.dump(), computed.dump());
  if (claimed.is_object()) {
    for (auto it = computed.begin(); it != computed.end(); ++it)
      if (!claimed.contains(it.key())) return fmt::format("{}: not claimed", at(it.key()));
    for (auto it = claimed.begin(); it != claimed.end(); ++it) {
      if (!computed.contains(it.key()))
        return fmt::format("{}: claimed, but the records give no such figure", at(it.key()));
      if (auto d = first_json_difference(it.value(), computed[it.key()], tolerance, at(it.key())); !d.empty()) return d;
    }
    return "";
  }
  if (claimed.is_array()) {
    if (claimed.size() != computed.size())
      return fmt::format("{}: {} entries claimed, the records give {}", path, claimed.size(), computed.size());
    for (std::size_t i = 0; i < claimed.size(); ++i)
      if (auto d = first_json_difference(claimed[i], computed[i], tolerance, fmt::format("{}[{}]", path, i));
          !d.empty())
        return d;
    return "";
  }
  if (claimed == computed) return "";
  return fmt::format("{}: claimed {}, the records give {}", path, claimed.dump(), computed.dump());
}

// The first record whose stored attempts or ending the replay does not reproduce, or "".
std::string first_record_difference(const std::vector<runner::TaskRecord>& stored, const std::vector<runner::TaskRecord>& replayed,
                                    bool replies_regenerated, double tolerance) {
  std::map<runner::RecordId, const runner::TaskRecord*> by_id;
  for (const runner::TaskRecord& r : replayed) by_id[r.id()] = &r;
  for (const runner::TaskRecord& s : stored) {
    auto it = by_id.find(s.id());
    const std::string who = s.id().to_string();
    if (it == by_id.end()) return who + ": the replay has no record of it";
    const runner::TaskRecord& r = *it->second;
    if (!s.error.empty()) continue;  // copied as it is
    if (replies_regenerated)
      for (std::size_t i = 0; i < s.actions.size() && i < r.actions.size(); ++i)
        if (s.actions[i].action.name == env::kRespond && s.actions[i].observation != r.actions[i].observation)
          return fmt::format("{}: the user's reply at step {} is not the scripted user's (recorded \"{}\", the "
                             "simulator says \"{}\")",
                             who, i + 1, report::cut_utf8(s.actions[i].observation, 80),
                             report::cut_utf8(r.actions[i].observation, 80));
    if (s.attempts.size() != r.attempts.size())
      return fmt::format("{}: {} scored attempts recorded, the trajectory makes {}", who, s.attempts.size(),
                         r.attempts.size());
    for (std::size_t i = 0; i < s.attempts.size(); ++i) {
      const metrics::Attempt &a = s.attempts[i], &b = r.attempts[i];
      if (a.function_acc != b.function_acc)
        return fmt::format("{}: attempt {} claims function_acc {}, the trajectory gives {}", who, i + 1,
                           a.function_acc, b.function_acc);
      if (std::fabs(a.result_acc - b.result_acc) > tolerance * std::max(1.0, std::fabs(b.result_acc)))
        return fmt::format("{}: attempt {} claims result_acc {}, the trajectory gives {}", who, i + 1, a.result_acc,
                           b.result_acc);
    }
    if (s.ending != r.ending)
      return fmt::format("{}: recorded ending \"{}\", the trajectory ends with \"{}\"", who, s.ending, r.ending);
  }
  return "";
}

// A temporary folder for the re-scored runs, removed when it goes out of scope (unless the caller named one).
class WorkDir {
 public:
  explicit WorkDir(const fs::path& named) : path_(named), owned_(named.empty()) {
    if (owned_) {
      std::string pattern = (fs::temp_directory_path() / "pwab-verify-XXXXXX").string();
      if (!mkdtemp(pattern.data()))
        throw Error("cannot create a temporary folder under " + fs::temp_directory_path().string());
      path_ = pattern;
    }
  }
  ~WorkDir() {
    std::error_code ec;
    if (owned_) fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool owned_;
};

// The summary the claim was made with: its bootstrap settings and, with trials, its pass rule.
metrics::Summary recompute(const std::vector<metrics::TaskOutcome>& outcomes, const Json& claimed) {
  metrics::BootstrapOptions bootstrap;
  if (claimed.contains("bootstrap") && claimed["bootstrap"].is_object()) {
    const Json& b = claimed["bootstrap"];
    bootstrap.resamples = b.value("resamples", bootstrap.resamples);
    bootstrap.confidence = b.value("confidence", bootstrap.confidence);
    bootstrap.seed = b.value("seed", bootstrap.seed);
  }
  metrics::PassRule rule;
  if (claimed.contains("trials") && claimed["trials"].contains("pass_rule")) {
    std::string text;
    for (const auto& [type, threshold] : claimed["trials"]["pass_rule"].items())
      if (threshold.is_number()) text += (text.empty() ? "" : ",") + type + "=" + threshold.dump();
    if (!text.empty()) rule = metrics::PassRule::parse(text);
  }
  return metrics::summarize(outcomes, bootstrap, rule);
}

// The diagnosis options a claim was made with: its pass rule and leak rule, and the scores' bootstrap settings.
report::DiagnosisOptions diagnosis_options(const Json& diagnosis, const metrics::BootstrapOptions& bootstrap) {
  report::DiagnosisOptions o;
  o.bootstrap = bootstrap;
  if (diagnosis.contains("pass_rule") && diagnosis["pass_rule"].is_object()) {
    std::string text;
    for (const auto& [type, threshold] : diagnosis["pass_rule"].items())
      if (threshold.is_number()) text += (text.empty() ? "" : ",") + type + "=" + threshold.dump();
    if (!text.empty()) o.rule = metrics::PassRule::parse(text);
  }
  if (diagnosis.contains("leak_rule") && diagnosis["leak_rule"].is_object()) {
    o.leak.title_words = diagnosis["leak_rule"].value("title_words", o.leak.title_words);
    o.leak.review_words = diagnosis["leak_rule"].value("review_words", o.leak.review_words);
  }
  return o;
}

//! The dataset, loaded on first use (only bundles that claim a diagnosis need it).
class LazyDataset {
 public:
  explicit LazyDataset(fs::path dir) : dir_(std::move(dir)) {}
  const data::Dataset& get() {
    if (!ds_) ds_ = data::load_dataset(dir_);
    return *ds_;
  }

 private:
  fs::path dir_;
  std::optional<data::Dataset> ds_;
};

// Checks one run of the bundle; fills the verdict (failure empty when it verified).
void verify_run(const fs::path& bundle, const Json& claim, const VerifyOptions& options,
                const std::string& data_fingerprint, const fs::path& work, LazyDataset& dataset, RunVerdict& verdict,
                std::vector<std::string>& notes) {
  const std::string where = (bundle / kSubmissionFile).string();
  verdict.name = string_field(claim, "dir", where);
  if (verdict.name.empty() || verdict.name.find("..") != std::string::npos || verdict.name.front() == '/')
    throw DataError(fmt::format("{}: run folder \"{}\" is not a folder inside the bundle", where, verdict.name));
  const fs::path dir = bundle / verdict.name;
  const std::string records_hash = to_hex(hash_file(dir / runner::kResultsFile));
  runner::Run stored = runner::read_run(dir);
  verdict.title = stored.title;
  verdict.track = stored.track;
  auto fail = [&](std::string why) { verdict.failure = std::move(why); };

  if (records_hash != string_field(claim, "records_hash", where))
    return fail(fmt::format("{}/{} is not the file the bundle was prepared with (hash {}, submission.json says {})",
                            verdict.name, runner::kResultsFile, records_hash, claim["records_hash"].get<std::string>()));
  if (stored.manifest.dataset_fingerprint != data_fingerprint)
    return fail(fmt::format("the run was made on dataset {}, but {} is {}", stored.manifest.dataset_fingerprint,
                            options.data.string(), data_fingerprint));
  if (string_field(claim, "dataset_fingerprint", where) != data_fingerprint)
    return fail(fmt::format("submission.json claims dataset {}, but {} is {}",
                            claim["dataset_fingerprint"].get<std::string>(), options.data.string(), data_fingerprint));
  const Json environment = environment_of(stored.manifest);
  if (string_field(claim, "environment_fingerprint", where) != fingerprint_of(environment))
    return fail(fmt::format("submission.json claims environment {}, but the run's manifest describes {} ({})",
                            claim["environment_fingerprint"].get<std::string>(), fingerprint_of(environment),
                            environment.dump()));
  if (stored.manifest.pwab_version != kVersion)
    notes.push_back(fmt::format("{} was made with pwab {}; this is pwab {}", verdict.name,
                                stored.manifest.pwab_version, kVersion));

  RescoreOptions rescore;
  rescore.data = options.data;
  rescore.embedder = options.embedder;
  rescore.index_dir = options.index_dir;
  rescore.checkpoint = options.checkpoint;
  rescore.status = options.status;
  rescore.require_same_services = true;
  rescore.regenerate_scripted_replies = true;
  const fs::path out = work / verdict.name;
  if (options.status)
    options.status(fmt::format("re-scoring {} ({}, {} records) on {}", verdict.name, verdict.title,
                               stored.records.size(), options.data.string()));
  RescoreReport replay;
  try {
    replay = rescore_run(dir, out, rescore);
  } catch (const DataError& e) {  // a record of a task DATA lacks, or other services: this run fails
    return fail(e.what());
  }
  verdict.replies_regenerated = replay.regenerated_replies;
  verdict.changed_observations = replay.changed_observations;
  verdict.split_tasks = replay.split_tasks;
  runner::Run replayed = runner::read_run(out);
  verdict.records = replayed.records.size();
  std::set<std::string> tasks;
  for (const runner::TaskRecord& r : replayed.records) tasks.insert(r.task_key);
  verdict.tasks = tasks.size();
  if (verdict.track == data::Track::kMultiTurn && !replay.regenerated_replies)
    notes.push_back(fmt::format("{}: the user's replies are taken as recorded (its user simulator, {}, cannot be "
                                "run again offline)",
                                verdict.name, runner::settings_of(stored.manifest).user_sim.value_or("unknown")));

  if (auto d = first_record_difference(stored.records, replayed.records, replay.regenerated_replies, options.tolerance);
      !d.empty())
    return fail(d);
  if (!claim.contains("scores") || !claim["scores"].is_object())
    throw DataError(fmt::format("{}: run {} has no \"scores\" object", where, verdict.name));
  const Json computed = Json::parse(metrics::format_json(recompute(replayed.outcomes, claim["scores"])));
  if (auto d = first_json_difference(claim["scores"], computed, options.tolerance); !d.empty())
    return fail("scores " + d);
  if (claim.contains("diagnosis") && claim["diagnosis"].is_object()) {
    const metrics::Summary claimed_summary = recompute(replayed.outcomes, claim["scores"]);
    const report::Diagnosis diagnosis = report::diagnose(
        replayed, dataset.get(), diagnosis_options(claim["diagnosis"], claimed_summary.bootstrap));
    const Json recomputed = Json::parse(report::diagnosis_json(diagnosis));
    if (auto d = first_json_difference(claim["diagnosis"], recomputed, options.tolerance); !d.empty())
      return fail("diagnosis " + d);
  } else {
    notes.push_back(verdict.name + ": claims no diagnosis (prepared without --data)");
  }
  if (options.require_complete && verdict.tasks < verdict.split_tasks)
    return fail(fmt::format("covers {} of the {} tasks of its split (--require-complete)", verdict.tasks,
                            verdict.split_tasks));
}

}  // namespace

void prepare_submission(const std::vector<fs::path>& runs, const fs::path& out, const SubmissionInfo& info) {
  if (runs.empty()) throw UsageError("a submission needs at least one run directory");
  if (info.model.empty()) throw UsageError("name the model behind the agent with --model");
  require_empty_or_missing(out);
  std::vector<runner::Run> read;
  for (const fs::path& dir : runs) {
    runner::Run run = runner::read_run(dir);
    if (run.manifest.shard_count > 1)
      throw UsageError(fmt::format("{} is shard {} of {}: `pwab merge` the shards into one run first", dir.string(),
                                   run.manifest.shard_index, run.manifest.shard_count));
    if (run.n_errored)
      throw UsageError(fmt::format("{} has {} errored tasks (infrastructure failures): `pwab run ... --resume` "
                                   "retries them before a submission",
                                   dir.string(), run.n_errored));
    if (run.records.empty()) throw UsageError(dir.string() + " has no records");
    read.push_back(std::move(run));
  }

  Json bundle = {{"format", kSubmissionFormat},
                 {"prepared_with", kVersion},
                 {"created_utc", utc_now_iso()},
                 {"model", info.model},
                 {"description", info.description},
                 {"runs", Json::array()}};
  std::string summary_md = fmt::format("# {}\n\n{}\n", info.model, info.description);
  std::optional<data::Dataset> ds;
  if (!info.data.empty()) ds = data::load_dataset(info.data);
  const std::string data_fingerprint = info.data.empty() ? "" : runner::dataset_fingerprint(info.data);
  for (std::size_t k = 0; k < read.size(); ++k) {
    const runner::Run& run = read[k];
    const std::string name = fmt::format("runs/{}", k + 1);
    const fs::path dir = out / name;
    write_file_atomic(dir / runner::kManifestFile, read_file(run.dir / runner::kManifestFile));
    const std::string records = records_text(run.records);
    write_file_atomic(dir / runner::kResultsFile, records);
    const metrics::Summary summary = metrics::summarize(run.outcomes, info.bootstrap);
    const Json environment = environment_of(run.manifest);
    bundle["runs"].push_back({{"dir", name},
                              {"title", run.title},
                              {"agent", agent_of(run.manifest)},
                              {"dataset_fingerprint", run.manifest.dataset_fingerprint},
                              {"environment", environment},
                              {"environment_fingerprint", fingerprint_of(environment)},
                              {"records", run.records.size()},
                              {"records_hash", to_hex(hash_bytes(records))},
                              {"scores", Json::parse(metrics::format_json(summary))}});
    std::optional<report::Diagnosis> diagnosis;
    if (ds) {
      if (run.manifest.dataset_fingerprint != data_fingerprint)
        throw UsageError(fmt::format("{} was made on dataset {}, but --data {} is {}", run.dir.string(),
                                     run.manifest.dataset_fingerprint, info.data.string(), data_fingerprint));
      report::DiagnosisOptions options;
      options.bootstrap = info.bootstrap;
      diagnosis = report::diagnose(run, *ds, options);
      bundle["runs"].back()["diagnosis"] = Json::parse(report::diagnosis_json(*diagnosis));
    }
    summary_md += fmt::format("\n## Run {}: {}, {}-turn track\n\n{}", k + 1, run.title,
                              data::to_string(run.track),
                              report::render_summary(summary, run, "md", diagnosis ? &*diagnosis : nullptr));
  }
  write_file_atomic(out / "summary.md", summary_md);
  // submission.json last: a bundle without it is visibly unfinished.
  write_file_atomic(out / kSubmissionFile, bundle.dump(2) + "\n");
}

bool VerifyReport::ok() const {
  for (const RunVerdict& r : runs)
    if (!r.failure.empty()) return false;
  return true;
}

std::string VerifyReport::first_failure() const {
  for (const RunVerdict& r : runs)
    if (!r.failure.empty()) return fmt::format("{} ({}): {}", r.name, r.title, r.failure);
  return "";
}

VerifyReport verify_submission(const fs::path& bundle, const VerifyOptions& options) {
  const fs::path file = bundle / kSubmissionFile;
  const Json claim = Json::parse(read_file(file), nullptr, false);
  if (claim.is_discarded()) throw DataError(file.string() + ": not valid JSON");
  if (!claim.is_object()) throw DataError(file.string() + ": not a JSON object");
  if (string_field(claim, "format", file.string()) != kSubmissionFormat)
    throw DataError(fmt::format("{}: format \"{}\" is not {}", file.string(), claim["format"].get<std::string>(),
                                kSubmissionFormat));
  if (!claim.contains("runs") || !claim["runs"].is_array() || claim["runs"].empty())
    throw DataError(file.string() + ": \"runs\" is missing, empty or not a list");

  VerifyReport report;
  report.model = string_field(claim, "model", file.string());
  const std::string data_fingerprint = runner::dataset_fingerprint(options.data);
  WorkDir work(options.work_dir);
  LazyDataset dataset(options.data);
  for (const Json& run : claim["runs"]) {
    if (!run.is_object()) throw DataError(file.string() + ": an entry of \"runs\" is not an object");
    RunVerdict verdict;
    verify_run(bundle, run, options, data_fingerprint, work.path(), dataset, verdict, report.notes);
    report.runs.push_back(std::move(verdict));
  }
  return report;
}

std::string format_verify_report(const VerifyReport& report) {
  std::string text = fmt::format("submission: {} ({} runs)\n", report.model, report.runs.size());
  for (const RunVerdict& r : report.runs) {
    text += fmt::format("  {} {} [{}-turn]: ", r.name, r.title, data::to_string(r.track));
    if (!r.failure.empty()) {
      text += "FAILED: " + r.failure + "\n";
      continue;
    }
    text += fmt::format("ok: {} records re-scored, the claimed scores follow; {} of {} tasks of its split", r.records,
                        r.tasks, r.split_tasks);
    if (r.track == data::Track::kMultiTurn) text += r.replies_regenerated ? "; the scripted user's replies regenerated" : "";
    if (r.changed_observations) text += fmt::format("; {} records saw other tool output", r.changed_observations);
    text += "\n";
  }
  for (const std::string& note : report.notes) text += "  note: " + note + "\n";
  text += report.ok() ? "verified\n" : "NOT verified: " + report.first_failure() + "\n";
  return text;
}

}  // namespace pwab::assemble
