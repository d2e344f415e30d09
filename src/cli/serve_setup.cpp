#include "cli/serve_setup.h"

#include <CLI/CLI.hpp>

#include "cli/common.h"
#include "cli/options.h"

namespace pwab::cli {

void add_service_flags(CLI::App& cmd, ServiceArgs& a) {
  add_shared_option(cmd, "--data", a.data)->required();
  add_shared_option(cmd, "--out", a.out, "served");
  cmd.add_option("--max-sessions", a.max_sessions, "Episodes open at once")->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd.add_option("--max-episode-bytes", a.max_episode_bytes,
                 "Most bytes of actions and observations one episode may hold (its record's size); over it, 413")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34));
  cmd.add_option("--idle-timeout", a.idle_timeout_s, "Seconds after which an idle episode is dropped")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e9));
  add_shared_option(cmd, "--seed", a.seed, "served")->capture_default_str();
  add_shared_option(cmd, "--embedder", a.embedder)
      ->capture_default_str();
  add_shared_option(cmd, "--checkpoint", a.checkpoint);
  add_shared_option(cmd, "--index-dir", a.index_dir);
  add_shared_option(cmd, "--top-k", a.top_k, "results")->capture_default_str()->check(CLI::Range(1, 1000));
  add_shared_option(cmd, "--user-guard", a.user_guard)
      ->capture_default_str();
  add_llm_flags(cmd, a.llm);
}

std::unique_ptr<assemble::ServedEnvironment> open_served_environment(const ServiceArgs& a) {
  assemble::ServeConfig c;
  c.data = a.data;
  c.out = a.out;
  c.embedder = a.embedder;
  c.checkpoint = a.checkpoint;
  c.index_dir = a.index_dir;
  c.top_k = a.top_k;
  c.max_sessions = a.max_sessions;
  c.idle_timeout_s = a.idle_timeout_s;
  c.max_episode_bytes = a.max_episode_bytes;
  c.seed = a.seed;
  c.user_guard = a.user_guard;
  c.status = stderr_status();
  // The LLM user simulator, when a user model is named (same flags as `pwab run --user-sim llm`).
  const bool llm_user = !a.llm.user_model.empty() || !a.llm.model.empty();
  // A guard without a user is the library's usage error, reported before any endpoint is set up.
  if (!llm_user || a.user_guard < 0) return std::make_unique<assemble::ServedEnvironment>(c, assemble::RunModels{});
  return std::make_unique<assemble::ServedEnvironment>(
      c, make_llm_setup(a.llm, /*need_agent=*/false, /*need_user=*/true));
}

}  // namespace pwab::cli
