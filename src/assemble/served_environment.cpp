// src/assemble/served_environment.cpp: the served environment assembled (served_environment.h).
#include "assemble/served_environment.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "assemble/services.h"
#include "assemble/user_simulators.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/version.h"
#include "data/loader.h"
#include "runner/results.h"
#include "runner/run_settings.h"

namespace pwab::assemble {
namespace {

using Json = nlohmann::json;

//! The run directories of a served run: OUT/single and OUT/multi, one per track because `pwab score` reads
//! one track per directory. Reopened (resumed) when the server is restarted with the same settings.
struct ServedRuns {
  std::optional<runner::RunDirectory> single_turn, multi_turn;
};

ServedRuns open_served_runs(const ServeConfig& c, runner::RunSettings settings) {
  ServedRuns runs;
  if (c.out.empty()) return runs;
  runner::RunManifest manifest;
  manifest.seed = c.seed;
  manifest.dataset_fingerprint = runner::dataset_fingerprint(c.data);
  manifest.pwab_version = kVersion;
  for (data::Track track : {data::Track::kSingleTurn, data::Track::kMultiTurn}) {
    settings.track = track;
    manifest.config_json = settings.to_json();
    auto dir = runner::RunDirectory::open(c.out / std::string(data::to_string(track)), manifest, /*resume=*/true);
    (track == data::Track::kSingleTurn ? runs.single_turn : runs.multi_turn).emplace(std::move(dir));
  }
  return runs;
}

//! The settings' usage errors, found before the dataset, the index and the recommender are loaded.
const ServeConfig& checked(const ServeConfig& c, const RunModels& models) {
  if (c.user_guard < 0)
    throw UsageError("--user-guard must be 0 (off) or more, got " + std::to_string(c.user_guard));
  if (c.user_guard > 0 && !models.user_model)
    throw UsageError(
        "--user-guard needs the LLM user (user_sim llm), which needs a model: --user-model NAME (or --model NAME)");
  return c;
}

}  // namespace

// Built in dependency order; destroyed in reverse, the service first.
struct ServedEnvironment::Parts {
  Parts(const ServeConfig& c, RunModels m)
      : ds(data::load_dataset(c.data)),
        world(open_environment(ds, c.data, {c.index_dir, c.checkpoint, c.status}, open_embedder(c.embedder, ds, c.data),
                               c.top_k)),
        models(std::move(m)) {}

  data::Dataset ds;
  DatasetEnvironment world;
  RunModels models;
  ServedRuns runs;
  std::unique_ptr<serve::EpisodeService> service;
};

ServedEnvironment::ServedEnvironment(const ServeConfig& c, RunModels models)
    : parts_(std::make_unique<Parts>(checked(c, models), std::move(models))) {
  Parts& p = *parts_;
  serve::ServiceOptions options;
  options.max_sessions = c.max_sessions;
  options.idle_timeout_s = c.idle_timeout_s;
  options.max_episode_bytes = c.max_episode_bytes;
  options.seed = c.seed;
  // One line per failure of the server's own (a record a full disk refused), on stderr with the start line.
  options.log = [](const std::string& line) { fmt::print(stderr, "pwab: {}\n", line); };
  // The LLM user simulator, when a user model is given (same settings as `pwab run --user-sim llm`).
  if (p.models.user_model) {
    const RunModels& served_models = p.models;
    const data::Dataset& ds = p.ds;
    llm::Ledger& ledger = *p.models.ledger;
    // Each episode's calls go to the ledger under its episode id: its record's usage is its own, whatever other
    // episodes of the same task cost.
    const int guard = c.user_guard;
    options.llm_user = [&ds, &served_models, guard](const data::Task& t, uint64_t,
                                                    const std::string& key) -> std::unique_ptr<env::UserChannel> {
      return make_llm_user(ds, t, served_models, key, /*sample=*/0, guard);
    };
    if (ledger.budget_usd()) options.budget_reached = [&ledger] { return ledger.budget_reached(); };
    options.usage_json = [&ledger](const std::string& key) { return ledger.to_json(key); };
  }

  // What changes the records, as `pwab run` writes it; max_steps and the user simulator are per episode.
  runner::RunSettings settings;
  settings.mode = "serve";
  settings.agent = "served";
  settings.top_k = c.top_k;
  settings.embedder = p.world.embedder->name();
  settings.search_index = p.world.services.index->fingerprint();
  settings.recommender = to_hex(hash_file(p.world.services.checkpoint));
  if (!p.models.config_json.empty() && !Json::parse(p.models.config_json).empty()) settings.llm = p.models.config_json;
  // As `pwab run`: only when on, so a served run directory made before the guard existed reopens unchanged.
  if (c.user_guard > 0) settings.user_guard = c.user_guard;
  p.runs = open_served_runs(c, std::move(settings));
  serve::RecordSinks sinks{p.runs.single_turn ? &*p.runs.single_turn : nullptr,
                           p.runs.multi_turn ? &*p.runs.multi_turn : nullptr};
  p.service = std::make_unique<serve::EpisodeService>(*p.world.environment, options, sinks);
}

ServedEnvironment::~ServedEnvironment() = default;

serve::EpisodeService& ServedEnvironment::service() { return *parts_->service; }
const data::Dataset& ServedEnvironment::dataset() const { return parts_->ds; }

}  // namespace pwab::assemble
