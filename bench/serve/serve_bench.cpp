// serve/http_200_sessions: `pwab serve`'s HTTP front end and episode service on loopback, 200 clients at once,
// each on its own keep-alive connection with its own episode: served steps/s and the client-side step latency
// (p50, p99). Mini synthetic dataset with its real BM25 index; multi-turn episodes of five steps (ask the
// scripted user, search with its answer, ask again, search again, stop), so a step is a user-simulator reply or
// a real search and its reward. No run directory: the fsync of records is measured by runner/overhead.
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench.h"
#include "core/sys.h"
#include "data/synth.h"
#include "embed/embedder.h"
#include "env/backends.h"
#include "search/search.h"
#include "serve/episode_service.h"
#include "serve/http_server.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;
using Json = nlohmann::json;

namespace {

constexpr int kClients = 200;
constexpr int kEpisodesPerClient = 5;
constexpr int kStepsPerEpisode = 5;

struct ServeState {
  std::unique_ptr<data::Dataset> ds;
  std::unique_ptr<search::Index> index;
  std::unique_ptr<env::IndexSearch> search;
  std::unique_ptr<embed::HashingEmbedder> embedder;
  std::unique_ptr<env::Environment> environment;
  std::vector<std::string> task_keys;
  std::size_t last_episodes = 0, last_failures = 0;
  std::string last_failure;
};
ServeState state;

void serve_setup(const Context& ctx) {
  if (state.ds) return;
  state.ds = std::make_unique<data::Dataset>(data::synthesize({data::SynthScale::kMini, 1}));
  state.index = search::Index::open_or_build(*state.ds, ctx.out_dir / "serve" / "index");
  state.search = std::make_unique<env::IndexSearch>(*state.index);
  state.embedder = std::make_unique<embed::HashingEmbedder>();
  state.environment = std::make_unique<env::Environment>(*state.ds, state.search.get(), nullptr, *state.embedder);
  for (const auto& t : state.ds->tasks(data::Split::kTest))
    if (t.type == data::TaskType::kSearch) state.task_keys.push_back(runner::task_key(t));
}

//! One client's actions for the i-th step of an episode; the searches use the user's last reply.
Json action(int i, const std::string& last_observation) {
  switch (i) {
    case 0: return {{"name", "respond"}, {"arguments", {{"content", "What are you looking for?"}}}};
    case 1:
    case 3: return {{"name", "search_product_by_query"}, {"arguments", {{"query", last_observation.substr(0, 200)}}}};
    case 2: return {{"name", "respond"}, {"arguments", {{"content", "Anything else I should know?"}}}};
    default: return {{"name", "stop"}, {"arguments", Json::object()}};
  }
}

double serve_run(const Context&, std::vector<Extra>& extras) {
  serve::EpisodeService service(*state.environment, {});
  serve::HttpOptions http;
  http.port = 0;
  serve::HttpServer server(service, http);
  server.start();

  std::mutex mu;  // guards latencies and the failure counters
  std::vector<double> latencies;
  std::size_t episodes = 0, failures = 0;
  std::string first_failure;
  std::barrier ready(kClients + 1);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_keep_alive(true);
      std::vector<double> mine;
      std::size_t done = 0;
      std::string failure;
      ready.arrive_and_wait();
      for (int e = 0; e < kEpisodesPerClient && failure.empty(); ++e) {
        const std::string& key = state.task_keys[static_cast<std::size_t>(c * kEpisodesPerClient + e) % state.task_keys.size()];
        auto r = client.Post("/v1/episodes", Json{{"task", key}, {"track", "multi"}, {"history", false}}.dump(), "application/json");
        if (!r || r->status != 201) {
          failure = "start failed";
          break;
        }
        std::string path = "/v1/episodes/" + Json::parse(r->body)["episode_id"].get<std::string>();
        std::string observation;
        for (int i = 0; i < kStepsPerEpisode; ++i) {
          Stopwatch clock;
          auto s = client.Post(path + "/step", action(i, observation).dump(), "application/json");
          mine.push_back(clock.seconds());
          if (!s || s->status != 200) {
            failure = "step failed: " + (s ? s->body : httplib::to_string(s.error()));
            break;
          }
          observation = Json::parse(s->body)["observation"].get<std::string>();
        }
        auto end = client.Post(path + "/end", "", "application/json");
        if (failure.empty() && (!end || end->status != 200 || Json::parse(end->body)["record"]["steps"] != kStepsPerEpisode))
          failure = "end failed or wrong step count";
        if (failure.empty()) ++done;
      }
      std::lock_guard lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
      episodes += done;
      if (!failure.empty() && failures++ == 0) first_failure = failure;
    });
  ready.arrive_and_wait();  // every client thread exists: the clock measures serving, not thread creation
  Stopwatch clock;
  for (auto& t : clients) t.join();
  double seconds = clock.seconds();
  server.stop();

  state.last_episodes = episodes;
  state.last_failures = failures;
  state.last_failure = first_failure;
  double steps = static_cast<double>(latencies.size());
  extras.push_back({"steps_per_s", steps / seconds, "/s"});
  extras.push_back({"p50_step_ms", percentile(latencies, 0.50) * 1e3, "ms"});
  extras.push_back({"p99_step_ms", percentile(latencies, 0.99) * 1e3, "ms"});
  extras.push_back({"episodes", static_cast<double>(episodes), ""});
  return seconds;
}

std::string serve_check(const Context&) {
  if (state.last_failures) return fmt::format("{} clients failed, first: {}", state.last_failures, state.last_failure);
  if (state.last_episodes != static_cast<std::size_t>(kClients * kEpisodesPerClient))
    return fmt::format("{} episodes finished, expected {}", state.last_episodes, kClients * kEpisodesPerClient);
  return {};
}

const int kServe = add({
    "serve/http_200_sessions",
    "`pwab serve` on loopback: 200 concurrent clients (one keep-alive connection and one episode each at a time), "
    "5 episodes x 5 multi-turn steps each (scripted user, real BM25 search); steps/s and p50/p99 step latency",
    3,
    serve_setup,
    serve_run,
    serve_check,
});

}  // namespace
