// src/assemble/served_environment.h: the environment `pwab serve` and `pwab mcp` serve: the dataset, its search
// index, SASRec and embedder, the LLM user simulator when a user model is given, the run directories that keep
// finished episodes, and the EpisodeService over them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "assemble/benchmark.h"
#include "data/dataset.h"
#include "serve/episode_service.h"

namespace pwab::assemble {

//! Every setting of the served environment (not of a transport), with `pwab serve`'s defaults.
struct ServeConfig {
  std::filesystem::path data;  //!< dataset directory (required)
  std::filesystem::path out;   //!< run directories OUT/single and OUT/multi; empty = records are not kept
  std::string embedder = "fasttext";  //!< review rewards: fasttext, minilm:MODEL_DIR or hashing (open_embedder)
  std::filesystem::path checkpoint;   //!< SASRec; empty = DATA's default
  std::filesystem::path index_dir;    //!< search index root; empty = DATA's default
  int top_k = 10;
  std::size_t max_sessions = 1000;
  double idle_timeout_s = 900;
  std::size_t max_episode_bytes = 16 << 20;
  uint64_t seed = 0;   //!< default seed of the scripted user
  int user_guard = 0;  //!< the LLM user's leak guard (sim::LlmUserOptions::leak_guard), as `pwab run --user-guard`
  //! Service lines (a first-run SASRec training); null = silent.
  std::function<void(const std::string&)> status;
};

//! The environment a server serves; prints nothing on stdout (stdio MCP needs it clean).
class ServedEnvironment {
 public:
  //! `models`: the LLM user's model and the ledger when `user_sim llm` episodes are served (models.user_model
  //! set), else empty. UsageError for a user_guard that is negative or has no LLM user to guard.
  ServedEnvironment(const ServeConfig& config, RunModels models);
  ~ServedEnvironment();
  ServedEnvironment(const ServedEnvironment&) = delete;
  ServedEnvironment& operator=(const ServedEnvironment&) = delete;

  serve::EpisodeService& service();
  const data::Dataset& dataset() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace pwab::assemble
