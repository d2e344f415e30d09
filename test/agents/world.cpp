#include "world.h"

#include <fmt/format.h>

#include "core/sys.h"
#include "sim/scripted_user.h"

namespace fs = std::filesystem;

namespace pwab::agents::test {

World::World(const data::SynthOptions& options, const fs::path& dir_in, int rec_epochs)
    : ds(data::synthesize(options)), dir(dir_in) {
  fs::create_directories(dir);
  Stopwatch w1;
  index = search::Index::open_or_build(ds, dir / "index");
  seconds_index = w1.seconds();
  Stopwatch w2;
  fs::path ckpt = dir / ("sasrec-" + std::to_string(rec_epochs) + ".pwab");
  if (!fs::exists(ckpt)) {
    rec::TrainOptions o;
    o.epochs = rec_epochs;
    o.eval_every = 0;
    o.progress = false;
    o.num_threads = 1;
    rec::train(ds, o, ckpt);
  }
  model = rec::Recommender::load(ckpt, ds);
  seconds_rec = w2.seconds();
  Stopwatch w3;
  fasttext = embed::open_or_train_fasttext_embedder(ds, dir / "cache");
  seconds_fasttext = w3.seconds();
  fasttext_mean = embed::open_or_train_fasttext_embedder(ds, dir / "cache", {}, embed::FastTextPooling::kMean);
  search = std::make_unique<env::IndexSearch>(*index);
  recommend = std::make_unique<env::SasrecRecommend>(*model);
}

World& mini_world() {
  static pwab::test::TempDir dir;
  static World w(data::SynthOptions{}, dir.path(), 60);
  return w;
}

SplitRun run_split(const World& w, const AgentFactory& factory, data::Split split, data::Track track,
                   const embed::Embedder& reward_embedder, int max_steps) {
  env::Environment environment(w.ds, w.search.get(), w.recommend.get(), reward_embedder);
  SplitRun out;
  std::vector<metrics::TaskOutcome> outcomes;
  Stopwatch watch;
  for (const auto& task : w.ds.tasks(split)) {
    auto agent = factory.make(task);
    runner::EpisodeOptions eo{track, max_steps};
    runner::EpisodeResult r;
    if (track == data::Track::kMultiTurn) {
      sim::ScriptedUser user(w.ds, task, 7);
      r = runner::run_episode(environment, task, *agent, &user, eo);
    } else {
      r = runner::run_episode(environment, task, *agent, nullptr, eo);
    }
    out.seconds_agent += r.seconds_agent;
    outcomes.push_back(r.outcome(std::string(data::to_string(split)) + "/" + std::to_string(task.index)));
    out.episodes.push_back(std::move(r));
  }
  out.seconds = watch.seconds();
  metrics::BootstrapOptions bo;
  bo.resamples = 0;
  out.summary = metrics::summarize(outcomes, bo);
  return out;
}

std::string describe(const metrics::Summary& s) {
  auto cell = [](const metrics::GroupSummary& g) { return fmt::format("R {:.3f} F {:.3f} steps {:.2f}", g.r_acc.value, g.f_acc.value, g.avg_steps.value); };
  return fmt::format("search [{}] | recommend [{}] | review [{}] | overall [{}]", cell(s.by_type[0]), cell(s.by_type[1]),
                     cell(s.by_type[2]), cell(s.overall));
}

}  // namespace pwab::agents::test
