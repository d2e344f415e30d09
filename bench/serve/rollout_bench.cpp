// Rollouts served to an RL engine: OpenEnv episodes over `pwab serve`'s WebSocket, as a thousand rollout workers
// play them, beside the in-process rate of the same episodes.
//
// The episodes are real agent behaviour: the offline heuristic agent's actions on the full synthetic test split
// (2,174 tasks, 35,772 products), both tracks (single-turn: one task call; multi-turn: questions to the scripted
// user, searches or recommendations with its answers, stop), recorded once by `pwab run` and replayed here with
// the same seeds, on the same services `pwab serve` opens (BM25 index, SASRec, fastText). Every replayed
// episode's final reward must equal the score of its `pwab run` record, under load too.
//   serve/rollouts_in_process   the episodes through the OpenEnv front end in-process, 2 threads: the ceiling
//   serve/rollouts_in_process_messages  the same as message texts through the WebSocket session's own handling
//   serve/ws_1000_sessions      1,000 WebSocket sessions, no think time: the most the server sustains
//   serve/ws_1000_sessions_paced  1,000 sessions, each thinking 0-360 ms (mean 180 ms) before a step, as a policy
//                                 generating its next action would: ~5,500 steps/s offered; latency at that load
//   serve/ws_1000_sessions_recorded  as the saturated one, every episode recorded and fsynced (--out)
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "bench.h"
#include "core/sys.h"
#include "data/loader.h"
#include "assemble/services.h"
#include "metrics/metrics.h"
#include "runner/results.h"
#include "serve/episode_service.h"
#include "serve/http_server.h"
#include "serve/openenv.h"
#include "serve/ws_load.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;
using Json = nlohmann::json;

namespace {

constexpr int kSessions = 1000;
constexpr int kPasses = 3;  // the episode list played this many times per run (~31,000 steps)
constexpr double kThinkMeanS = 0.18;

struct World {
  fs::path data;
  std::unique_ptr<data::Dataset> ds;
  assemble::DatasetEnvironment env;
  std::vector<ScriptedEpisode> episodes;  // kPasses × (single + multi)
  std::vector<Json> resets;               // the same, parsed, for the in-process run
  std::vector<std::vector<Json>> steps;
  double in_process_steps_per_s = 0;
  double in_process_messages_steps_per_s = 0;
  LoadResult last;
  std::size_t last_in_process_wrong = 0;
};
World world;

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }

//! The heuristic agent's run of the full test split in one track, recorded once.
std::vector<runner::TaskRecord> heuristic_records(const Context& ctx, std::string_view track) {
  fs::path out = ctx.out_dir / "serve" / fmt::format("heuristic-{}", track);
  if (fs::exists(out / "results.jsonl")) {
    auto records = runner::read_records(out);
    if (records.size() == 2174) return records;
  }
  fs::remove_all(out);
  fmt::print(stderr, "[bench] serve: recording the heuristic agent's {}-turn episodes\n", track);
  time_command(fmt::format("{} run --quiet --data {} --track {} --agent heuristic --out {} > /dev/null",
                           pwab_binary(ctx).string(), world.data.string(), track, out.string()));
  return runner::read_records(out);
}

void add_episodes(const std::vector<runner::TaskRecord>& records, std::string_view track) {
  for (const auto& r : records) {
    Json reset = {{"task", r.task_key}, {"track", track}, {"seed", 0}, {"history", false}};
    ScriptedEpisode e;
    e.reset = Json{{"type", "reset"}, {"data", reset}}.dump();
    std::vector<Json> steps;
    for (const auto& a : r.actions) {
      Json action = {{"name", a.action.name}, {"arguments", a.action.arguments_json}};
      e.steps.push_back(Json{{"type", "step"}, {"data", action}}.dump());
      steps.push_back(std::move(action));
    }
    e.expected_reward = metrics::score_task(r.outcome()).r;
    world.episodes.push_back(std::move(e));
    world.resets.push_back(std::move(reset));
    world.steps.push_back(std::move(steps));
  }
}

void setup(const Context& ctx) {
  if (world.ds) return;
  world.data = full_dataset_dir(ctx);
  const std::string pwab = pwab_binary(ctx).string();
  if (!fs::exists(world.data / ".pwab-rec" / "sasrec.pwab"))
    time_command(pwab + " rec train " + world.data.string() + " --epochs 1 --eval-every 0 > /dev/null 2>&1");
  auto single = heuristic_records(ctx, "single");
  auto multi = heuristic_records(ctx, "multi");
  world.ds = std::make_unique<data::Dataset>(data::load_dataset(world.data));
  world.env = assemble::open_environment(*world.ds, world.data, {}, assemble::open_embedder("fasttext", *world.ds, world.data), 10);
  for (int pass = 0; pass < kPasses; ++pass) {
    add_episodes(single, "single");
    add_episodes(multi, "multi");
  }
}

serve::ServiceOptions service_options() {
  serve::ServiceOptions o;
  o.max_sessions = 4 * kSessions;
  return o;
}

std::size_t total_steps() {
  std::size_t n = 0;
  for (const auto& e : world.episodes) n += e.steps.size();
  return n;
}

// Plays every episode on two threads in-process, `play(front, i)` playing episode i and saying whether it ended
// with its recorded reward; returns the wall seconds and counts the wrong endings.
template <class Play>
double play_in_process(Play play) {
  serve::EpisodeService service(*world.env.environment, service_options());
  serve::OpenEnvFrontEnd front(service, *world.ds, {});
  std::atomic<std::size_t> next{0}, wrong{0};
  Stopwatch clock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      serve::HttpRequest upgrade;  // a plain /ws upgrade (no session_id)
      upgrade.method = "GET";
      upgrade.target = upgrade.path = "/ws";
      auto session = front.open_session(upgrade);  // for the message-level run; the other ignores it
      session->on_open();
      for (std::size_t i; (i = next++) < world.episodes.size();)
        if (!play(front, *session, i)) ++wrong;
      session->on_end();
    });
  for (auto& t : threads) t.join();
  world.last_in_process_wrong = wrong;
  return clock.seconds();
}

double in_process_run(const Context&, std::vector<Extra>& extras) {
  double seconds = play_in_process([](serve::OpenEnvFrontEnd& front, serve::WsSession&, std::size_t i) {
    Json answer = front.reset(world.resets[i]);
    const std::string id = answer["observation"]["episode_id"];
    for (const Json& action : world.steps[i]) answer = front.step({{"episode_id", id}, {"action", action}});
    return answer["done"].get<bool>() && answer["reward"].get<double>() == world.episodes[i].expected_reward;
  });
  world.in_process_steps_per_s = static_cast<double>(total_steps()) / seconds;
  extras.push_back({"steps_per_s", world.in_process_steps_per_s, "/s"});
  extras.push_back({"episodes_per_s", static_cast<double>(world.episodes.size()) / seconds, "/s"});
  extras.push_back({"steps", static_cast<double>(total_steps()), ""});
  return seconds;
}

// The same messages through the OpenEnv WebSocket session's own handling in-process: texts parsed and answers
// written, as the server does, with no socket between them.
double in_process_messages_run(const Context&, std::vector<Extra>& extras) {
  double seconds = play_in_process([](serve::OpenEnvFrontEnd&, serve::WsSession& session, std::size_t i) {
    const ScriptedEpisode& e = world.episodes[i];
    serve::WsReply answer = session.on_message(e.reset);
    for (const std::string& step : e.steps) answer = session.on_message(step);
    // The last answer's done and reward, read without parsing the whole text (the server writes keys sorted:
    // {"data":{"done":…,"observation":{…},"reward":…},"type":"observation"}).
    const std::string& text = answer.text;
    const bool done = text.compare(0, 16, R"({"data":{"done":)") == 0 && text.compare(16, 4, "true") == 0;
    const std::size_t at = text.rfind(R"("reward":)");
    const double reward = at == std::string::npos ? -1 : std::strtod(text.c_str() + at + 9, nullptr);
    return done && reward == e.expected_reward;
  });
  world.in_process_messages_steps_per_s = static_cast<double>(total_steps()) / seconds;
  extras.push_back({"steps_per_s", world.in_process_messages_steps_per_s, "/s"});
  return seconds;
}

std::string in_process_check(const Context&) {
  if (world.last_in_process_wrong)
    return fmt::format("{} episodes ended with another reward than their pwab run record", world.last_in_process_wrong);
  return {};
}

double served_run(const Context& ctx, double think_mean_s, bool recorded, std::vector<Extra>& extras) {
  // With a run directory, every finished episode is appended and fsynced (`pwab serve --out`), on the blocking
  // pool; each rollout of a task is a trial of its own.
  const fs::path out = ctx.out_dir / "serve" / "recorded";
  fs::remove_all(out);
  std::optional<runner::RunDirectory> single, multi;
  serve::RecordSinks sinks;
  if (recorded) {
    runner::RunManifest m;
    m.config_json = R"({"agent":"served","track":"single"})";
    single.emplace(runner::RunDirectory::open(out / "single", m, false));
    m.config_json = R"({"agent":"served","track":"multi"})";
    multi.emplace(runner::RunDirectory::open(out / "multi", m, false));
    sinks = {&*single, &*multi};
  }
  serve::EpisodeService service(*world.env.environment, service_options(), sinks);
  serve::HttpOptions http;
  http.port = 0;
  http.max_ws_sessions = 2 * kSessions;
  if (const char* io = std::getenv("PWAB_BENCH_IO_THREADS")) http.io_threads = std::atoi(io);
  serve::HttpServer server(service, http);
  server.start();
  LoadOptions o;
  o.port = server.port();
  o.sessions = kSessions;
  o.think_mean_s = think_mean_s;
  world.last = run_ws_load(world.episodes, o);
  server.stop();
  const LoadResult& r = world.last;
  const double steps_per_s = steady_steps_per_s(r);
  extras.push_back({"steps_per_s", steps_per_s, "/s"});
  extras.push_back({"whole_run_steps_per_s", static_cast<double>(r.steps) / r.seconds, "/s"});
  extras.push_back({"messages_per_s", static_cast<double>(r.steps + r.resets) / r.seconds, "/s"});
  const std::vector<double> steady = steady_step_latencies(r);
  extras.push_back({"p50_step_ms", percentile(steady, 0.50) * 1e3, "ms"});
  extras.push_back({"p99_step_ms", percentile(steady, 0.99) * 1e3, "ms"});
  extras.push_back({"p999_step_ms", percentile(steady, 0.999) * 1e3, "ms"});
  extras.push_back({"whole_run_p99_step_ms", percentile(r.step_latency_s, 0.99) * 1e3, "ms"});
  extras.push_back({"p99_reset_ms", percentile(r.reset_latency_s, 0.99) * 1e3, "ms"});
  if (world.in_process_steps_per_s > 0)
    extras.push_back({"of_in_process", steps_per_s / world.in_process_steps_per_s, "x"});
  if (world.in_process_messages_steps_per_s > 0)
    extras.push_back({"of_in_process_messages", steps_per_s / world.in_process_messages_steps_per_s, "x"});
  return r.seconds;
}

std::string served_check(const Context&) {
  const LoadResult& r = world.last;
  if (r.failures) return fmt::format("{} sessions failed, first: {}", r.failures, r.first_failure);
  if (r.episodes != world.episodes.size())
    return fmt::format("{} episodes played, expected {}", r.episodes, world.episodes.size());
  if (r.wrong_rewards) return fmt::format("{} episodes ended with another reward than their pwab run record", r.wrong_rewards);
  return {};
}

const int kInProcess = add({
    "serve/rollouts_in_process",
    "the heuristic agent's episodes of the full test split, both tracks (x3), through the OpenEnv front end "
    "in-process on 2 threads (no sockets): the environment's own step rate",
    3,
    setup,
    in_process_run,
    in_process_check,
});

const int kInProcessMessages = add({
    "serve/rollouts_in_process_messages",
    "the same episodes as WebSocket message texts through the OpenEnv session in-process on 2 threads (parsed and "
    "answered as the server does them, no sockets)",
    3,
    setup,
    in_process_messages_run,
    in_process_check,
});

const int kSaturated = add({
    "serve/ws_1000_sessions",
    "the same episodes over pwab serve's WebSocket (/ws) from 1,000 concurrent sessions, no think time: the "
    "server's sustained step rate (target >= 5,000 steps/s and >= half the in-process rate)",
    3,
    setup,
    [](const Context& ctx, std::vector<Extra>& extras) { return served_run(ctx, 0, false, extras); },
    served_check,
});

const int kPaced = add({
    "serve/ws_1000_sessions_paced",
    "the same, each session thinking 0-360 ms before each step (~5,500 steps/s offered): latency at that load "
    "(target p99 < 100 ms)",
    3,
    setup,
    [](const Context& ctx, std::vector<Extra>& extras) { return served_run(ctx, kThinkMeanS, false, extras); },
    served_check,
});

}  // namespace

namespace {

const int kRecorded = add({
    "serve/ws_1000_sessions_recorded",
    "as serve/ws_1000_sessions, with a run directory per track (pwab serve --out): every episode's record "
    "appended and fsynced, each rollout of a task a trial of its own",
    3,
    setup,
    [](const Context& ctx, std::vector<Extra>& extras) { return served_run(ctx, 0, true, extras); },
    [](const Context& ctx) -> std::string {
      std::string problem = served_check(ctx);
      if (!problem.empty()) return problem;
      std::size_t records = runner::read_records(ctx.out_dir / "serve" / "recorded" / "single").size() +
                            runner::read_records(ctx.out_dir / "serve" / "recorded" / "multi").size();
      if (records != world.episodes.size())
        return fmt::format("{} records for {} episodes", records, world.episodes.size());
      return {};
    },
});

}  // namespace
