// src/puma/pipeline_run.cpp: the helpers the pipeline's steps share (pipeline_run.h).
#include "puma/pipeline_run.h"

#include <nlohmann/json.hpp>

#include "core/sys.h"
#include "llama/distributed.h"

namespace pwab::puma::stages {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::vector<TrainPair> pairs_of(const std::vector<Example>& examples) {
  std::vector<TrainPair> out;
  for (const Example& e : examples) out.push_back({e.prompt, e.target});
  return out;
}

json train_json(const TrainOptions& o) {
  return {{"epochs", o.epochs},
          {"lr", o.learning_rate},
          {"batch", o.batch_size},
          {"accum", o.accumulation_steps},
          {"warmup", o.warmup_ratio},
          {"max_length", o.max_length},
          {"max_prompt_length", o.max_prompt_length},
          {"truncation", o.prompt_truncation == PromptTruncation::kKeepEnd ? "keep_end" : "keep_start"},
          {"seed", o.seed},
          {"group_by_length", o.group_by_length},
          {"lora", o.lora},
          {"r", o.lora_r},
          {"alpha", o.lora_alpha},
          {"modules_to_save", o.lora_modules_to_save},
          {"beta", o.dpo_beta},
          {"rpo_alpha", o.rpo_alpha},
          {"clip", o.max_grad_norm}};
}

json shape_json(const ModelShape& s) {
  return {{"hidden", s.hidden}, {"layers", s.layers}, {"heads", s.heads},
          {"kv_heads", s.kv_heads}, {"ffn", s.ffn},        {"tied", s.tie_embeddings}};
}

std::unique_ptr<PumaModel> open_or_create(const fs::path& dir, const PipelineOptions& o, bool from_scratch) {
  if (from_scratch) {
    TinyOptions t;
    t.seed = o.seed;
    t.shape = o.shape;
    return PumaModel::create_tiny(dir, t, o.model);
  }
  return PumaModel::open(dir, {}, o.model);
}

void write_json(const fs::path& file, const json& j) { write_file_atomic(file, j.dump(2) + "\n"); }

std::vector<const data::Task*> task_list(const data::Dataset& ds, data::Split split, int limit) {
  std::vector<const data::Task*> out;
  for (const data::Task& t : ds.tasks(split)) {
    if (limit > 0 && out.size() >= static_cast<std::size_t>(limit)) break;
    out.push_back(&t);
  }
  return out;
}

// Whether a train task is held out of SFT for the second stage (PipelineOptions::holdout): the last `holdout` of
// the train tasks used.
bool held_out(const PipelineRun& run, const std::string& task) {
  if (run.o.holdout <= 0) return false;
  const auto& tasks = run.ds.tasks(data::Split::kTrain);
  const std::size_t used = run.o.train_limit > 0 ? std::min<std::size_t>(tasks.size(), run.o.train_limit) : tasks.size();
  const data::Task& t = task_of_key(run.ds, task);
  return t.split == data::Split::kTrain && t.index + static_cast<std::size_t>(run.o.holdout) >= used;
}

// The train examples of a prepared file the second stage uses: the held-out ones when there is a holdout.
std::vector<Example> second_stage_examples(const PipelineRun& run, std::vector<Example> examples) {
  if (run.o.holdout > 0) std::erase_if(examples, [&](const Example& e) { return !held_out(run, e.task); });
  return examples;
}

// Data-parallel: rank 0 tells the other ranks whether a training step trains (they then join it) or not.
void tell_followers(PipelineRun& run, const std::string& step, bool train) {
  if (!run.group || run.told.count(step)) return;
  run.group->announce(step, train ? "train" : "skip");
  run.told.insert(step);
}

json train_report_json(const TrainReport& r) {
  json j = {{"steps", r.steps},       {"train_loss", r.train_loss}, {"eval_loss", r.eval_loss},
            {"seconds", r.seconds},   {"resumed", r.resumed},       {"tokens", r.tokens},
            {"tokens_per_s", r.tokens_per_s}, {"truncated_rows", r.truncated_rows}, {"ranks", r.world},
            {"trainable_parameters", r.trainable_parameters}};
  if (r.world > 1) {
    j["comm_seconds"] = r.comm_seconds;
    j["bytes_all_reduced"] = r.bytes_all_reduced;
  }
  if (r.reference_seconds > 0) j["reference_seconds"] = r.reference_seconds;
  if (r.have_eval_preferences) {
    const PreferenceStats& p = r.eval_preferences;
    j["eval"] = {{"loss", p.loss},       {"margin", p.margin},           {"accuracy", p.accuracy},
                 {"kl", p.kl},           {"chosen_reward", p.chosen_reward}, {"rejected_reward", p.rejected_reward}};
  }
  return j;
}

}  // namespace pwab::puma::stages
