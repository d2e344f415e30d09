// src/puma/pipeline_options.cpp: a pipeline's settings read from text (the SFT mode and weights, the alignment
// branch) and their one check (PipelineOptions::validate, validate_rl_options). Errors name the `pwab puma` flag
// of the setting, the name users meet it by.
#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"
#include "puma/pipeline.h"
#include "puma/rl.h"

namespace pwab::puma {
namespace {

void at_least(int64_t value, int64_t floor, const char* flag) {
  if (value < floor) throw UsageError(fmt::format("{} takes an integer ≥ {}, not {}", flag, floor, value));
}

void above(double value, double floor, const char* flag) {
  if (!(value > floor)) throw UsageError(fmt::format("{} must be > {:g}, not {:g}", flag, floor, value));
}

void not_below(double value, double floor, const char* flag) {
  if (!(value >= floor)) throw UsageError(fmt::format("{} must be ≥ {:g}, not {:g}", flag, floor, value));
}

}  // namespace

std::string_view to_string(SftMode mode) {
  switch (mode) {
    case SftMode::kFunction: return "function";
    case SftMode::kParam: return "param";
    case SftMode::kFunctionParam: return "function_param";
  }
  return "?";
}

SftMode parse_sft_mode(std::string_view text) {
  if (text == "function") return SftMode::kFunction;
  if (text == "param") return SftMode::kParam;
  if (text == "function_param") return SftMode::kFunctionParam;
  throw UsageError("SFT mode must be function, param or function_param (the original's --train_on), not '" +
                   std::string(text) + "'");
}

SftWeights parse_sft_weights(std::string_view text, SftWeights w) {
  for (const std::string& piece : split_trim(text, ',')) {
    std::string_view item = piece;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string name(trim(item.substr(0, eq == std::string_view::npos ? item.size() : eq)));
    double value = -1;
    if (eq != std::string_view::npos) {
      try {
        std::size_t used = 0;
        const std::string number(trim(item.substr(eq + 1)));
        value = std::stod(number, &used);
        if (used != number.size()) value = -1;
      } catch (const std::exception&) {
        value = -1;
      }
    }
    if (!(value >= 0))
      throw UsageError("--sft-weights takes kind=weight pairs with weights ≥ 0 (e.g. function=0.25,search=3), not '" +
                       std::string(item) + "'");
    if (name == "function") w.function = value;
    else if (name == "search") w.search = value;
    else if (name == "recommend") w.recommend = value;
    else if (name == "review") w.review = value;
    else if (name == "dialogue") w.dialogue = value;
    else throw UsageError("--sft-weights: unknown kind '" + name + "' (function, search, recommend, review, dialogue)");
  }
  return w;
}

std::string to_string(const SftWeights& w) {
  return fmt::format("function={:g},search={:g},recommend={:g},review={:g},dialogue={:g}", w.function, w.search,
                     w.recommend, w.review, w.dialogue);
}

// The presets are plain settings, here rather than in pipeline.cpp (libtorch) so the front end can build them.
std::string pipeline_branch(std::string_view step) {
  if (step == "sample" || step == "score" || step == "dpo" || step == "eval-dpo") return "dpo";
  if (step == "rl" || step == "eval-rl") return "rl";
  return "";
}

std::string parse_align(std::string_view text) {
  if (text == "dpo" || text == "rl" || text == "none") return std::string(text);
  throw UsageError("--align must be dpo, rl or none, not '" + std::string(text) + "'");
}

void validate_rl_options(const RlOptions& r) {
  at_least(r.iterations, 0, "--rl-iterations");
  at_least(r.tasks_per_iteration, 1, "--rl-tasks");
  at_least(r.group_size, 2, "--rl-group");
  above(r.temperature, 0, "--rl-temperature");
  at_least(r.top_k, 0, "--rl-top-k");
  at_least(r.max_new_tokens, 1, "--rl-max-new-tokens");
  at_least(r.inner_epochs, 1, "--rl-inner-epochs");
  at_least(r.minibatches, 1, "--rl-minibatches");
  if (r.minibatches > r.tasks_per_iteration) throw UsageError("--rl-minibatches cannot exceed --rl-tasks");
  at_least(r.eval_every, 0, "--rl-eval-every");
  at_least(r.checkpoint_every, 1, "RL checkpoints every N iterations: N");
  at_least(r.generate_batch, 1, "RL completions generated together");
  at_least(r.train.lora_r, 1, "--rl-lora-r");
  above(r.train.learning_rate, 0, "--rl-lr");
  not_below(r.train.warmup_ratio, 0, "--rl-warmup");
  not_below(r.kl_coef, 0, "--rl-kl");
  not_below(r.clip_low, 0, "--rl-clip");
  if (r.clip_low >= 1) throw UsageError("--rl-clip must be below 1");
  not_below(r.clip_high, 0, "--rl-clip-high");
}

void PipelineOptions::validate() const {
  at_least(samples, 1, "--samples");
  at_least(sft.epochs, 0, "--sft-epochs");
  at_least(dpo.epochs, 0, "--dpo-epochs");
  above(sft.learning_rate, 0, "--sft-lr");
  above(dpo.learning_rate, 0, "--dpo-lr");
  at_least(prepare.memory.max_tokens, 8, "--memory-tokens");
  at_least(prepare.memory.k, 0, "--memory-k");
  if (prepare.memory.recommend_max_tokens != 0) at_least(prepare.memory.recommend_max_tokens, 8, "--recommend-memory-tokens");
  at_least(sft.accumulation_steps, 1, "--grad-accum");
  at_least(dpo.accumulation_steps, 1, "--grad-accum");
  at_least(sft.batch_size, 1, "--sft-batch");
  at_least(dpo.batch_size, 1, "--dpo-batch");
  at_least(sft.max_length, 8, "--max-length");
  at_least(dpo.max_length, 8, "--dpo-max-length");
  at_least(dpo.max_prompt_length, 0, "--dpo-max-prompt-length");
  above(dpo.dpo_beta, 0, "--beta");
  at_least(sft.lora_r, 1, "--lora-r");
  at_least(dpo.lora_r, 1, "--lora-r");
  above(sft.lora_alpha, 0, "--lora-alpha");
  above(dpo.lora_alpha, 0, "--lora-alpha");
  not_below(dpo.rpo_alpha, 0, "--rpo-alpha");
  above(sample_temperature, 0, "--sample-temperature");
  at_least(sample_top_k, 0, "--sample-top-k");
  at_least(sample_limit, 0, "--sample-limit");
  at_least(dpo_eval_tasks, 0, "--dpo-eval-tasks");
  at_least(max_new_tokens, 1, "--max-new-tokens");
  at_least(prepare.recommend_length, 1, "--recommend-length");
  at_least(holdout, 0, "--holdout");
  at_least(rl_eval_tasks, 0, "--rl-eval-tasks");
  at_least(rl_max_steps, 1, "--rl-max-steps");
  validate_rl_options(rl);
  if (rl_distinct_reviews && rl_track != data::Track::kSingleTurn)
    throw UsageError("--rl-distinct-reviews shapes single-turn RL's review reward; --rl-track multi scores whole "
                     "episodes");
  if (base_model.empty()) {  // the shape of a model trained from scratch
    at_least(tiny_vocab_size, 300, "--vocab");
    at_least(shape.hidden, 8, "--hidden");
    at_least(shape.layers, 1, "--layers");
    at_least(shape.heads, 1, "--heads");
    at_least(shape.kv_heads, 1, "--kv-heads");
    at_least(shape.ffn, 8, "--ffn");
    if (shape.hidden % shape.heads != 0 || shape.heads % shape.kv_heads != 0)
      throw UsageError(fmt::format("--hidden {} must be a multiple of --heads {}, and --heads of --kv-heads {}",
                                   shape.hidden, shape.heads, shape.kv_heads));
  }
}

}  // namespace pwab::puma
