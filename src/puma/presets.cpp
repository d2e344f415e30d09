// src/puma/presets.cpp: the three presets `pwab puma --preset` starts from: tiny, cpu and paper (pipeline.h).
#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"
#include "puma/pipeline.h"

namespace pwab::puma {

PipelineOptions PipelineOptions::tiny_preset() {
  PipelineOptions o;
  o.preset = "tiny";
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
  o.sft_weights.function = 4;
  o.sft_weights.dialogue = 0.5;  // the multi-turn turns: answer, ask, use the reply, stop (dialogue_data.h)
  o.dpo_eval_tasks = 32;
  o.rl.train = o.dpo;  // every weight, as DPO
  o.rl.train.learning_rate = 2e-4;
  o.rl.iterations = 20;
  o.rl.tasks_per_iteration = 16;
  o.rl.group_size = 4;
  o.rl.kl_coef = 0.05;
  o.rl.max_new_tokens = o.max_new_tokens;
  o.rl.eval_every = 10;
  o.rl_eval_tasks = 64;
  return o;
}

PipelineOptions PipelineOptions::cpu_preset() {
  PipelineOptions o;
  o.preset = "cpu";
  // A vocabulary where most words are one piece, and an output layer tied to the embeddings: writing a query means
  // copying words of the instruction, which a tied model learns several times faster (docs/puma.md).
  o.tiny_vocab_size = 8000;
  o.shape = {128, 4, 4, 2, 344, /*tie_embeddings=*/true};
  o.prepare.memory.k = 20;
  o.prepare.memory.max_tokens = 64;
  // Recommendation: the label is the newest same-category items of the history. The memory lists them one short
  // numbered line each, in a budget of its own (15 items instead of one), and the model answers with the numbers:
  // a model this size learnt the ASIN lines' format but never copied an ASIN (docs/puma.md "Recommendation memory").
  o.prepare.recommend_length = 3;
  o.prepare.memory.recommend_layout = agents::RecommendLayout::kNumbered;
  o.prepare.memory.recommend_max_tokens = 128;
  o.sft.epochs = 5;
  o.sft.learning_rate = 2e-3;
  o.sft.batch_size = 16;
  o.sft.accumulation_steps = 1;
  o.sft.warmup_ratio = 0.05;
  o.sft.max_length = 448;  // a multi-turn example's prompt carries the conversation: 290–420 tokens
  o.sft.group_by_length = true;
  o.sft.lora = false;
  o.sft.eval_every = 300;
  o.sft.log_every = 20;
  // the budget goes to search, the hardest to learn; functions are learnt from a quarter of their examples
  // the multi-turn examples (2.8 per train task) at a twentieth: their targets ("Say: …", "stop", a refined call)
  // are short and regular, and at a tenth they cost single-turn search 0.07 (docs/puma.md "Multi-turn data")
  o.sft_weights = {0.25, 3, 0.5, 0.5, 0.05};
  o.dpo = o.sft;
  o.dpo.epochs = 1;
  o.dpo.learning_rate = 5e-4;
  o.dpo.batch_size = 8;
  o.dpo.warmup_ratio = 0.1;
  o.dpo.lora = true;  // a LoRA on the SFT model: the function prompts stay as SFT left them
  o.dpo.lora_modules_to_save = false;
  o.dpo.lora_r = 16;
  o.dpo.lora_alpha = 32;
  o.dpo.dpo_beta = 0.1;
  o.dpo.eval_every = 50;
  o.dpo.log_every = 10;
  o.samples = 4;
  o.sample_beams = false;
  o.sample_temperature = 1.0;
  o.max_new_tokens = 96;
  o.sample_limit = 3000;
  o.dpo_eval_tasks = 256;
  // The second stage learns from tasks SFT never saw: on the tasks it memorised, a sampled answer is nearly always
  // the label (entropy ~0.15, 60% of the groups without signal) and RL has nothing to learn (docs/puma.md).
  o.holdout = 2000;
  o.rl.train = o.dpo;  // a LoRA on the SFT model, as DPO
  o.rl.train.learning_rate = 2e-3;
  o.rl.train.warmup_ratio = 0.05;
  o.rl.iterations = 150;
  o.rl.tasks_per_iteration = 32;
  o.rl.group_size = 8;
  o.rl.minibatches = 2;
  o.rl.kl_coef = 0.02;
  o.rl.max_new_tokens = o.max_new_tokens;
  o.rl.eval_every = 50;
  o.rl_eval_tasks = 256;
  // A model this small, trained from scratch, copies the request badly and writes product words of its training
  // data instead; the raw instruction finds the product more often than its query does (docs/puma.md,
  // "Copy-constrained search queries"). Its queries are decoded from the prompt's words.
  o.copy_search = true;
  return o;
}

PipelineOptions PipelineOptions::paper_preset() {
  PipelineOptions o;
  o.preset = "paper";
  o.sft.epochs = 10;
  o.sft.learning_rate = 3e-4;
  o.sft.batch_size = 1;
  o.sft.accumulation_steps = 16;
  o.sft.max_length = 1280;
  o.sft.log_every = 10;  // the original's logging_steps
  o.dpo = o.sft;
  o.dpo.epochs = 5;
  o.dpo.learning_rate = 5e-5;
  o.dpo.max_length = 1024;
  o.dpo.max_prompt_length = 768;
  o.samples = 10;
  o.sample_temperature = 1.5;
  o.dpo_eval_tasks = 0;  // the original had no DPO test pairs; --dpo-eval-tasks N adds them
  o.rl.train = o.dpo;  // LoRA r16 with modules_to_save, as the paper's stages
  o.rl.train.learning_rate = 1e-5;
  o.rl.train.accumulation_steps = 1;
  o.rl.iterations = 200;
  o.rl.tasks_per_iteration = 16;
  o.rl.group_size = 8;
  o.rl.kl_coef = 0.04;
  o.rl.max_new_tokens = o.max_new_tokens;
  o.rl.eval_every = 20;
  return o;
}

PipelineOptions PipelineOptions::preset_named(const std::string& name) {
  if (name == "tiny") return tiny_preset();
  if (name == "cpu") return cpu_preset();
  if (name == "paper") return paper_preset();
  throw UsageError("--preset must be tiny, cpu or paper, not '" + name + "'");
}

}  // namespace pwab::puma
