// src/cli/serve_setup.h: the flags `pwab serve` and `pwab mcp` share, and the served environment they open
// (assemble/served_environment.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "assemble/served_environment.h"
#include "cli/llm_setup.h"

namespace CLI {
class App;
}

namespace pwab::cli {

//! Every flag of the service itself (not of a transport).
struct ServiceArgs {
  std::string data, out, embedder = "fasttext", checkpoint, index_dir;
  int top_k = 10;
  std::size_t max_sessions = 1000;
  double idle_timeout_s = 900;
  std::size_t max_episode_bytes = 16 << 20;
  uint64_t seed = 0;
  int user_guard = 0;  //!< the LLM user's leak guard (sim::LlmUserOptions::leak_guard), as `pwab run --user-guard`
  LlmFlags llm;
};

//! --data, --out, --max-sessions, --idle-timeout, --seed, --embedder, --checkpoint, --index-dir, --top-k,
//! --user-guard and the LLM flags (for `--user-sim llm` episodes).
void add_service_flags(CLI::App& cmd, ServiceArgs& args);

//! The served environment of the flags, with the LLM user's model when --user-model or --model names one.
std::unique_ptr<assemble::ServedEnvironment> open_served_environment(const ServiceArgs& args);

}  // namespace pwab::cli
