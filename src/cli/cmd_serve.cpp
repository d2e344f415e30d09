// `pwab serve`: the benchmark environment as a local HTTP/JSON service for agents outside this process
// (src/serve/, docs/serve.md). Same environment, rules and records as `pwab run`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/env_setup.h"
#include "cli/llm_setup.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/version.h"
#include "runner/results.h"
#include "serve/episode_service.h"
#include "serve/http_server.h"
#include "sim/llm_user.h"

namespace pwab::cli {
namespace {

using Json = nlohmann::json;

// Ctrl-C or SIGTERM: stop serving. The episodes that finished are already in the run directory.
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop = true; }

struct ServeArgs {
  std::string data, host = "127.0.0.1", out, embedder = "fasttext", checkpoint, index_dir;
  int port = 8765, top_k = 10, threads = 512;
  std::size_t max_sessions = 1000, max_body_bytes = 1 << 20;
  double idle_timeout_s = 900;
  uint64_t seed = 0;
  LlmFlags llm;
};

//! The run directories of a served run: OUT/single and OUT/multi, one per track because `pwab score` reads
//! one track per directory. Reopened (resumed) when the server is restarted with the same settings.
struct ServedRuns {
  std::optional<runner::RunDirectory> single_turn, multi_turn;
};

ServedRuns open_served_runs(const ServeArgs& a, const Json& base_config) {
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

void serve(const ServeArgs& a) {
  data::Dataset ds = load_data(a.data);
  DatasetEnvironment world = open_environment(ds, a.data, a.index_dir, a.checkpoint, a.embedder, a.top_k);

  serve::ServiceOptions options;
  options.max_sessions = a.max_sessions;
  options.idle_timeout_s = a.idle_timeout_s;
  options.seed = a.seed;
  // The LLM user simulator, when a user model is named (same flags as `pwab run --user-sim llm`).
  const bool llm_user = !a.llm.user_model.empty() || !a.llm.model.empty();
  LlmSetup models;
  if (llm_user) {
    models = make_llm_setup(a.llm, /*need_agent=*/false, /*need_user=*/true);
    llm::ChatModel& user_model = *models.user_model;
    llm::Ledger& ledger = *models.ledger;
    std::string name = models.user_model_name;
    options.llm_user = [&ds, &user_model, &ledger, name](const data::Task& t, uint64_t) -> std::unique_ptr<env::UserChannel> {
      auto metered = std::make_unique<llm::MeteredChatModel>(user_model, ledger, llm::Role::kUser, runner::task_key(t));
      return std::make_unique<sim::LlmUser>(ds, t, std::move(metered), name);
    };
  }

  // What changes the records, as `pwab run` writes it; max_steps and the user simulator are per episode.
  Json config = {{"mode", "serve"},
                 {"agent", "served"},
                 {"top_k", a.top_k},
                 {"embedder", world.embedder->name()},
                 {"search_index", world.services.index->fingerprint()},
                 {"recommender", to_hex(hash_file(world.services.checkpoint))}};
  if (auto llm_config = Json::parse(models.config_json.empty() ? "{}" : models.config_json); !llm_config.empty())
    config["llm"] = llm_config;
  ServedRuns runs = open_served_runs(a, config);
  serve::RecordSinks sinks{runs.single_turn ? &*runs.single_turn : nullptr, runs.multi_turn ? &*runs.multi_turn : nullptr};
  serve::EpisodeService service(*world.environment, options, sinks);

  serve::HttpOptions http;
  http.host = a.host;
  http.port = a.port;
  http.max_body_bytes = a.max_body_bytes;
  http.threads = a.threads;
  http.janitor_interval_s = std::clamp(a.idle_timeout_s / 4, 0.05, 30.0);
  serve::HttpServer server(service, http);

  g_stop = false;
  auto previous_int = std::signal(SIGINT, on_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_stop_signal);
  server.start();
  // The URL alone on stdout's first line, so a script can start `pwab serve --port 0` and read where it is.
  std::cout << server.url() << std::endl;
  std::cerr << fmt::format("pwab: serving {} ({} test / {} train tasks) on {}{}; Ctrl-C stops\n", a.data,
                           ds.tasks(data::Split::kTest).size(), ds.tasks(data::Split::kTrain).size(), server.url(),
                           a.out.empty() ? "" : "; records in " + a.out + "/{single,multi}");
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  std::cerr << fmt::format("pwab: stopped; {} episodes were still open\n", service.n_sessions());
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve the environment over HTTP/JSON for agents in other processes");
  cmd->add_option("--data", a->data, "Dataset directory")->required();
  cmd->add_option("--host", a->host, "Address to listen on (loopback by default: the API has no authentication)")
      ->capture_default_str();
  cmd->add_option("--port", a->port, "Port (0 = any free port; the URL is printed on stdout)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--out", a->out, "Run directory: records of finished episodes in OUT/single and OUT/multi");
  cmd->add_option("--max-sessions", a->max_sessions, "Episodes open at once")->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->add_option("--idle-timeout", a->idle_timeout_s, "Seconds after which an idle episode is dropped")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e9));
  cmd->add_option("--max-body-bytes", a->max_body_bytes, "Largest request body")->capture_default_str()->check(CLI::Range(64, 1 << 30));
  cmd->add_option("--threads", a->threads, "HTTP worker threads (each keep-alive client holds one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--seed", a->seed, "Default seed of the scripted user (as `pwab run --seed`)")->capture_default_str();
  cmd->add_option("--embedder", a->embedder, "Text embedder of review rewards: fasttext, minilm:MODEL_DIR or hashing")
      ->capture_default_str();
  cmd->add_option("--checkpoint", a->checkpoint, "SASRec checkpoint (default: DATA/.pwab-rec/sasrec.pwab)");
  cmd->add_option("--index-dir", a->index_dir, "Search index root (default: DATA/.pwab-index)");
  cmd->add_option("--top-k", a->top_k, "Results per search/recommendation call")->capture_default_str()->check(CLI::Range(1, 1000));
  add_llm_flags(*cmd, a->llm);
  cmd->callback([a] { serve(*a); });
}

}  // namespace pwab::cli
