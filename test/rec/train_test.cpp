// Training on the mini synthetic dataset: the loss falls, the model beats most-popular on held-out test
// behaviours, pwab's checkpoint round-trips and checks itself, and an interrupted run resumes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/rng.h"
#include "core/sys.h"
#include "data/synth.h"
#include "rec/checkpoint_file.h"
#include "rec/evaluate.h"
#include "rec/recommender.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace pwab;

namespace {

//! The default mini dataset (50 users, 2,000 products): its companion purchases give SASRec item-to-item
//! transitions that a most-popular list cannot capture (docs/data.md, docs/recommender.md).
data::SynthOptions mini_options() { return data::SynthOptions{}; }
const data::Dataset& mini() {
  static const data::Dataset ds = data::synthesize(mini_options());
  return ds;
}

//! The original recipe (BCE), shortened: the checkpoint, resume and option tests below do not depend on it, and
//! its 300-epoch model is the reference the default recipe is compared with.
rec::TrainOptions quick_options(int epochs) {
  rec::TrainOptions o = rec::original_recipe();
  o.epochs = epochs;
  o.eval_every = 25;
  o.progress = false;
  o.num_threads = 1;  // a small model: one thread is as fast, and the result is the same on every machine
  return o;
}

//! One trained model shared by the tests that only read it.
struct Trained {
  test::TempDir dir;
  fs::path checkpoint = dir / "sasrec.ckpt";
  rec::TrainReport report;
  // Validated once, at the end: with 50 users, validation against sampled negatives is too noisy to pick an
  // earlier epoch, so the test serves the final weights.
  Trained() {
    auto o = quick_options(kEpochs);
    o.eval_every = 0;
    report = rec::train(mini(), o, checkpoint);
  }
  static constexpr int kEpochs = 300;
};
Trained& trained() {
  static Trained t;
  return t;
}

}  // namespace

TEST(RecTrain, LossFallsAndValidationIsReported) {
  const auto& r = trained().report;
  EXPECT_EQ(r.first_epoch, 1);
  EXPECT_EQ(r.epochs_run, Trained::kEpochs);
  EXPECT_EQ(r.last_epoch, Trained::kEpochs);
  EXPECT_LT(r.final_loss, 0.8 * r.first_loss) << "first " << r.first_loss << " final " << r.final_loss;
  EXPECT_GE(r.n_train_users, 45u);
  EXPECT_GE(r.n_validation_users, 45u);
  EXPECT_GT(r.best_epoch, 0);
  EXPECT_GT(r.best_hr10, 0.0);
  std::printf("[rec] mini: %d epochs in %.1f s (%.0f sequences/s), loss %.4f -> %.4f, validation HR@10 %.3f NDCG@10 %.3f (epoch %d)\n",
              r.epochs_run, r.seconds, r.sequences_per_second, r.first_loss, r.final_loss, r.best_hr10, r.best_ndcg10,
              r.best_epoch);
}

TEST(RecTrain, BeatsMostPopularOnHeldOutTestBehaviours) {
  auto rec = rec::Recommender::load(trained().checkpoint, mini());
  auto r = rec::evaluate_held_out(*rec, mini());
  ASSERT_GT(r.cases, 50u);
  std::printf("[rec] mini test behaviours (%zu): HR@10 SASRec %.3f (%zu distinct items), most-popular %.3f, "
              "last-item successors %.3f\n",
              r.cases, r.model.hr, r.model.distinct_items, r.popular.hr, r.successors.hr);
  EXPECT_GT(r.model.hr, r.popular.hr);
  // It ranks per history: not one list for everyone.
  EXPECT_GT(r.model.distinct_items, 10u * 5);
}

TEST(RecTrain, CheckpointRoundTripsAndChecksItself) {
  const fs::path& path = trained().checkpoint;
  auto a = rec::Recommender::load(path, mini());
  auto b = rec::Recommender::load(path, mini());
  EXPECT_NE(a->description().find("pwab checkpoint"), std::string::npos);
  // The probes stored at training time are what the loaded model computes.
  auto contents = rec::decode_checkpoint(read_file(path), path.string());
  auto meta = nlohmann::json::parse(contents.meta_json);
  ASSERT_FALSE(meta["probes"].empty());
  for (const auto& probe : meta["probes"]) {
    auto got = a->recommend_ids(probe["input_ids"].get<std::vector<int64_t>>(), 5);
    auto again = b->recommend_ids(probe["input_ids"].get<std::vector<int64_t>>(), 5);
    ASSERT_EQ(got.size(), probe["top_ids"].size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, probe["top_ids"][i].get<int64_t>());
      EXPECT_NEAR(got[i].second, probe["top_scores"][i].get<double>(), 1e-5);
      EXPECT_EQ(got[i], again[i]);
    }
  }
  EXPECT_EQ(meta["config"]["maxlen"], 30);
  EXPECT_EQ(meta["epoch"], Trained::kEpochs);
}

TEST(RecTrain, DamagedOwnCheckpointsAreRejected) {
  test::TempDir dir;
  const fs::path& path = trained().checkpoint;
  std::string bytes = read_file(path);
  auto error_of = [&](const std::string& content) -> std::string {
    write_file_atomic(dir / "bad.ckpt", content);
    try {
      rec::Recommender::load(dir / "bad.ckpt", mini());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(bytes.substr(0, bytes.size() - 1000)).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(bytes.substr(0, 20)).find("truncated"), std::string::npos);

  auto contents = rec::decode_checkpoint(bytes, "x");
  auto without = contents;
  std::erase_if(without.arrays, [](const auto& a) { return a.name == "last_layernorm.bias"; });
  EXPECT_NE(error_of(rec::encode_checkpoint(without)).find("'last_layernorm.bias' is missing"), std::string::npos);

  auto misshapen = contents;
  for (auto& a : misshapen.arrays)
    if (a.name == "pos_emb.weight") a.shape = {50, 31};
  EXPECT_NE(error_of(rec::encode_checkpoint(misshapen)).find("'pos_emb.weight' has shape [50, 31], expected [31, 50]"),
            std::string::npos);

  auto corrupt = contents;  // changed weights: the stored probes no longer hold
  for (auto& a : corrupt.arrays)
    if (a.name == "last_layernorm.weight") a.values[3] += 5;
  EXPECT_NE(error_of(rec::encode_checkpoint(corrupt)).find("self-test failed"), std::string::npos);

  // Another item map: refused.
  data::Dataset other = data::synthesize(mini_options());
  auto ids = other.item_ids();
  std::swap(ids[0].second, ids[1].second);
  other.set_item_ids(ids);
  try {
    rec::Recommender::load(path, other);
    ADD_FAILURE() << "loaded with another item map";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another item map"), std::string::npos);
  }
}

TEST(RecTrain, ResumesAnInterruptedRun) {
  test::TempDir dir;
  auto options = quick_options(8);
  options.eval_every = 4;
  auto straight = rec::train(mini(), options, dir / "straight.ckpt");

  auto interrupted = options;
  interrupted.on_epoch = [](const rec::EpochReport& r) { return r.epoch < 3; };  // "killed" after epoch 3
  auto first = rec::train(mini(), interrupted, dir / "resumed.ckpt");
  EXPECT_EQ(first.last_epoch, 3);
  auto resumed_options = options;
  resumed_options.resume = true;
  auto second = rec::train(mini(), resumed_options, dir / "resumed.ckpt");
  EXPECT_EQ(second.first_epoch, 4);
  EXPECT_EQ(second.epochs_run, 5);
  EXPECT_EQ(second.last_epoch, 8);
  EXPECT_NEAR(second.final_loss, straight.final_loss, 1e-4);
  EXPECT_NEAR(second.best_ndcg10, straight.best_ndcg10, 1e-4);

  auto a = rec::Recommender::load(dir / "straight.ckpt", mini());
  auto b = rec::Recommender::load(dir / "resumed.ckpt", mini());
  auto input = rec::test_cases(mini())[0].before;
  auto ra = a->recommend(input, 10), rb = b->recommend(input, 10);
  ASSERT_EQ(ra.size(), rb.size());
  for (std::size_t i = 0; i < ra.size(); ++i) EXPECT_NEAR(ra[i].score, rb[i].score, 1e-3);

  // Nothing left to do: a resumed run at its last epoch trains nothing.
  auto done = rec::train(mini(), resumed_options, dir / "resumed.ckpt");
  EXPECT_EQ(done.epochs_run, 0);

  // Another objective: refused, since Adam's state and the weights belong to the other loss.
  auto softmax_options = resumed_options;
  softmax_options.loss = rec::Loss::kSoftmax;
  softmax_options.epochs = 9;
  try {
    rec::train(mini(), softmax_options, dir / "resumed.ckpt");
    ADD_FAILURE() << "resumed with another loss";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trained with loss bce, the options say softmax"), std::string::npos)
        << e.what();
  }

  // Other data: refused.
  data::SynthOptions small = mini_options();
  small.n_users = 20;
  data::Dataset other = data::synthesize(small);
  try {
    rec::train(other, resumed_options, dir / "resumed.ckpt");
    ADD_FAILURE() << "resumed on other data";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other data"), std::string::npos) << e.what();
  }
}

//! pwab's default recipe (softmax over every candidate, validation over every candidate) learns the companion
//! transitions in a tenth of the epochs the original recipe needs, and beats it on held-out purchases.
TEST(RecTrain, DefaultRecipeLearnsTransitionsFaster) {
  test::TempDir dir;
  rec::TrainOptions o;
  o.progress = false;
  o.num_threads = 1;
  ASSERT_EQ(o.loss, rec::Loss::kSoftmax);
  auto report = rec::train(mini(), o, dir / "softmax.ckpt");
  EXPECT_EQ(report.epochs_run, o.epochs);
  EXPECT_LT(report.final_loss, 0.9 * report.first_loss) << report.first_loss << " -> " << report.final_loss;
  EXPECT_GT(report.best_epoch, 0);
  auto model = rec::Recommender::load(dir / "softmax.ckpt", mini());
  auto r = rec::evaluate_held_out(*model, mini());
  auto original = rec::evaluate_held_out(*rec::Recommender::load(trained().checkpoint, mini()), mini());
  std::printf("[rec] mini, default recipe: %d epochs in %.1f s, best epoch %d; HR@10 %.3f (%zu distinct items); "
              "original recipe, %d epochs: %.3f; most-popular %.3f\n",
              o.epochs, report.seconds, report.best_epoch, r.model.hr, r.model.distinct_items, Trained::kEpochs,
              original.model.hr, r.popular.hr);
  EXPECT_GT(r.model.hr, 1.5 * r.popular.hr);
  EXPECT_GE(r.model.hr, original.model.hr);
}

// --hold-out-train: the model learns from history behaviours only, so the train split's purchases are as unseen as
// the test split's. The model trained on them has them by heart (a higher hit rate on them than on test
// purchases); the one that held them out does not, which is what makes its rewards on train tasks honest.
TEST(RecTrain, HoldOutTrainLeavesTheTrainPurchasesUnseen) {
  test::TempDir dir;
  rec::TrainOptions o;
  o.progress = false;
  o.num_threads = 1;
  auto full = rec::train(mini(), o, dir / "full.ckpt");
  o.hold_out_train = true;
  auto held = rec::train(mini(), o, dir / "held.ckpt");

  // Exactly the history behaviours were learnt from: each user's, less the last (validation), as pairs.
  std::size_t positions = 0, users = 0;
  for (const auto& user : mini().users()) {
    std::size_t n = 0;
    for (const auto& b : user.behaviours) n += b.split == data::Split::kHistory;
    if (n < 2) continue;
    ++users;
    positions += (n >= 3 ? n - 1 : n) - 1;
  }
  EXPECT_EQ(held.n_train_users, users);
  EXPECT_EQ(held.n_train_positions, positions);
  EXPECT_GT(full.n_train_positions, held.n_train_positions);
  auto meta = [&](const char* file) {
    return nlohmann::json::parse(rec::decode_checkpoint(read_file(dir / file), file).meta_json)["training"]["held_out"];
  };
  EXPECT_EQ(meta("held.ckpt"), nlohmann::json::array({"test", "train"}));
  EXPECT_EQ(meta("full.ckpt"), nlohmann::json::array({"test"}));

  // Hit rate on the train split's purchases, each after everything the user bought before it.
  auto train_hit_rate = [&](const char* file) {
    auto model = rec::Recommender::load(dir / file, mini());
    int cases = 0, hits = 0;
    for (const auto& user : mini().users()) {
      std::vector<std::string> before;
      for (const auto& b : user.behaviours) {
        if (b.split == data::Split::kTest) continue;
        const std::string& asin = mini().product(b.product).parent_asin;
        if (b.split == data::Split::kTrain && !before.empty()) {
          ++cases;
          for (const auto& r : model->recommend(before, 10)) hits += r.asin == asin;
        }
        before.push_back(asin);
      }
    }
    EXPECT_GT(cases, 50);
    return static_cast<double>(hits) / std::max(1, cases);
  };
  const double seen = train_hit_rate("full.ckpt"), unseen = train_hit_rate("held.ckpt");
  const double test_hr = rec::evaluate_held_out(*rec::Recommender::load(dir / "full.ckpt", mini()), mini()).model.hr;
  std::printf("[rec] mini, train-split purchases HR@10: %.3f learnt from them, %.3f held out (test purchases: %.3f)\n",
              seen, unseen, test_hr);
  EXPECT_GT(seen, 1.5 * test_hr) << "the model trained on the train purchases should have them by heart";
  EXPECT_LT(unseen, 0.5 * seen) << "the held-out model should not have the train purchases by heart";
}

TEST(RecTrain, BadOptionsAreUsageErrors) {
  test::TempDir dir;
  auto o = quick_options(1);
  o.batch_size = 0;
  EXPECT_THROW(rec::train(mini(), o, dir / "x"), UsageError);
  o = quick_options(1);
  o.shape.heads = 3;
  EXPECT_THROW(rec::train(mini(), o, dir / "x"), UsageError);
  EXPECT_EQ(rec::parse_loss("softmax"), rec::Loss::kSoftmax);
  EXPECT_EQ(rec::parse_loss("bce"), rec::Loss::kBinary);
  EXPECT_THROW(rec::parse_loss("mse"), UsageError);
  EXPECT_THROW(rec::train(data::Dataset{}, quick_options(1), dir / "x"), Error);
}
