// src/assemble/training_session.cpp: PUMA's pipeline over a dataset's environment (training_session.h).
#include "assemble/training_session.h"

#include "assemble/services.h"
#include "data/loader.h"
#include "models/torch_models.h"

namespace pwab::assemble {

struct TrainingSession::Impl {
  data::Dataset ds;
  DatasetEnvironment world;
  std::unique_ptr<agents::AgentFactory> teacher;  // the multi-turn data's teacher (puma/dialogue_data.h)
  puma::PipelineContext ctx;
};

TrainingSession::TrainingSession(const TrainingConfig& config, const RunModels& models,
                                 const TrainingHooks& hooks)
    : impl_(std::make_unique<Impl>()) {
  impl_->ds = data::load_dataset(config.data);
  impl_->world = open_environment(impl_->ds, config.data, {config.index_dir, config.checkpoint, hooks.status},
                                  open_embedder(config.embedder, impl_->ds, config.data), config.top_k);
  puma::PipelineContext& ctx = impl_->ctx;
  ctx.ds = &impl_->ds;
  ctx.embedder = impl_->world.embedder.get();
  ctx.env = impl_->world.environment.get();
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
  return models::torch_models().run_puma_pipeline(impl_->ctx, options, until);
}

const data::Dataset& TrainingSession::dataset() const { return impl_->ds; }

puma::PipelineReport run_training(const TrainingConfig& config, const RunModels& models, const TrainingHooks& hooks) {
  TrainingSession session(config, models, hooks);
  return session.run(config.pipeline, config.until);
}

}  // namespace pwab::assemble
