// PUMA's pipeline over a dataset's environment (run.h).
#include "puma/run.h"

#include "data/loader.h"
#include "env/services.h"
#include "models/torch_models.h"

namespace pwab::puma {

// The presets are plain settings, here rather than in pipeline.cpp (libtorch) so the front end can build them.
PipelineOptions PipelineOptions::tiny_preset() {
  PipelineOptions o;
  o.prepare.memory.k = 20;
  o.prepare.memory.max_tokens = 192;
  o.sft.epochs = 4;
  o.sft.learning_rate = 3e-3;
  o.sft.batch_size = 8;
  o.sft.accumulation_steps = 1;
  o.sft.warmup_ratio = 0.05;
  o.sft.max_length = 384;
  o.sft.lora = false;
  o.dpo = o.sft;
  o.dpo.epochs = 1;
  o.dpo.learning_rate = 5e-4;
  o.dpo.batch_size = 4;
  o.samples = 4;
  o.max_new_tokens = 48;
  o.function_repeats = 4;
  return o;
}

PipelineOptions PipelineOptions::paper_preset() {
  PipelineOptions o;
  o.sft.epochs = 10;
  o.sft.learning_rate = 3e-4;
  o.sft.batch_size = 1;
  o.sft.accumulation_steps = 16;
  o.sft.max_length = 1280;
  o.dpo = o.sft;
  o.dpo.epochs = 5;
  o.dpo.learning_rate = 5e-5;
  o.dpo.max_length = 1024;
  o.samples = 10;
  o.sample_temperature = 1.5;
  return o;
}

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
