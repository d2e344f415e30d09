// src/assemble/training_session.cpp: PUMA's pipeline over a dataset's environment (training_session.h).
#include "assemble/training_session.h"

#include <fmt/format.h>

#include <map>

#include "assemble/services.h"
#include "core/error.h"
#include "core/hash.h"
#include "data/loader.h"
#include "models/torch_models.h"

namespace pwab::assemble {

//! The environment behind training rewards (PipelineOptions::reward_checkpoint): the session's search and embedder
//! with a recommender of its own.
struct RewardWorld {
  std::unique_ptr<rec::Recommender> recommender;
  std::unique_ptr<env::SasrecRecommend> recommend;
  std::unique_ptr<env::Environment> environment;
};

struct TrainingSession::Impl {
  data::Dataset ds;
  DatasetEnvironment world;
  int top_k = 10;
  std::map<std::filesystem::path, RewardWorld> reward_worlds;  // opened on first use, by checkpoint
  std::unique_ptr<agents::AgentFactory> teacher;  // the multi-turn data's teacher (puma/dialogue_data.h)
  puma::PipelineContext ctx;
};

TrainingSession::TrainingSession(const TrainingConfig& config, const RunModels& models,
                                 const TrainingHooks& hooks)
    : impl_(std::make_unique<Impl>()) {
  impl_->ds = data::load_dataset(config.data);
  impl_->world = open_environment(impl_->ds, config.data, {config.index_dir, config.checkpoint, hooks.status},
                                  open_embedder(config.embedder, impl_->ds, config.data), config.top_k);
  impl_->top_k = config.top_k;
  puma::PipelineContext& ctx = impl_->ctx;
  ctx.ds = &impl_->ds;
  ctx.embedder = impl_->world.embedder.get();
  ctx.env = impl_->world.environment.get();
  ctx.recommender_fingerprint = fmt::format("{:016x}", hash_file(impl_->world.services.checkpoint));
  {
    // the heuristic agent as `pwab run --track multi` runs it: its classifier cached beside the dataset's others
    agents::AgentContext teacher;
    teacher.ds = &impl_->ds;
    teacher.embedder = ctx.embedder;
    teacher.cache_dir = config.data / ".pwab-agents";
    impl_->teacher = agents::make_agent_factory("heuristic", {}, teacher);
    ctx.dialogue_teacher = impl_->teacher.get();
  }
  if (models.agent_model) ctx.search_labeler = puma::llm_search_labeler(*models.agent_model, models.agent_model_name);
  ctx.sample_model = config.sample_model.get();
  ctx.sample_model_name = config.sample_model_name;
  ctx.log = hooks.log;
  ctx.progress = hooks.progress;
  ctx.cancel = hooks.cancel;
}

TrainingSession::~TrainingSession() = default;

puma::PipelineReport TrainingSession::run(const puma::PipelineOptions& options, const std::string& until) {
  puma::PipelineContext ctx = impl_->ctx;
  if (!options.reward_checkpoint.empty()) {
    auto [it, fresh] = impl_->reward_worlds.try_emplace(options.reward_checkpoint);
    RewardWorld& w = it->second;
    if (fresh) {
      if (!std::filesystem::exists(options.reward_checkpoint)) {
        impl_->reward_worlds.erase(it);
        throw Error("no recommender checkpoint at " + options.reward_checkpoint.string() +
                    " (--reward-checkpoint; `pwab rec train DATA --hold-out-train --out FILE` makes one)");
      }
      w.recommender = rec::Recommender::load(options.reward_checkpoint, impl_->ds);
      w.recommend = std::make_unique<env::SasrecRecommend>(*w.recommender);
      w.environment = std::make_unique<env::Environment>(impl_->ds, impl_->world.search.get(), w.recommend.get(),
                                                         *impl_->world.embedder, env::EnvironmentOptions{impl_->top_k});
    }
    ctx.reward_env = w.environment.get();
    ctx.reward_fingerprint = fmt::format("{:016x}", hash_file(options.reward_checkpoint));
  }
  return models::torch_models().run_puma_pipeline(ctx, options, until);
}

const data::Dataset& TrainingSession::dataset() const { return impl_->ds; }

puma::PipelineReport run_training(const TrainingConfig& config, const RunModels& models, const TrainingHooks& hooks) {
  TrainingSession session(config, models, hooks);
  return session.run(config.pipeline, config.until);
}

}  // namespace pwab::assemble
