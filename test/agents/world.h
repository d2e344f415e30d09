// test/agents/world.h: the mini synthetic dataset with its real services (BM25 index, SASRec, fastText
// embedder), shared by the agents tests, and a helper that runs an agent over a split through the runner.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "data/synth.h"
#include "embed/embedder.h"
#include "embed/fasttext_embedder.h"
#include "env/backends.h"
#include "metrics/metrics.h"
#include "runner/episode.h"
#include "support/test_support.h"

namespace pwab::agents::test {

struct World {
  //! Builds everything under `dir` (the index, a SASRec checkpoint trained `rec_epochs` epochs, the fastText
  //! embedder); reuses what is already there.
  World(const data::SynthOptions& options, const std::filesystem::path& dir, int rec_epochs);
  data::Dataset ds;
  std::filesystem::path dir;
  std::unique_ptr<search::Index> index;
  std::unique_ptr<rec::Recommender> model;
  std::unique_ptr<embed::FastTextEmbedder> fasttext;       //!< SIF pooling (the default)
  std::unique_ptr<embed::FastTextEmbedder> fasttext_mean;  //!< mean pooling (getSentenceVector)
  embed::HashingEmbedder hashing;
  std::unique_ptr<env::IndexSearch> search;
  std::unique_ptr<env::SasrecRecommend> recommend;
  double seconds_index = 0, seconds_rec = 0, seconds_fasttext = 0;
};

//! The default mini dataset (50 users, 2,000 products) with SASRec trained 60 epochs (weak: recommendation R. Acc stays near 0; the tuning test uses 300), built once per process.
World& mini_world();

struct SplitRun {
  metrics::Summary summary;
  std::vector<runner::EpisodeResult> episodes;
  double seconds = 0;        //!< wall time of the episodes (agent + environment), factory excluded
  double seconds_agent = 0;  //!< agent time only
};

//! Runs every task of `split` through runner::run_episode (multi-turn with a sim::ScriptedUser seeded 7).
SplitRun run_split(const World& w, const AgentFactory& factory, data::Split split, data::Track track,
                   const embed::Embedder& reward_embedder, int max_steps = 10);

//! "search 0.41 | recommend 0.05 | review 0.62 | overall 0.36" (R. Acc), plus F. Acc and steps.
std::string describe(const metrics::Summary& s);

}  // namespace pwab::agents::test
