// The function classifier: accuracy on the mini synthetic dataset's test split, its cache, determinism, and the
// keyword fallback for a dataset without train tasks.
#include "agents/function_classifier.h"

#include <gtest/gtest.h>

#include <iostream>

#include "core/error.h"
#include "core/sys.h"
#include "data/synth.h"
#include "env/tools.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace pwab::agents {
namespace {

const data::Dataset& mini() {
  static const data::Dataset ds = data::synthesize(data::SynthOptions{});
  return ds;
}

std::size_t n_files(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(FunctionClassifier, AccurateOnTheMiniTestSplit) {
  pwab::test::TempDir cache;
  Stopwatch watch;
  auto c = FunctionClassifier::open_or_train(mini(), cache.path());
  double seconds = watch.seconds();
  double test_acc = c->accuracy(mini().tasks(data::Split::kTest));
  double train_acc = c->accuracy(mini().tasks(data::Split::kTrain));
  std::cout << "[ classifier ] " << c->description() << ": accuracy " << test_acc << " on "
            << mini().tasks(data::Split::kTest).size() << " test tasks, " << train_acc << " on train; trained in "
            << seconds << " s\n";
  EXPECT_GE(test_acc, 0.95);
  EXPECT_TRUE(c->description().starts_with("fasttext ")) << c->description();
  auto p = c->predict(mini().tasks(data::Split::kTest)[0].instruction);
  EXPECT_TRUE(env::task_type_of_function(p.function).has_value()) << p.function;
  EXPECT_GT(p.probability, 0.5);
  EXPECT_LE(p.probability, 1.0 + 1e-6);
}

TEST(FunctionClassifier, CachedAndDeterministic) {
  pwab::test::TempDir cache;
  auto a = FunctionClassifier::open_or_train(mini(), cache.path());
  EXPECT_EQ(n_files(cache / "function-classifier"), 1u);  // no temporary files left
  auto b = FunctionClassifier::open_or_train(mini(), cache.path());
  EXPECT_EQ(a->description(), b->description());
  // Training again from scratch gives the same bytes (one thread, fixed seed).
  pwab::test::TempDir other;
  auto c = FunctionClassifier::train(function_examples(mini(), data::Split::kTrain), {}, other / "m.bin");
  EXPECT_EQ(c->description(), a->description());
  // Other options are another cache entry.
  FunctionClassifierOptions o;
  o.epochs = 5;
  auto d = FunctionClassifier::open_or_train(mini(), cache.path(), o);
  EXPECT_NE(d->description(), a->description());
  EXPECT_EQ(n_files(cache / "function-classifier"), 2u);
}

TEST(FunctionClassifier, KeywordRulesWithoutATrainSplit) {
  data::Dataset ds;  // no tasks at all
  pwab::test::TempDir cache;
  auto c = FunctionClassifier::open_or_train(ds, cache.path());
  EXPECT_EQ(c->description(), "keyword rules");
  EXPECT_FALSE(fs::exists(cache / "function-classifier"));
  EXPECT_EQ(c->predict("Please post a review of my blender.").function, env::kAddReview);
  EXPECT_EQ(c->predict("Can you recommend something for the gym?").function, env::kRecommend);
  EXPECT_EQ(c->predict("I need black running shoes in size 9.").function, env::kSearch);
  // On the mini test split the rules are a usable fallback, well below the classifier.
  double acc = c->accuracy(mini().tasks(data::Split::kTest));
  std::cout << "[ classifier ] keyword rules: accuracy " << acc << " on the mini test split\n";
  EXPECT_GT(acc, 0.6);
}

TEST(FunctionClassifier, RefusesBadTrainingData) {
  pwab::test::TempDir dir;
  EXPECT_THROW(FunctionClassifier::train({}, {}, dir / "a.bin"), UsageError);
  EXPECT_THROW(FunctionClassifier::train({{"find me shoes", "buy_now"}}, {}, dir / "b.bin"), UsageError);
  EXPECT_THROW(FunctionClassifier::load(dir / "missing.bin"), Error);
  pwab::test::write_text(dir / "junk.bin", "junk");
  EXPECT_THROW(FunctionClassifier::load(dir / "junk.bin"), Error);
}

}  // namespace
}  // namespace pwab::agents
