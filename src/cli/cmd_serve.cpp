// `pwab serve`: the benchmark environment as a local HTTP/JSON service for agents outside this process
// (src/serve/, docs/serve.md). Same environment, rules and records as `pwab run`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/serve_setup.h"
#include "core/error.h"
#include "core/version.h"
#include "serve/episode_service.h"
#include "serve/http_server.h"
#include "serve/mcp.h"
#include "serve/mcp_http.h"
#include "puma/scoring.h"

namespace pwab::cli {
namespace {

// Ctrl-C or SIGTERM: stop serving. The episodes that finished are already in the run directory.
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop = true; }

struct ServeArgs {
  ServiceArgs service;  // the flags `pwab mcp` shares (serve_setup.h)
  std::string host = "127.0.0.1";
  int port = 8765, threads = 512, io_threads = 0;
  std::size_t max_body_bytes = 1 << 20, max_ws_message_bytes = 1 << 20;
  double request_timeout_s = 10;
  std::string token;  // --token, else PWAB_SERVE_TOKEN
  std::vector<std::string> allowed_hosts, allowed_origins;
};

// The token from --token or the environment (an argument shows in `ps`; the environment does not).
std::string serve_token(const ServeArgs& a) {
  if (!a.token.empty()) return a.token;
  const char* env = std::getenv("PWAB_SERVE_TOKEN");
  return env ? env : "";
}

void serve(const ServeArgs& a) {
  auto served_env = open_served_environment(a.service);
  assemble::ServedEnvironment& served = *served_env;
  serve::EpisodeService& service = served.service();
  const data::Dataset& ds = served.dataset();
  // MCP over streamable HTTP at /mcp, on the same episodes as the JSON API (docs/mcp.md).
  serve::McpServer mcp(service, kVersion);
  serve::McpHttpEndpoint mcp_http(mcp);

  serve::HttpOptions http;
  http.host = a.host;
  http.port = a.port;
  http.max_body_bytes = a.max_body_bytes;
  http.threads = a.threads;
  http.io_threads = a.io_threads;
  http.max_ws_message_bytes = a.max_ws_message_bytes;
  http.max_ws_sessions = a.service.max_sessions;
  http.ws_idle_timeout_s = a.service.idle_timeout_s;
  http.request_timeout_s = a.request_timeout_s;
  http.janitor_interval_s = std::clamp(a.service.idle_timeout_s / 4, 0.05, 30.0);
  http.access.token = serve_token(a);
  http.access.allowed_hosts = a.allowed_hosts;
  http.access.allowed_origins = a.allowed_origins;
  http.extra_routes = mcp_http.routes();
  // /v1/reward scores rollouts as `pwab puma fast-test` does (serve/reward.h, puma/scoring.h).
  const env::Environment& environment = service.environment();
  auto to_score = [](puma::RolloutReward r) {
    return serve::RolloutScore{std::move(r.function), std::move(r.parameter), r.function_acc, r.result_acc};
  };
  http.reward.score = [&environment, to_score](const data::Task& task, std::string_view function, std::string_view parameter) {
    return to_score(puma::rollout_reward(environment, task, function, parameter));
  };
  http.reward.score_completion = [&environment, to_score](const data::Task& task, std::string_view completion) {
    return to_score(puma::completion_reward(environment, task, completion));
  };
  serve::HttpServer server(service, http);

  g_stop = false;
  auto previous_int = std::signal(SIGINT, on_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_stop_signal);
  server.start();
  // The URL alone on stdout's first line, so a script can start `pwab serve --port 0` and read where it is.
  std::cout << server.url() << std::endl;
  std::cerr << fmt::format("pwab: serving {} ({} test / {} train tasks) on {} (MCP at /mcp, OpenEnv at /reset, /step "
                           "and the WebSocket /ws, rewards at /v1/reward){}; {}; Ctrl-C stops\n",
                           a.service.data, ds.tasks(data::Split::kTest).size(), ds.tasks(data::Split::kTrain).size(),
                           server.url(), a.service.out.empty() ? "" : "; records in " + a.service.out + "/{single,multi}",
                           http.access.token.empty() ? "no token (loopback only)"
                                                     : "every request needs 'Authorization: Bearer TOKEN'");
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
  add_service_flags(*cmd, a->service);
  add_shared_option(*cmd, "--host", a->host)
      ->capture_default_str();
  add_shared_option(*cmd, "--token", a->token);
  cmd->add_option("--allowed-host", a->allowed_hosts,
                  "A Host name besides localhost/127.0.0.1/[::1] to answer without a token (repeatable)");
  cmd->add_option("--allowed-origin", a->allowed_origins,
                  "A web origin's host besides the loopback ones whose pages may call the server (repeatable)");
  add_shared_option(*cmd, "--port", a->port)
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--max-body-bytes", a->max_body_bytes, "Largest request body")->capture_default_str()->check(CLI::Range(64, 1 << 30));
  cmd->add_option("--request-timeout-s", a->request_timeout_s,
                  "Most seconds from a request's first byte to its last; a slower request gets 408")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  add_shared_option(*cmd, "--threads", a->threads, "blocking")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--io-threads", a->io_threads, "Threads that serve every connection (0 = one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--max-ws-message-bytes", a->max_ws_message_bytes,
                  "Largest WebSocket message (a larger one closes its connection with 1009)")
      ->capture_default_str()
      ->check(CLI::Range(64, 1 << 30));
  cmd->callback([a] { serve(*a); });
}

}  // namespace pwab::cli
