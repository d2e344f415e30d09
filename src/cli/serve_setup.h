// src/cli/serve_setup.h: what `pwab serve` and `pwab mcp` share: the service flags and the served environment
// (dataset, search index, SASRec, embedder, user simulators, run directories, the EpisodeService).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cli/llm_setup.h"
#include "data/dataset.h"
#include "serve/episode_service.h"

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

//! The environment a server serves, loaded from the flags; prints nothing on stdout (stdio MCP needs it clean).
class ServedEnvironment {
 public:
  explicit ServedEnvironment(const ServiceArgs& args);
  ~ServedEnvironment();
  ServedEnvironment(const ServedEnvironment&) = delete;
  ServedEnvironment& operator=(const ServedEnvironment&) = delete;

  serve::EpisodeService& service();
  const data::Dataset& dataset() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace pwab::cli
