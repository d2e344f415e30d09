#include "cli/serve_setup.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "cli/common.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/version.h"
#include "runner/results.h"
#include "sim/llm_user.h"

namespace pwab::cli {
namespace {

using Json = nlohmann::json;

//! The run directories of a served run: OUT/single and OUT/multi, one per track because `pwab score` reads
//! one track per directory. Reopened (resumed) when the server is restarted with the same settings.
struct ServedRuns {
  std::optional<runner::RunDirectory> single_turn, multi_turn;
};

ServedRuns open_served_runs(const ServiceArgs& a, const Json& base_config) {
  ServedRuns runs;
  if (a.out.empty()) return runs;
  runner::RunManifest manifest;
  manifest.seed = a.seed;
  manifest.dataset_fingerprint = runner::dataset_fingerprint(a.data);
  manifest.pwab_version = kVersion;
  for (std::string track : {"single", "multi"}) {
    Json config = base_config;
    config["track"] = track;
    manifest.config_json = config.dump();
    auto dir = runner::RunDirectory::open(std::filesystem::path(a.out) / track, manifest, /*resume=*/true);
    (track == "single" ? runs.single_turn : runs.multi_turn).emplace(std::move(dir));
  }
  return runs;
}

bool has_llm_user(const ServiceArgs& a) { return !a.llm.user_model.empty() || !a.llm.model.empty(); }

//! The flags' usage errors, found before the dataset, the index and the recommender are loaded.
const ServiceArgs& checked(const ServiceArgs& a) {
  if (a.user_guard < 0)
    throw UsageError("--user-guard must be 0 (off) or more, got " + std::to_string(a.user_guard));
  if (a.user_guard > 0 && !has_llm_user(a))
    throw UsageError(
        "--user-guard needs the LLM user (user_sim llm), which needs a model: --user-model NAME (or --model NAME)");
  return a;
}

}  // namespace

void add_service_flags(CLI::App& cmd, ServiceArgs& a) {
  cmd.add_option("--data", a.data, "Dataset directory")->required();
  cmd.add_option("--out", a.out, "Run directory: records of finished episodes in OUT/single and OUT/multi");
  cmd.add_option("--max-sessions", a.max_sessions, "Episodes open at once")->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd.add_option("--max-episode-bytes", a.max_episode_bytes,
                 "Most bytes of actions and observations one episode may hold (its record's size); over it, 413")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34));
  cmd.add_option("--idle-timeout", a.idle_timeout_s, "Seconds after which an idle episode is dropped")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e9));
  cmd.add_option("--seed", a.seed, "Default seed of the scripted user (as `pwab run --seed`)")->capture_default_str();
  cmd.add_option("--embedder", a.embedder, "Text embedder of review rewards: fasttext, minilm:MODEL_DIR or hashing")
      ->capture_default_str();
  cmd.add_option("--checkpoint", a.checkpoint, "SASRec checkpoint (default: DATA/.pwab-rec/sasrec.pwab)");
  cmd.add_option("--index-dir", a.index_dir, "Search index root (default: DATA/.pwab-index)");
  cmd.add_option("--top-k", a.top_k, "Results per search/recommendation call")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd.add_option("--user-guard", a.user_guard,
                 "For user_sim llm episodes: ask again up to N times when the user's reply gives the target away, "
                 "then say a neutral line; 0 = off (as `pwab run --user-guard`)")
      ->capture_default_str();
  add_llm_flags(cmd, a.llm);
}

// Built in dependency order; destroyed in reverse, the service first.
struct ServedEnvironment::Parts {
  explicit Parts(const ServiceArgs& a)
      : ds(load_data(a.data)),
        world(env::open_environment(ds, a.data, service_options(a.index_dir, a.checkpoint),
                                    env::open_embedder(a.embedder, ds, a.data), a.top_k)) {}

  data::Dataset ds;
  env::DatasetEnvironment world;
  LlmSetup models;
  ServedRuns runs;
  std::unique_ptr<serve::EpisodeService> service;
};

ServedEnvironment::ServedEnvironment(const ServiceArgs& a) : parts_(std::make_unique<Parts>(checked(a))) {
  Parts& p = *parts_;
  serve::ServiceOptions options;
  options.max_sessions = a.max_sessions;
  options.idle_timeout_s = a.idle_timeout_s;
  options.max_episode_bytes = a.max_episode_bytes;
  options.seed = a.seed;
  // One line per failure of the server's own (a record a full disk refused), on stderr with the start line.
  options.log = [](const std::string& line) { fmt::print(stderr, "pwab: {}\n", line); };
  // The LLM user simulator, when a user model is named (same flags as `pwab run --user-sim llm`).
  if (has_llm_user(a)) {
    p.models = make_llm_setup(a.llm, /*need_agent=*/false, /*need_user=*/true);
    llm::ChatModel& user_model = *p.models.user_model;
    llm::Ledger& ledger = *p.models.ledger;
    std::string name = p.models.user_model_name;
    const data::Dataset& ds = p.ds;
    // Each episode's calls go to the ledger under its episode id: its record's usage is its own, whatever other
    // episodes of the same task cost.
    const int guard = a.user_guard;
    options.llm_user = [&ds, &user_model, &ledger, name, guard](
                           const data::Task& t, uint64_t, const std::string& key) -> std::unique_ptr<env::UserChannel> {
      auto metered = std::make_unique<llm::MeteredChatModel>(user_model, ledger, llm::Role::kUser, key);
      sim::LlmUserOptions user_options;
      user_options.leak_guard = guard;
      return std::make_unique<sim::LlmUser>(ds, t, std::move(metered), name, user_options);
    };
    if (ledger.budget_usd()) options.budget_reached = [&ledger] { return ledger.budget_reached(); };
    options.usage_json = [&ledger](const std::string& key) { return ledger.to_json(key); };
  }

  // What changes the records, as `pwab run` writes it; max_steps and the user simulator are per episode.
  Json config = {{"mode", "serve"},
                 {"agent", "served"},
                 {"top_k", a.top_k},
                 {"embedder", p.world.embedder->name()},
                 {"search_index", p.world.services.index->fingerprint()},
                 {"recommender", to_hex(hash_file(p.world.services.checkpoint))}};
  if (auto llm_config = Json::parse(p.models.config_json.empty() ? "{}" : p.models.config_json); !llm_config.empty())
    config["llm"] = llm_config;
  // As `pwab run`: only when on, so a served run directory made before the guard existed reopens unchanged.
  if (a.user_guard > 0) config["user_guard"] = a.user_guard;
  p.runs = open_served_runs(a, config);
  serve::RecordSinks sinks{p.runs.single_turn ? &*p.runs.single_turn : nullptr,
                           p.runs.multi_turn ? &*p.runs.multi_turn : nullptr};
  p.service = std::make_unique<serve::EpisodeService>(*p.world.environment, options, sinks);
}

ServedEnvironment::~ServedEnvironment() = default;

serve::EpisodeService& ServedEnvironment::service() { return *parts_->service; }
const data::Dataset& ServedEnvironment::dataset() const { return parts_->ds; }

}  // namespace pwab::cli
