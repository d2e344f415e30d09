// Recommender benchmarks: latency of one recommendation over the full-size item space (35,772 candidates) and
// training throughput on the mini and full synthetic datasets.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench.h"
#include "core/rng.h"
#include "core/sys.h"
#include "data/synth.h"
#include "rec/recommender.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

constexpr int kFullModelEpochs = 5;
constexpr int kCalls = 2000;

const data::Dataset& dataset(data::SynthScale scale) {
  static std::unique_ptr<data::Dataset> mini, full;
  auto& slot = scale == data::SynthScale::kMini ? mini : full;
  if (!slot) {
    data::SynthOptions o;
    o.scale = scale;
    slot = std::make_unique<data::Dataset>(data::synthesize(o));
  }
  return *slot;
}

fs::path full_model(const Context& ctx) {
  return ctx.out_dir / "rec" / fmt::format("sasrec-full-gen{}-{}ep.ckpt", data::kSynthVersion, kFullModelEpochs);
}

//! A model trained for a few epochs on the full synthetic dataset, cached between runs.
void ensure_full_model(const Context& ctx) {
  if (fs::exists(full_model(ctx))) return;
  std::fprintf(stderr, "[bench] training SASRec for %d epochs on the full synthetic dataset\n", kFullModelEpochs);
  rec::TrainOptions o = rec::original_recipe();  // latency does not depend on the recipe; BCE epochs are short
  o.epochs = kFullModelEpochs;
  o.eval_every = 0;
  rec::train(dataset(data::SynthScale::kFull), o, full_model(ctx));
}

//! Inputs: each user's behaviours before a random point, at most 30, like an agent's tool call.
std::vector<std::vector<std::string>> make_inputs(const data::Dataset& ds, int n) {
  Rng rng(7);
  std::vector<std::vector<std::string>> inputs;
  while (static_cast<int>(inputs.size()) < n) {
    const auto& user = ds.users()[rng.below(ds.users().size())];
    if (user.behaviours.size() < 2) continue;
    std::size_t end = 1 + rng.below(user.behaviours.size() - 1), start = end > 30 ? end - 30 : 0;
    std::vector<std::string> asins;
    for (std::size_t i = start; i < end; ++i) asins.push_back(ds.product(user.behaviours[i].product).parent_asin);
    inputs.push_back(std::move(asins));
  }
  return inputs;
}

std::unique_ptr<rec::Recommender> recommender;
std::vector<std::vector<std::string>> inputs;
std::size_t last_result_size = 0;

const int kLatency = add({
    "rec/recommend_latency",
    fmt::format("{} recommend() calls (top 10 of 35,772 candidates; model trained {} epochs on the full synthetic "
                "dataset), one thread; extras: per-call p50/p99",
                kCalls, kFullModelEpochs),
    5,
    [](const Context& ctx) {
      ensure_full_model(ctx);
      if (!recommender) recommender = rec::Recommender::load(full_model(ctx), dataset(data::SynthScale::kFull));
      if (inputs.empty()) inputs = make_inputs(dataset(data::SynthScale::kFull), kCalls);
      for (int i = 0; i < 50; ++i) recommender->recommend(inputs[i], 10);  // warm-up
    },
    [](const Context&, std::vector<Extra>& extras) {
      std::vector<double> ms;
      Stopwatch total;
      last_result_size = 10;
      for (const auto& input : inputs) {
        Stopwatch call;
        auto result = recommender->recommend(input, 10);
        ms.push_back(call.seconds() * 1e3);
        last_result_size = std::min(last_result_size, result.size());
      }
      double seconds = total.seconds();
      extras.push_back({"p50", percentile(ms, 0.5), "ms"});
      extras.push_back({"p99", percentile(ms, 0.99), "ms"});
      extras.push_back({"candidates", static_cast<double>(recommender->n_candidates()), ""});
      return seconds;
    },
    [](const Context&) -> std::string {
      if (recommender->n_candidates() != 35772) return "expected 35,772 candidates";
      return last_result_size == 10 ? "" : "a call returned fewer than 10 items";
    },
});

rec::TrainReport last_train;

Benchmark train_benchmark(data::SynthScale scale, int epochs, int runs) {
  std::string name = scale == data::SynthScale::kMini ? "mini" : "full";
  return {
      "rec/train_" + name,
      fmt::format("train SASRec {} epochs on the {} synthetic dataset (the original's BCE recipe, batch 128, no validation); extra: sequences/s",
                  epochs, name),
      runs,
      [scale](const Context&) { dataset(scale); },
      [scale, epochs, name](const Context& ctx, std::vector<Extra>& extras) {
        rec::TrainOptions o = rec::original_recipe();  // the figures in docs/recommender.md are this recipe's
        o.epochs = epochs;
        o.eval_every = 0;
        o.progress = false;
        fs::path out = ctx.out_dir / "rec" / ("train-" + name + ".ckpt");
        fs::remove(out);
        Stopwatch clock;
        last_train = rec::train(dataset(scale), o, out);
        double s = clock.seconds();
        extras.push_back({"sequences/s", last_train.sequences_per_second, ""});
        extras.push_back({"s/epoch", s / epochs, "s"});
        return s;
      },
      [](const Context&) -> std::string {
        return std::isfinite(last_train.final_loss) && last_train.final_loss > 0 ? "" : "non-finite loss";
      },
  };
}

const int kTrainMini = add(train_benchmark(data::SynthScale::kMini, 50, 3));
const int kTrainFull = add(train_benchmark(data::SynthScale::kFull, 2, 3));

}  // namespace
