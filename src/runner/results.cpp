// src/runner/results.cpp: manifest, JSONL records, append-only run directory, resume, merge.
#include "runner/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/json_depth.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/sys.h"
#include "data/task_key.h"
#include "runner/run_settings.h"

namespace pwab::runner {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string dump_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// --- checked field access; every failure is a DataError naming the field ---------------------------------

const json& field(const json& obj, const char* name, std::string_view what) {
  auto it = obj.find(name);
  if (it == obj.end()) throw DataError(std::string(what) + ": missing field '" + name + "'");
  return *it;
}
std::string get_string(const json& obj, const char* name, std::string_view what) {
  const json& v = field(obj, name, what);
  if (!v.is_string()) throw DataError(std::string(what) + ": field '" + name + "' is not a string");
  return v.get<std::string>();
}
double number_value(const json& v, const std::string& name, std::string_view what) {
  if (!v.is_number()) throw DataError(std::string(what) + ": field '" + name + "' is not a number");
  return v.get<double>();
}
double get_number(const json& obj, const char* name, std::string_view what) {
  return number_value(field(obj, name, what), name, what);
}
int64_t get_int(const json& obj, const char* name, std::string_view what) {
  const json& v = field(obj, name, what);
  if (!v.is_number_integer()) throw DataError(std::string(what) + ": field '" + name + "' is not an integer");
  return v.get<int64_t>();
}
bool get_bool(const json& obj, const char* name, std::string_view what) {
  const json& v = field(obj, name, what);
  if (!v.is_boolean()) throw DataError(std::string(what) + ": field '" + name + "' is not a boolean");
  return v.get<bool>();
}
const json& get_array(const json& obj, const char* name, std::string_view what) {
  const json& v = field(obj, name, what);
  if (!v.is_array()) throw DataError(std::string(what) + ": field '" + name + "' is not an array");
  return v;
}
std::pair<double, double> get_pair(const json& v, const std::string& name, std::string_view what) {
  if (!v.is_array() || v.size() != 2) throw DataError(std::string(what) + ": '" + name + "' is not a pair");
  return {number_value(v[0], name, what), number_value(v[1], name, what)};
}

// --- manifest --------------------------------------------------------------------------------------------

json parse_config(std::string_view text, std::string_view what) {
  json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object()) throw UsageError(std::string(what) + ": the config is not a JSON object");
  return j;
}

json manifest_json(const RunManifest& m) {
  json j;
  j["format"] = 1;
  j["config"] = parse_config(m.config_json, "run manifest");
  j["seed"] = m.seed;
  j["dataset_fingerprint"] = m.dataset_fingerprint;
  j["pwab_version"] = m.pwab_version;
  j["created_utc"] = m.created_utc;
  j["shard_index"] = m.shard_index;
  j["shard_count"] = m.shard_count;
  return j;
}

void write_manifest(const fs::path& dir, const RunManifest& m) {
  write_file_atomic(dir / kManifestFile, manifest_json(m).dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

//! Top-level config keys whose values differ, for the resume error message.
std::string config_difference(const json& a, const json& b) {
  std::vector<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key()) || b[it.key()] != it.value()) keys.push_back(it.key());
  for (auto it = b.begin(); it != b.end(); ++it)
    if (!a.contains(it.key())) keys.push_back(it.key());
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

//! The first field (in a fixed order) in which two manifests disagree, or "" when they agree. created_utc
//! never counts; pwab_version, shard_index and the config's trials only when asked.
std::string first_difference(const RunManifest& a, const RunManifest& b, bool version, bool shard_index,
                             bool trials = true) {
  json ca = parse_config(a.config_json, "run manifest"), cb = parse_config(b.config_json, "run manifest");
  if (!trials) {
    ca.erase(kTrialsKey);
    cb.erase(kTrialsKey);
  }
  if (ca != cb) return "config (keys: " + config_difference(ca, cb) + ")";
  if (a.seed != b.seed) return "seed (" + std::to_string(a.seed) + " vs " + std::to_string(b.seed) + ")";
  if (a.dataset_fingerprint != b.dataset_fingerprint)
    return "dataset_fingerprint (" + a.dataset_fingerprint + " vs " + b.dataset_fingerprint + ")";
  if (a.shard_count != b.shard_count)
    return "shard_count (" + std::to_string(a.shard_count) + " vs " + std::to_string(b.shard_count) + ")";
  if (shard_index && a.shard_index != b.shard_index)
    return "shard_index (" + std::to_string(a.shard_index) + " vs " + std::to_string(b.shard_index) + ")";
  if (version && a.pwab_version != b.pwab_version)
    return "pwab_version (" + a.pwab_version + " vs " + b.pwab_version + ")";
  return "";
}

// --- the results file ------------------------------------------------------------------------------------

struct ParsedFile {
  std::vector<TaskRecord> records;  //!< every complete line, in order
  std::size_t valid_bytes = 0;      //!< bytes up to and including the last '\n'
  std::size_t n_truncated = 0;      //!< 1 when bytes follow the last '\n'
};

ParsedFile parse_results(const fs::path& file) {
  ParsedFile out;
  if (!fs::exists(file)) return out;
  std::string text = read_file(file);
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {  // written without its newline: a kill mid-write
      out.n_truncated = 1;
      break;
    }
    ++line_no;
    try {
      out.records.push_back(TaskRecord::from_json(std::string_view(text).substr(pos, nl - pos)));
    } catch (const DataError& e) {
      throw DataError(file.string() + ":" + std::to_string(line_no) + ": " + e.what());
    }
    pos = nl + 1;
    out.valid_bytes = pos;
  }
  return out;
}

//! Per (task, trial) its latest record, in the order those latest records appear.
std::vector<TaskRecord> latest_per_id(std::vector<TaskRecord> records) {
  std::map<RecordId, std::size_t> last;
  for (std::size_t i = 0; i < records.size(); ++i) last[records[i].id()] = i;
  std::vector<TaskRecord> out;
  out.reserve(last.size());
  for (std::size_t i = 0; i < records.size(); ++i)
    if (last[records[i].id()] == i) out.push_back(std::move(records[i]));
  return out;
}

void write_all(int fd, std::string_view bytes, const fs::path& file) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot append to " + file.string() + ": " + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

//! Orders task keys by split name, then by the index as a number; other keys (and mixed pairs) by plain text.
bool key_less(const std::string& a, const std::string& b) {
  const auto ka = data::parse_task_key(a), kb = data::parse_task_key(b);
  if (!ka || !kb) return a < b;
  if (ka->split != kb->split) return data::to_string(ka->split) < data::to_string(kb->split);
  return ka->index != kb->index ? ka->index < kb->index : a < b;
}

}  // namespace

// --- manifest & fingerprint ------------------------------------------------------------------------------

RunManifest read_manifest(const fs::path& dir) {
  fs::path file = dir / kManifestFile;
  std::string what = file.string();
  json j = parse_json_or_discarded(read_file(file));
  if (j.is_discarded() || !j.is_object()) throw DataError(what + ": not a JSON object");
  RunManifest m;
  const json& config = field(j, "config", what);
  if (!config.is_object()) throw DataError(what + ": field 'config' is not an object");
  m.config_json = config.dump();
  RunSettings::from_json(m.config_json, what);  // a key of the wrong type is named with this file, here
  const json& seed = field(j, "seed", what);
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    throw DataError(what + ": field 'seed' is not an unsigned integer");
  m.seed = seed.get<uint64_t>();
  m.dataset_fingerprint = get_string(j, "dataset_fingerprint", what);
  m.pwab_version = get_string(j, "pwab_version", what);
  m.created_utc = get_string(j, "created_utc", what);
  m.shard_index = static_cast<int>(get_int(j, "shard_index", what));
  m.shard_count = static_cast<int>(get_int(j, "shard_count", what));
  return m;
}

data::Track manifest_track(const RunManifest& manifest) { return settings_of(manifest).track_or_default(); }

int manifest_trials(const RunManifest& manifest) { return settings_of(manifest).trials_or_default(); }

std::string dataset_fingerprint(const fs::path& data_dir) {
  if (!fs::is_directory(data_dir)) throw Error("dataset directory not found: " + data_dir.string());
  std::vector<std::pair<std::string, fs::path>> files;
  // Hidden entries are skipped: pwab keeps its caches (index, checkpoints, trained models) in .pwab-* folders
  // inside the data directory, and building them must not change the dataset's identity.
  for (auto it = fs::recursive_directory_iterator(data_dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename().string().starts_with(".")) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.emplace_back(fs::relative(it->path(), data_dir).generic_string(), it->path());
  }
  std::sort(files.begin(), files.end());
  Hasher h;
  h.update_u64(files.size());
  for (const auto& [name, path] : files) {
    h.update_u64(name.size()).update(name);
    h.update_u64(hash_file(path));
  }
  return h.hex();
}

// --- records ---------------------------------------------------------------------------------------------

std::string TaskRecord::to_json_line() const {
  json actions_j = json::array();
  for (const auto& a : actions)
    actions_j.push_back({{"name", a.action.name},
                         {"arguments", a.action.arguments_json},
                         {"observation", a.observation},
                         {"reward", {a.reward.function_acc, a.reward.result_acc}},
                         {"done", a.done},
                         {"scored", a.scored}});
  json attempts_j = json::array();
  for (const auto& a : attempts) attempts_j.push_back({a.function_acc, a.result_acc});
  json j = {{"task", task_key},
            {"trial", trial},
            {"user_id", user_id},
            {"instruction", instruction},
            {"type", std::string(data::to_string(type))},
            {"target_asin", target_asin},
            {"first_observation", first_observation},
            {"actions", std::move(actions_j)},
            {"attempts", std::move(attempts_j)},
            {"steps", steps},
            {"ending", ending},
            {"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"seconds_env", seconds_env},
            {"seconds_agent", seconds_agent},
            {"error", error}};
  if (!usage_json.empty()) {
    json u = parse_json_or_discarded(usage_json);
    if (!u.is_discarded()) j["usage"] = std::move(u);
  }
  if (!user_json.empty()) {
    json u = parse_json_or_discarded(user_json);
    if (!u.is_discarded()) j["user"] = std::move(u);
  }
  return dump_line(j);
}

TaskRecord TaskRecord::from_json(std::string_view line) {
  constexpr std::string_view kWhat = "results record";
  json j = parse_json_or_discarded(line);
  if (j.is_discarded()) throw DataError("results record: not valid JSON");
  if (!j.is_object()) throw DataError("results record: not a JSON object");
  TaskRecord r;
  r.task_key = get_string(j, "task", kWhat);
  std::string what = "results record " + r.task_key;
  if (j.contains("trial")) {  // records written before trials existed have none: trial 0
    int64_t trial = get_int(j, "trial", what);
    if (trial < 0 || trial >= 1'000'000) throw DataError(what + ": field 'trial' is out of range");
    r.trial = static_cast<int>(trial);
    what = "results record " + r.id().to_string();
  }
  r.user_id = get_string(j, "user_id", what);
  r.instruction = get_string(j, "instruction", what);
  std::string type = get_string(j, "type", what);
  auto t = data::parse_task_type(type);
  if (!t) throw DataError(what + ": unknown type '" + type + "'");
  r.type = *t;
  r.target_asin = get_string(j, "target_asin", what);
  r.first_observation = get_string(j, "first_observation", what);
  for (const json& a : get_array(j, "actions", what)) {
    if (!a.is_object()) throw DataError(what + ": an action is not an object");
    env::ActionRecord ar;
    ar.action.name = get_string(a, "name", what);
    ar.action.arguments_json = get_string(a, "arguments", what);
    ar.observation = get_string(a, "observation", what);
    auto [f, res] = get_pair(field(a, "reward", what), "reward", what);
    ar.reward = {f, res};
    ar.done = get_bool(a, "done", what);
    ar.scored = get_bool(a, "scored", what);
    r.actions.push_back(std::move(ar));
  }
  for (const json& a : get_array(j, "attempts", what)) {
    auto [f, res] = get_pair(a, "attempts", what);
    r.attempts.push_back({f, res});
  }
  r.steps = static_cast<int>(get_int(j, "steps", what));
  r.ending = get_string(j, "ending", what);
  r.prompt_tokens = static_cast<int>(get_int(j, "prompt_tokens", what));
  r.completion_tokens = static_cast<int>(get_int(j, "completion_tokens", what));
  r.seconds_env = get_number(j, "seconds_env", what);
  r.seconds_agent = get_number(j, "seconds_agent", what);
  r.error = get_string(j, "error", what);
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    if (!u->is_object()) throw DataError(what + ": usage is not an object");
    r.usage_json = u->dump();
  }
  if (auto u = j.find("user"); u != j.end() && !u->is_null()) {
    if (!u->is_object()) throw DataError(what + ": user is not an object");
    r.user_json = u->dump();
  }
  return r;
}

metrics::TaskOutcome TaskRecord::outcome() const { return {task_key, type, attempts, steps, trial}; }

std::string RecordId::to_string() const {
  return trial == 0 ? task_key : task_key + " trial " + std::to_string(trial);
}

TaskRecord make_record(const data::Dataset& ds, const data::Task& task, const EpisodeResult& result, int trial) {
  TaskRecord r;
  r.task_key = task_key(task);
  r.trial = trial;
  r.user_id = ds.user(task.user).id;
  r.instruction = task.instruction;
  r.type = task.type;
  r.target_asin = ds.product(task.target_product).parent_asin;
  r.first_observation = result.first_observation;
  r.actions = result.actions;
  r.attempts = result.attempts;
  r.steps = result.steps;
  r.ending = result.ending;
  r.prompt_tokens = result.prompt_tokens;
  r.completion_tokens = result.completion_tokens;
  r.seconds_env = result.seconds_env;
  r.seconds_agent = result.seconds_agent;
  return r;
}

// --- run directory ---------------------------------------------------------------------------------------

// A record waiting to be committed with others (RunDirectory::append).
struct detail::PendingRecord {
  std::string line;
  RecordId id;
  bool ok = false;      // the record has no error
  bool done = false;    // written and synced, or failed
  std::string failure;  // why it was not written
};

namespace {

using detail::PendingRecord;

// Writes whole lines with one write and syncs them; "" when they are on disk, else why not (the file cut back).
std::string write_batch(int fd, const fs::path& file, const std::vector<std::shared_ptr<PendingRecord>>& batch) {
  std::string lines;
  for (const auto& p : batch) lines += p->line;
  // A full disk (or a file-size limit) can take part of the lines before refusing the rest: cut the file back to
  // where it was, so that no torn line is left for the next append to run into.
  struct stat before {};
  const bool sized = ::fstat(fd, &before) == 0;
  try {
    write_all(fd, lines, file);
  } catch (const Error& e) {
    if (sized && ::ftruncate(fd, before.st_size) == 0)
      return std::string(e.what()) + " (the record was not written; the file is as it was)";
    return e.what();
  }
  if (::fsync(fd) != 0) return "cannot sync " + file.string() + ": " + std::strerror(errno);
  return {};
}

}  // namespace

struct RunDirectory::State {
  fs::path dir;
  RunManifest manifest;
  std::size_t n_truncated = 0;
  mutable std::mutex mu;
  std::map<RecordId, bool> latest_ok;  //!< per (task, trial): whether its latest record has no error
  int fd = -1;
  // Group commit: records appended while a write is under way wait for the next one, which takes them all.
  std::vector<std::shared_ptr<PendingRecord>> queue;
  bool writing = false;
  std::condition_variable written;
  ~State() {
    if (fd >= 0) ::close(fd);
  }
};

RunDirectory::RunDirectory(std::unique_ptr<State> state) : state_(std::move(state)) {}
RunDirectory::RunDirectory(RunDirectory&&) noexcept = default;
RunDirectory& RunDirectory::operator=(RunDirectory&&) noexcept = default;
RunDirectory::~RunDirectory() = default;

RunDirectory RunDirectory::open(const fs::path& dir, const RunManifest& manifest, bool resume) {
  auto st = std::make_unique<State>();
  st->dir = dir;
  fs::path results = dir / kResultsFile;
  bool has_manifest = fs::exists(dir / kManifestFile);
  bool has_results = fs::exists(results) && fs::file_size(results) > 0;
  if (!resume && has_results)
    throw UsageError("run directory " + dir.string() + " already has results; resume it or choose another");
  if (manifest.shard_count < 1 || manifest.shard_index < 0 || manifest.shard_index >= manifest.shard_count)
    throw UsageError("invalid shard " + std::to_string(manifest.shard_index) + " of " +
                     std::to_string(manifest.shard_count));
  if (resume && has_manifest) {
    RunManifest stored = read_manifest(dir);
    std::string diff = first_difference(stored, manifest, /*version=*/false, /*shard_index=*/true, /*trials=*/false);
    if (!diff.empty())
      throw UsageError("cannot resume " + dir.string() + ": the run was started with a different " + diff);
    st->manifest = stored;
    int stored_trials = manifest_trials(stored), trials = manifest_trials(manifest);
    if (trials < stored_trials)
      throw UsageError("cannot resume " + dir.string() + ": it has " + std::to_string(stored_trials) +
                       " trials per task; --trials may only be raised (omit it to keep " +
                       std::to_string(stored_trials) + ")");
    if (trials > stored_trials) {  // more trials of the same run: the missing ones run
      RunSettings settings = settings_of(stored);
      settings.trials = trials;
      st->manifest.config_json = settings.to_json();
      write_manifest(dir, st->manifest);
    }
    ParsedFile parsed = parse_results(results);
    if (parsed.n_truncated) fs::resize_file(results, parsed.valid_bytes);  // drop the half-written line
    st->n_truncated = parsed.n_truncated;
    for (const auto& r : parsed.records) st->latest_ok[r.id()] = r.error.empty();
  } else {
    if (resume && has_results)
      throw UsageError("cannot resume " + dir.string() + ": it has results but no " + kManifestFile);
    st->manifest = manifest;
    st->manifest.config_json = parse_config(manifest.config_json, "run manifest").dump();
    if (st->manifest.created_utc.empty()) st->manifest.created_utc = utc_now_iso();
    fs::create_directories(dir);
    write_manifest(dir, st->manifest);
  }
  st->fd = ::open(results.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (st->fd < 0) throw Error("cannot open " + results.string() + ": " + std::strerror(errno));
  return RunDirectory(std::move(st));
}

const fs::path& RunDirectory::path() const { return state_->dir; }
const RunManifest& RunDirectory::manifest() const { return state_->manifest; }
std::size_t RunDirectory::n_truncated() const { return state_->n_truncated; }

std::set<RecordId> RunDirectory::done() const {
  std::lock_guard lock(state_->mu);
  std::set<RecordId> out;
  for (const auto& [id, ok] : state_->latest_ok)
    if (ok) out.insert(id);
  return out;
}

bool RunDirectory::is_done(const RecordId& id) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->latest_ok.find(id);
  return it != state_->latest_ok.end() && it->second;
}

namespace {

//! Whether read_records gives back exactly `r` for `line` (its to_json_line): no usage or user object (read back
//! re-serialized), every number finite (a non-finite one is written as null, which does not read back) and no
//! U+FFFD in the line (invalid UTF-8 is written replaced; a U+FFFD that was there already is counted too, to be
//! safe). Conservative: false only costs the caller a re-read.
bool reads_back_exactly(const TaskRecord& r, std::string_view line) {
  if (!r.usage_json.empty() || !r.user_json.empty()) return false;
  if (line.find("\xEF\xBF\xBD") != std::string_view::npos) return false;
  auto finite = [](double x) { return std::isfinite(x); };
  if (!finite(r.seconds_env) || !finite(r.seconds_agent)) return false;
  for (const auto& a : r.actions)
    if (!finite(a.reward.function_acc) || !finite(a.reward.result_acc)) return false;
  for (const auto& a : r.attempts)
    if (!finite(a.function_acc) || !finite(a.result_acc)) return false;
  return true;
}

}  // namespace

RecordLine::RecordLine(TaskRecord r) : record(std::move(r)) {
  line = record.to_json_line() + "\n";
  exact = reads_back_exactly(record, line);
}

// Appends are committed in groups: the first caller to find no write under way writes every record queued so far
// with one write and one fsync, while the callers behind it wait; each call returns once its own records are on
// disk (or throws when they are not). Hundreds of episodes finishing at once cost a few fsyncs, not hundreds.
void RunDirectory::commit(const std::vector<std::shared_ptr<PendingRecord>>& mine) {
  State& st = *state_;
  std::unique_lock lock(st.mu);
  st.queue.insert(st.queue.end(), mine.begin(), mine.end());
  auto all_done = [&] {
    return std::all_of(mine.begin(), mine.end(), [](const auto& p) { return p->done; });
  };
  while (!all_done()) {
    if (st.writing) {
      st.written.wait(lock);
      continue;
    }
    st.writing = true;
    std::vector<std::shared_ptr<PendingRecord>> batch;
    batch.swap(st.queue);
    lock.unlock();
    std::string failure = write_batch(st.fd, st.dir / kResultsFile, batch);
    lock.lock();
    for (const auto& p : batch) {
      p->done = true;
      p->failure = failure;
      if (failure.empty()) st.latest_ok[p->id] = p->ok;
    }
    st.writing = false;
    st.written.notify_all();
  }
  for (const auto& p : mine)
    if (!p->failure.empty()) throw Error(p->failure);
}

void RunDirectory::append(const TaskRecord& record) {
  auto p = std::make_shared<PendingRecord>();
  p->line = record.to_json_line() + "\n";
  p->id = record.id();
  p->ok = record.error.empty();
  commit({p});
}

void RunDirectory::append_all(const std::vector<RecordLine>& records) {
  std::vector<std::shared_ptr<PendingRecord>> pending;
  pending.reserve(records.size());
  for (const auto& r : records) {
    auto p = std::make_shared<PendingRecord>();
    p->line = r.line;
    p->id = r.record.id();
    p->ok = r.record.error.empty();
    pending.push_back(std::move(p));
  }
  commit(pending);
}

// --- reading, merging, sharding --------------------------------------------------------------------------

std::vector<TaskRecord> read_records(const fs::path& dir, std::size_t* n_truncated) {
  fs::path file = dir / kResultsFile;
  if (!fs::exists(file)) throw DataError("no " + std::string(kResultsFile) + " in " + dir.string());
  ParsedFile parsed = parse_results(file);
  if (n_truncated) *n_truncated = parsed.n_truncated;
  return latest_per_id(std::move(parsed.records));
}

std::vector<metrics::TaskOutcome> scored_outcomes(const std::vector<TaskRecord>& records) {
  std::vector<metrics::TaskOutcome> out;
  for (const auto& r : records)
    if (r.error.empty()) out.push_back(r.outcome());
  return out;
}

void merge_runs(const std::vector<fs::path>& shard_dirs, const fs::path& out) {
  if (shard_dirs.empty()) throw UsageError("merge: no shard directories given");
  if (fs::exists(out / kResultsFile) && fs::file_size(out / kResultsFile) > 0)
    throw UsageError("merge: " + out.string() + " already has results");
  std::vector<RunManifest> manifests;
  for (const auto& d : shard_dirs) manifests.push_back(read_manifest(d));
  const RunManifest& first = manifests[0];
  std::vector<bool> seen(static_cast<std::size_t>(std::max(first.shard_count, 1)), false);
  for (std::size_t i = 0; i < manifests.size(); ++i) {
    std::string diff = first_difference(first, manifests[i], /*version=*/true, /*shard_index=*/false);
    if (!diff.empty())
      throw UsageError("merge: " + shard_dirs[i].string() + " differs from " + shard_dirs[0].string() + " in " + diff);
    int k = manifests[i].shard_index;
    if (k < 0 || k >= first.shard_count) throw DataError("merge: " + shard_dirs[i].string() + " has a bad shard index");
    if (seen[static_cast<std::size_t>(k)])
      throw UsageError("merge: shard " + std::to_string(k) + " given twice (" + shard_dirs[i].string() + ")");
    seen[static_cast<std::size_t>(k)] = true;
  }
  if (manifests.size() != seen.size())
    throw UsageError("merge: got " + std::to_string(manifests.size()) + " shards of " +
                     std::to_string(first.shard_count));

  std::map<RecordId, std::size_t> owner;  // (task, trial) -> shard dir position
  std::vector<TaskRecord> all;
  for (std::size_t i = 0; i < shard_dirs.size(); ++i) {
    for (auto& r : read_records(shard_dirs[i])) {
      auto [it, inserted] = owner.emplace(r.id(), i);
      if (!inserted)
        throw DataError("merge: task " + r.id().to_string() + " is in both " + shard_dirs[it->second].string() +
                        " and " + shard_dirs[i].string());
      all.push_back(std::move(r));
    }
  }
  sort_by_task(all);
  std::string text;
  for (const auto& r : all) text += r.to_json_line() + "\n";

  RunManifest merged = first;
  merged.shard_index = 0;
  merged.shard_count = 1;
  merged.created_utc = utc_now_iso();
  fs::create_directories(out);
  write_file_atomic(out / kResultsFile, text);
  write_manifest(out, merged);
}

void sort_by_task(std::vector<TaskRecord>& records) {
  std::stable_sort(records.begin(), records.end(), [](const TaskRecord& a, const TaskRecord& b) {
    if (a.task_key != b.task_key) return key_less(a.task_key, b.task_key);
    return a.trial < b.trial;
  });
}

bool in_shard(std::size_t task_index, int shard_index, int shard_count) {
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count)
    throw UsageError("invalid shard " + std::to_string(shard_index) + " of " + std::to_string(shard_count));
  return task_index % static_cast<std::size_t>(shard_count) == static_cast<std::size_t>(shard_index);
}

}  // namespace pwab::runner
