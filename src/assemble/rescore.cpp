// Re-grading stored trajectories: each record's actions replayed in a fresh Episode (rescore.h).
#include "assemble/rescore.h"

#include <fmt/format.h>

#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_depth.h"
#include "data/loader.h"
#include "data/task_key.h"
#include "assemble/services.h"
#include "env/tools.h"
#include "metrics/metrics.h"
#include "runner/episode.h"
#include "runner/results.h"
#include "runner/run_settings.h"
#include "runner/run.h"
#include "sim/scripted_user.h"

namespace pwab::assemble {
namespace {

using Json = nlohmann::json;

// The user of a replayed multi-turn episode: the replies the record holds, in order, for the responds that reached
// the user (a respond without a string "content" never did).
class RecordedUser final : public env::UserChannel {
 public:
  explicit RecordedUser(const std::vector<env::ActionRecord>& actions) {
    for (const env::ActionRecord& a : actions) {
      if (a.action.name != env::kRespond) continue;
      Json args = parse_json_or_discarded(a.action.arguments_json);
      if (args.is_object() && args.contains("content") && args["content"].is_string())
        replies_.push_back(a.observation);
    }
  }
  std::string reply(const std::string&) override {
    return next_ < replies_.size() ? replies_[next_++] : std::string("###STOP###");
  }

 private:
  std::vector<std::string> replies_;
  std::size_t next_ = 0;
};

const data::Task& task_of(const data::Dataset& ds, const std::string& key, const std::filesystem::path& run) {
  if (const data::Task* task = data::task_by_key(ds, key)) return *task;
  throw DataError(fmt::format("{}: record of task '{}', which the dataset does not have", run.string(), key));
}

// The --embedder spec that reopens the embedder a manifest names ("hashing-v1/384" → "hashing:384").
std::string embedder_spec(const std::string& name) {
  if (name.rfind("hashing", 0) == 0) {
    const auto slash = name.rfind('/');
    return slash == std::string::npos ? "hashing" : "hashing:" + name.substr(slash + 1);
  }
  if (name.rfind("fasttext", 0) == 0) return "fasttext";  // "fasttext-sif-v1/DIM/MODEL": DATA's cached model
  throw UsageError(fmt::format("the run's embedder '{}' cannot be reopened from its name: give --embedder (e.g. "
                               "minilm:MODEL_DIR)",
                               name));
}

// Whether every observation of `a` equals `b`'s; with `replies_only`, only those of `respond` actions.
bool same_observations(const runner::TaskRecord& a, const runner::TaskRecord& b, bool replies_only = false) {
  if (a.actions.size() != b.actions.size()) return false;
  for (std::size_t i = 0; i < a.actions.size(); ++i) {
    if (replies_only && a.actions[i].action.name != env::kRespond) continue;
    if (a.actions[i].observation != b.actions[i].observation) return false;
  }
  return true;
}

// The embedder, search index and SASRec checkpoint a manifest names must be the ones opened (require_same_services).
void check_services(const runner::RunSettings& settings, const DatasetEnvironment& world,
                    const std::filesystem::path& run) {
  const Services& services = world.services;
  const std::string index = settings.search_index.value_or(""), recommender = settings.recommender.value_or(""),
                    embedder = settings.embedder.value_or("");
  if (!embedder.empty() && embedder != world.embedder->name())
    throw DataError(fmt::format("{}: the run scored reviews with embedder {}, but the one opened is {} (give the "
                                "run's with --embedder)",
                                run.string(), embedder, world.embedder->name()));
  if (!index.empty() && index != services.index->fingerprint())
    throw DataError(fmt::format("{}: the run searched index {}, but the index opened is {} (rebuild it from the "
                                "run's dataset, or give --index-dir)",
                                run.string(), index, services.index->fingerprint()));
  const std::string checkpoint = to_hex(hash_file(services.checkpoint));
  if (!recommender.empty() && recommender != checkpoint)
    throw DataError(fmt::format("{}: the run recommended with SASRec checkpoint {}, but {} is {} (give the run's "
                                "checkpoint with --checkpoint)",
                                run.string(), recommender, services.checkpoint.string(), checkpoint));
}

metrics::TaskScore score_of(const runner::TaskRecord& r) {
  return metrics::score_task({r.task_key, data::TaskType::kSearch, r.attempts, r.steps, r.trial});
}

// How a replayed multi-turn episode's user answers: with the recorded replies, or (scripted) the scripted simulator
// run again with the run's seed.
struct ReplayUser {
  bool scripted = false;
  uint64_t seed = 0;
};

// The record the replay gives: the new trajectory and scores, the old record's agent-side facts.
runner::TaskRecord replay(const env::Environment& env, const data::Dataset& ds, const runner::TaskRecord& old, data::Track track,
                  int run_max_steps, const ReplayUser& how, const std::filesystem::path& run) {
  const data::Task& task = task_of(ds, old.task_key, run);
  // The cap the episode ran under: its step count when it ended there, otherwise never nearer than its last step.
  const int cap = old.ending == "step_cap" ? std::max(1, old.steps) : std::max(run_max_steps, old.steps + 1);
  std::unique_ptr<env::UserChannel> user;
  if (how.scripted)
    user = std::make_unique<sim::ScriptedUser>(ds, task, runner::trial_seed(how.seed, old.trial));
  else
    user = std::make_unique<RecordedUser>(old.actions);
  runner::Episode episode(env, task, track == data::Track::kMultiTurn ? user.get() : nullptr, {track, cap});
  episode.reset();
  for (const env::ActionRecord& a : old.actions) {
    if (episode.finished()) break;
    env::AgentStep step;
    step.action = a.action;
    episode.step(step);
  }
  runner::EpisodeResult result = episode.result();
  if (result.ending.empty()) result.ending = old.ending;  // ended from outside (a served episode's client end)
  runner::TaskRecord r = runner::make_record(ds, task, result, old.trial);
  r.steps = old.steps;
  r.prompt_tokens = old.prompt_tokens;
  r.completion_tokens = old.completion_tokens;
  r.seconds_agent = old.seconds_agent;
  r.usage_json = old.usage_json;
  r.user_json = old.user_json;  // the replies are replayed, not asked again: what the simulator said of them stands
  return r;
}

}  // namespace

RescoreReport rescore_run(const std::filesystem::path& run, const std::filesystem::path& out,
                          const RescoreOptions& options) {
  runner::RunManifest manifest = runner::read_manifest(run);
  runner::RunSettings settings = runner::settings_of(manifest);
  const data::Track track = settings.track_or_default();
  const int max_steps = settings.max_steps_or_default();
  // A run that does not name its embedder cannot be reopened with it: embedder_spec asks for --embedder.
  const std::string embedder =
      options.embedder.empty() ? embedder_spec(settings.embedder_or_unknown()) : options.embedder;
  const int top_k = options.top_k > 0 ? options.top_k : settings.top_k_or_default();
  std::vector<runner::TaskRecord> records = runner::read_records(run);

  data::Dataset ds = data::load_dataset(options.data);
  assemble::ServiceOptions services{options.index_dir, options.checkpoint, options.status};
  assemble::DatasetEnvironment world = assemble::open_environment(ds, options.data, services,
                                                        assemble::open_embedder(embedder, ds, options.data), top_k);
  if (options.require_same_services) check_services(settings, world, run);
  ReplayUser how;
  how.scripted = options.regenerate_scripted_replies && track == data::Track::kMultiTurn &&
                 settings.user_sim == "scripted";
  how.seed = manifest.seed;
  settings.rescored_from = std::filesystem::absolute(run).string();
  settings.rescore = Json{{"data", std::filesystem::absolute(options.data).string()}, {"embedder", embedder},
                          {"top_k", top_k}}
                         .dump();
  manifest.config_json = settings.to_json();
  manifest.dataset_fingerprint = runner::dataset_fingerprint(options.data);
  runner::RunDirectory dir = runner::RunDirectory::open(out, manifest, /*resume=*/false);

  RescoreReport report;
  report.regenerated_replies = how.scripted;
  const bool train = settings.split_or_default() == "train";
  report.split_tasks = ds.tasks(train ? data::Split::kTrain : data::Split::kTest).size();
  for (const runner::TaskRecord& old : records) {
    ++report.records;
    if (!old.error.empty()) {  // an infrastructure error: there is no trajectory to grade
      dir.append(old);
      ++report.copied_errors;
      continue;
    }
    runner::TaskRecord r = replay(*world.environment, ds, old, track, max_steps, how, run);
    const metrics::TaskScore before = score_of(old), after = score_of(r);
    report.changed_scores += before.f != after.f || before.r != after.r;
    report.changed_observations += !same_observations(old, r);
    report.changed_replies += !same_observations(old, r, /*replies_only=*/true);
    dir.append(r);
    ++report.rescored;
  }
  return report;
}

}  // namespace pwab::assemble
