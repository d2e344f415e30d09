// src/puma/stage_sft.cpp: the sft step: the SFT data by mode and weights, and the training.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "puma/pipeline_run.h"

namespace pwab::puma::stages {

namespace {

// Each example floor(w) times, and once more when its own draw (seeded by the run and the task) falls below the
// fractional part: the same rows on every run with these settings.
void add_weighted(std::vector<TrainPair>& out, const std::vector<Example>& examples, double weight, uint64_t seed,
                  const char* kind) {
  const int whole = static_cast<int>(weight);
  const double part = weight - whole;
  for (const Example& e : examples) {
    int copies = whole;
    if (part > 0 && Rng(derive_seed(seed, hash_bytes(std::string(kind) + e.task))).uniform() < part) ++copies;
    for (int i = 0; i < copies; ++i) out.push_back({e.prompt, e.target});
  }
}

}  // namespace

// The SFT data by the SFT mode and the weights; the evaluation pairs are the test split's examples of the same
// kinds, unweighted.
std::pair<std::vector<TrainPair>, std::vector<TrainPair>> sft_pairs(const PipelineRun& run) {
  std::vector<TrainPair> train, eval;
  const SftWeights& w = run.o.sft_weights;
  auto sft_part = [&](std::vector<Example> examples) {  // without the tasks held out for the second stage
    if (run.o.holdout > 0) std::erase_if(examples, [&](const Example& e) { return held_out(run, e.task); });
    return examples;
  };
  if (run.o.sft_mode != SftMode::kParam) {
    add_weighted(train, sft_part(read_examples(run.data_dir / "function_train.jsonl")), w.function, run.o.seed,
                 "function");
    eval = pairs_of(read_examples(run.data_dir / "function_test.jsonl"));
  }
  if (run.o.sft_mode != SftMode::kFunction) {
    std::map<data::TaskType, std::vector<Example>> by_type;
    for (Example& e : sft_part(read_examples(run.data_dir / "param_train.jsonl"))) by_type[e.type].push_back(std::move(e));
    add_weighted(train, by_type[data::TaskType::kSearch], w.search, run.o.seed, "search");
    add_weighted(train, by_type[data::TaskType::kRecommend], w.recommend, run.o.seed, "recommend");
    add_weighted(train, by_type[data::TaskType::kReview], w.review, run.o.seed, "review");
    if (w.dialogue > 0) {  // one task gives several examples: each is drawn on its own (the key and the target)
      std::vector<Example> turns = sft_part(read_examples(run.data_dir / "dialogue_train.jsonl"));
      for (std::size_t i = 0; i < turns.size(); ++i) turns[i].task += "#" + std::to_string(i);
      add_weighted(train, turns, w.dialogue, run.o.seed, "dialogue");
    }
    auto eval_params = pairs_of(read_examples(run.data_dir / "param_test.jsonl"));
    eval.insert(eval.end(), eval_params.begin(), eval_params.end());
  }
  if (train.empty()) throw UsageError("the SFT data is empty: every weight of the SFT mode's examples is 0");
  return {std::move(train), std::move(eval)};
}

// sft: function + parameter examples (the SFT mode); epochs 0 = no SFT, the base model goes on as it is.
void sft_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  json extra = {{"device", o.model.device}, {"dtype", o.model.dtype}, {"seed", o.seed}, {"holdout", o.holdout},
                {"weights", to_string(o.sft_weights)}, {"mode", std::string(to_string(o.sft_mode))}};
  if (run.tiny) extra["shape"] = shape_json(o.shape);
  run.settings += train_json(o.sft).dump() + extra.dump();
  if (run.steps.skip("sft", run.sft_dir, run.settings)) return tell_followers(run, "sft", false);
  auto [train, eval] = sft_pairs(run);
  auto model = open_or_create(run.base, o, run.tiny);
  run.steps.log("sft: " + model->describe() + ", " + std::to_string(train.size()) + " pairs" +
                (o.sft.epochs == 0 ? " (0 epochs: no SFT, the base model is kept)" : ""));
  TrainOptions opts = run.sft_options;
  if (opts.lora) {
    opts.adapter_dir = run.sft_dir / "adapter";
    opts.adapter_base_model = run.base.string();
  }
  claim_work_dir(run.sft_dir / "work", run.settings);
  tell_followers(run, "sft", o.sft.epochs > 0);
  TrainReport r = model->sft(train, eval, run.sft_dir / "work", opts);
  if (r.cancelled) {
    run.report.cancelled = true;
    return;
  }
  model->save(run.sft_dir / "model");
  write_json(run.sft_dir / "train.json", train_report_json(r));
  run.steps.log(fmt::format("sft: {} steps, train loss {:.4f}, eval loss {:.4f}, {:.1f} s, {:.0f} tokens/s{}", r.steps,
                            r.train_loss, r.eval_loss, r.seconds, r.tokens_per_s,
                            r.world > 1 ? fmt::format(" on {} ranks ({:.1f} s in collectives)", r.world, r.comm_seconds)
                                        : ""));
  run.steps.mark("sft", run.sft_dir, run.settings);
}

}  // namespace pwab::puma::stages
