// PUMA's pipeline over a dataset's environment (run.h).
#include "puma/run.h"

#include "data/loader.h"
#include "env/services.h"
#include "models/torch_models.h"

namespace pwab::puma {

PipelineReport run_training(const TrainingConfig& config, const runner::RunModels& models, const TrainingHooks& hooks) {
  data::Dataset ds = data::load_dataset(config.data);
  env::DatasetEnvironment world =
      env::open_environment(ds, config.data, {config.index_dir, config.checkpoint, hooks.status},
                            env::open_embedder(config.embedder, ds, config.data), config.top_k);
  PipelineContext ctx;
  ctx.ds = &ds;
  ctx.embedder = world.embedder.get();
  ctx.env = world.environment.get();
  if (models.agent_model) ctx.search_labeler = llm_search_labeler(*models.agent_model, models.agent_model_name);
  ctx.log = hooks.log;
  ctx.progress = hooks.progress;
  ctx.cancel = hooks.cancel;
  return models::torch_models().run_puma_pipeline(ctx, config.pipeline, config.until);
}

}  // namespace pwab::puma
