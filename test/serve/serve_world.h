// test/serve/serve_world.h: what the serve tests share: the mini synthetic dataset behind a real BM25 index,
// an agent that reacts to what it is shown, and the in-process episode a served one must reproduce.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "runner/episode.h"
#include "runner/results.h"
#include "search/search.h"
#include "support/test_support.h"

namespace pwab::serve::test {

//! The real search index as the environment's search tool (what env::IndexSearch does, without linking the
//! recommender's libtorch into this test). Recommendation has no backend here: those calls are Error
//! observations, scored [0, 0], as in-process.
class IndexBackend final : public env::SearchBackend {
 public:
  explicit IndexBackend(const search::Index& index) : index_(index) {}
  std::vector<std::string> search(std::string_view query, int k) const override;

 private:
  const search::Index& index_;
};

//! The environment of every serve test, built once per process.
struct World {
  World();
  pwab::test::TempDir dir;
  data::Dataset ds;
  std::unique_ptr<search::Index> index;
  std::unique_ptr<IndexBackend> search;
  embed::HashingEmbedder embedder;
  std::unique_ptr<env::Environment> env;
};
World& world();

//! Asks the user, answers with a task function built from what it was told, asks again, tries again, stops
//! (multi-turn); calls a task function built from the instruction (single-turn). Reports token counts that
//! depend on what it saw, and keeps every decision so a test can replay them.
class ProbingAgent final : public runner::Agent {
 public:
  void begin(const data::Task& task, const std::string& first_observation, data::Track track) override;
  runner::AgentStep next(const std::string& observation) override;
  std::vector<runner::AgentStep> decisions;

 private:
  runner::AgentStep task_function(const std::string& text) const;
  data::TaskType type_ = data::TaskType::kSearch;
  data::Track track_ = data::Track::kSingleTurn;
  std::string instruction_;
};

//! One episode run in-process as `pwab run` runs it (the scripted user seeded with `seed` in multi-turn).
struct InProcessEpisode {
  runner::TaskRecord record;
  std::vector<runner::AgentStep> decisions;
};
InProcessEpisode run_in_process(const data::Task& task, data::Track track, uint64_t seed, int max_steps = 10);

//! A record as JSON text without its wall-time fields, which differ between any two runs.
std::string without_timing(const std::string& record_json);
//! without_timing, less the type and target a served `end` never reveals: a record as a client receives it.
std::string as_served(const std::string& record_json);

}  // namespace pwab::serve::test
