// The measurements behind the heuristic's defaults (docs/agents/heuristic.md), disabled in the default run:
//   test_agents --gtest_also_run_disabled_tests --gtest_filter='HeuristicTuning.*'
// Each variant changes one knob of the policy; the train split decides, the test split is reported. The services
// (index, SASRec 300 epochs on mini / 20 on full, fastText) are cached under $TMPDIR/pwab-agents-tune-<scale>.
#include <gtest/gtest.h>

#include <iostream>

#include "agents/heuristic_agent.h"
#include "core/sys.h"
#include "embed/fasttext_embedder.h"
#include "world.h"

namespace pwab::agents::test {
namespace {

struct Variant {
  std::string name;
  std::map<std::string, std::string> extra;
  std::string memory = "taskspec";
};

const std::vector<Variant>& single_turn_variants() {
  static const std::vector<Variant> v = {
      {"default", {}},
      {"memory none", {}, "none"},
      {"memory brand", {{"search_memory_brand", "true"}}},
      {"memory brand, count 3", {{"search_memory_brand", "true"}, {"search_brand_min_count", "3"}}},
      {"recommend same category (PUMA label)", {{"recommend_same_category", "true"}}},
      {"no own phrasing", {{"review_own_phrasing", "false"}}},
      {"no habits", {{"review_habits", "false"}}},
      {"no verdict", {{"review_verdict", "false"}}},
      {"review from memory only", {{"review_from_memory", "true"}}},
      {"relevance full", {{"relevance", "full"}}},
  };
  return v;
}

const std::vector<Variant>& multi_turn_variants() {
  static const std::vector<Variant> v = {
      {"default", {}},
      {"memory none", {}, "none"},
      {"recommend questions 0", {{"recommend_questions", "0"}}},
      {"recommend questions 2", {{"recommend_questions", "2"}}},
      {"recommend questions 10", {{"recommend_questions", "10"}}},
      {"memory brand", {{"search_memory_brand", "true"}}},
  };
  return v;
}

std::vector<const embed::Embedder*> embedders(const World& w) {
  return {w.fasttext.get(), w.fasttext_mean.get(), &w.hashing};
}

void tune(World& w, data::Split split, data::Track track, const std::vector<Variant>& list) {
  pwab::test::TempDir cache;
  for (const embed::Embedder* e : embedders(w)) {
    for (const auto& v : list) {
      AgentOptions o;
      o.memory = v.memory;
      o.extra = v.extra;
      AgentContext c{.ds = &w.ds, .embedder = e, .cache_dir = cache.path(), .seed = 1};
      auto factory = make_agent_factory("heuristic", o, c);
      auto run = run_split(w, *factory, split, track, *e);
      std::cout << e->name().substr(0, 15) << " " << data::to_string(split) << " "
                << (track == data::Track::kSingleTurn ? "single" : "multi ") << " | " << v.name << " | "
                << describe(run.summary) << " | "
                << run.seconds_agent * 1000 / static_cast<double>(run.episodes.size()) << " ms/task agent\n";
    }
  }
}

World& persistent(data::SynthScale scale) {
  static std::map<data::SynthScale, std::unique_ptr<World>> worlds;
  auto& w = worlds[scale];
  if (!w) {
    data::SynthOptions o;
    o.scale = scale;
    auto dir = std::filesystem::temp_directory_path() / ("pwab-agents-tune-" + std::string(data::to_string(scale)));
    w = std::make_unique<World>(o, dir, scale == data::SynthScale::kMini ? 300 : 20);
  }
  return *w;
}

TEST(HeuristicTuning, DISABLED_MiniSingleTurn) {
  tune(persistent(data::SynthScale::kMini), data::Split::kTrain, data::Track::kSingleTurn, single_turn_variants());
  tune(persistent(data::SynthScale::kMini), data::Split::kTest, data::Track::kSingleTurn, single_turn_variants());
}

TEST(HeuristicTuning, DISABLED_MiniMultiTurn) {
  tune(persistent(data::SynthScale::kMini), data::Split::kTrain, data::Track::kMultiTurn, multi_turn_variants());
  tune(persistent(data::SynthScale::kMini), data::Split::kTest, data::Track::kMultiTurn, multi_turn_variants());
}

//! The full synthetic test split (2,174 tasks), single-turn: training times of the two fastText models, and the
//! agent's time per task with each embedder.
TEST(HeuristicTuning, DISABLED_FullTiming) {
  Stopwatch w0;
  World& w = persistent(data::SynthScale::kFull);
  std::cout << "world " << w0.seconds() << " s (index " << w.seconds_index << ", SASRec " << w.seconds_rec
            << ", fastText " << w.seconds_fasttext << ")\n";
  pwab::test::TempDir tmp;
  Stopwatch w1;
  embed::train_fasttext_embedder(embed::dataset_corpus(w.ds), {}, tmp / "ft.bin");
  std::cout << "fastText embedder training (uncached) " << w1.seconds() << " s\n";
  Stopwatch w2;
  auto ft = embed::FastTextEmbedder::load(tmp / "ft.bin");
  std::cout << "fastText embedder load " << w2.seconds() << " s\n";
  Stopwatch w3;
  AgentContext c{.ds = &w.ds, .embedder = w.fasttext.get(), .cache_dir = tmp.path(), .seed = 1};
  auto factory = make_agent_factory("heuristic", {}, c);
  std::cout << "factory with classifier training (uncached) " << w3.seconds() << " s; classifier test accuracy "
            << dynamic_cast<const HeuristicAgentFactory&>(*factory).classifier().accuracy(w.ds.tasks(data::Split::kTest))
            << "\n";
  Stopwatch w4;
  auto again = make_agent_factory("heuristic", {}, c);
  std::cout << "factory (cached) " << w4.seconds() << " s\n";
  for (const embed::Embedder* e : {static_cast<const embed::Embedder*>(w.fasttext.get()),
                                   static_cast<const embed::Embedder*>(&w.hashing)}) {
    AgentContext ce{.ds = &w.ds, .embedder = e, .cache_dir = tmp.path(), .seed = 1};
    for (std::string memory : {"taskspec", "none"}) {
      AgentOptions o;
      o.memory = memory;
      auto f = make_agent_factory("heuristic", o, ce);
      auto run = run_split(w, *f, data::Split::kTest, data::Track::kSingleTurn, *e);
      std::cout << e->name().substr(0, 15) << " " << memory << ": " << describe(run.summary) << " | " << run.seconds
                << " s for " << run.episodes.size() << " tasks, agent "
                << run.seconds_agent * 1000 / static_cast<double>(run.episodes.size()) << " ms/task\n";
    }
  }
}

}  // namespace
}  // namespace pwab::agents::test
