// The fastText embedder on the mini synthetic dataset's own text: training is deterministic and cached, vectors
// are normalized and thread-safe, related texts score higher than unrelated ones, and bad files are refused.
#include "embed/fasttext_embedder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/sys.h"
#include "data/synth.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace pwab::embed {
namespace {

const data::Dataset& mini() {
  static const data::Dataset ds = data::synthesize(data::SynthOptions{});
  return ds;
}

//! One model trained once for the tests that only read it.
struct Trained {
  test::TempDir dir;
  fs::path file = dir / "model.bin";
  double seconds = 0;
  std::unique_ptr<FastTextEmbedder> model;
  Trained() {
    Stopwatch watch;
    train_fasttext_embedder(dataset_corpus(mini()), FastTextTrainOptions{}, file);
    seconds = watch.seconds();
    model = FastTextEmbedder::load(file);
  }
};
Trained& trained() {
  static Trained t;
  return t;
}

TEST(FastTextNormalize, LowerCaseWordRuns) {
  EXPECT_EQ(fasttext_normalize("Hi there! I'm looking for a USB-C cable, $12.99."), "hi there i m looking for a usb c cable 12 99");
  EXPECT_EQ(fasttext_normalize("  ...  "), "");
  EXPECT_EQ(fasttext_normalize("Café Crème"), "café crème");  // non-ASCII bytes stay inside words
}

TEST(FastTextCorpus, DeduplicatedAndWithoutTestReviews) {
  auto corpus = dataset_corpus(mini());
  std::set<std::string> unique(corpus.begin(), corpus.end());
  EXPECT_EQ(unique.size(), corpus.size());
  // No test behaviour's review text is in the corpus (unless the same text also occurs outside the test split).
  std::set<std::string> other;
  for (const auto& u : mini().users())
    for (const auto& b : u.behaviours)
      if (b.split != data::Split::kTest) other.insert(b.review.text);
  for (const auto& task : mini().tasks(data::Split::kTest))
    if (!other.count(task.target_review.text)) {
      EXPECT_FALSE(unique.count(task.target_review.text)) << task.target_review.text;
    }
  EXPECT_TRUE(unique.count(mini().tasks(data::Split::kTest)[0].instruction));
}

TEST(FastTextEmbedder, TrainsFastAndEmbedsNormalized) {
  auto& t = trained();
  std::cout << "[ fastText ] trained on the mini dataset in " << t.seconds << " s ("
            << fs::file_size(t.file) / 1024 << " KiB)\n";
  EXPECT_LT(t.seconds, 20.0);
  EXPECT_EQ(t.model->dim(), 100u);
  EXPECT_TRUE(t.model->name().starts_with("fasttext-sif-v1/100/")) << t.model->name();
  EXPECT_EQ(t.model->name().size(), std::string("fasttext-sif-v1/100/").size() + 16);
  auto mean = FastTextEmbedder::load(t.file, FastTextPooling::kMean);
  EXPECT_EQ(mean->name(), "fasttext-v1/100/" + t.model->name().substr(20));
  for (const FastTextEmbedder* e : {t.model.get(), mean.get()}) {
    auto v = e->embed_one("Wireless earbuds with great battery life");
    EXPECT_NEAR(dot(v, v), 1.0, 1e-4);
    auto zero = e->embed_one(" !? ");
    EXPECT_EQ(dot(zero, zero), 0.0);
    // Without subwords a word never seen in training has no vector.
    EXPECT_EQ(dot(e->embed_one("zzqxearbudsy"), e->embed_one("zzqxearbudsy")), 0.0);
  }
  EXPECT_EQ(parse_fasttext_pooling("mean"), FastTextPooling::kMean);
  EXPECT_EQ(parse_fasttext_pooling("sif"), FastTextPooling::kSif);
  EXPECT_FALSE(parse_fasttext_pooling("max"));
}

TEST(FastTextEmbedder, SubwordsGiveUnseenWordsAVector) {
  test::TempDir dir;
  FastTextTrainOptions o;
  o.epochs = 1;
  o.min_ngram = 3;
  o.max_ngram = 4;
  o.buckets = 2000;
  std::vector<std::string> corpus = dataset_corpus(mini());
  corpus.resize(500);
  train_fasttext_embedder(corpus, o, dir / "sub.bin");
  auto e = FastTextEmbedder::load(dir / "sub.bin");
  auto unseen = e->embed_one("zzqxearbudsy");
  EXPECT_NEAR(dot(unseen, unseen), 1.0, 1e-4);
}

//! Same-category reviews vs others: SIF pooling tells them apart far better than the plain mean.
TEST(FastTextEmbedder, SifSeparatesCategoriesBetterThanMean) {
  auto& t = trained();
  auto mean = FastTextEmbedder::load(t.file, FastTextPooling::kMean);
  std::vector<std::string> texts, cats;
  for (const auto& u : mini().users())
    for (const auto& b : u.behaviours)
      if (b.split != data::Split::kTest) {
        texts.push_back(b.review.text);
        cats.push_back(mini().product(b.product).main_category);
      }
  auto auc = [&](const Embedder& e) {
    auto v = e.embed(texts);
    long wins = 0, total = 0;
    for (std::size_t i = 0; i + 2 < texts.size() && total < 4000; i += 3) {
      std::size_t j = i + 1, k = i + 2;
      bool sj = cats[i] == cats[j], sk = cats[i] == cats[k];
      if (sj == sk) continue;
      double dj = dot(v[i], v[j]), dk = dot(v[i], v[k]);
      wins += sj ? dj > dk : dk > dj;
      ++total;
    }
    return static_cast<double>(wins) / static_cast<double>(total);
  };
  double sif = auc(*t.model), plain = auc(*mean);
  std::cout << "[ fastText ] same-category review pairs ranked first: SIF " << sif << ", mean " << plain << "\n";
  EXPECT_GT(sif, plain + 0.05);
  EXPECT_GT(sif, 0.7);
}

TEST(FastTextEmbedder, RelatedTextsScoreHigher) {
  const auto& e = *trained().model;
  const std::string battery = "The battery life is excellent and the charging speed is great.";
  double same = e.similarity(battery, "Really happy with the charging speed, and the battery life is solid.");
  double other = e.similarity(battery, "The flavor is smooth and the aroma of this coffee is great.");
  EXPECT_GT(same, other + 0.1) << same << " vs " << other;
  EXPECT_NEAR(e.similarity("The sound quality is excellent.", "the SOUND quality is excellent"), 1.0, 1e-5);
}

TEST(FastTextEmbedder, DeterministicWithOneThread) {
  test::TempDir dir;
  FastTextTrainOptions o;
  o.epochs = 1;
  std::vector<std::string> corpus = dataset_corpus(mini());
  corpus.resize(800);
  train_fasttext_embedder(corpus, o, dir / "a.bin");
  train_fasttext_embedder(corpus, o, dir / "b.bin");
  EXPECT_EQ(test::read_text(dir / "a.bin"), test::read_text(dir / "b.bin"));
  EXPECT_EQ(FastTextEmbedder::load(dir / "a.bin")->name(), FastTextEmbedder::load(dir / "b.bin")->name());
  EXPECT_EQ(FastTextEmbedder::load(dir / "a.bin")->embed_one("red kettle"), FastTextEmbedder::load(dir / "b.bin")->embed_one("red kettle"));
}

TEST(FastTextEmbedder, ThreadSafe) {
  const auto& e = *trained().model;
  std::vector<std::string> texts;
  for (const auto& t : mini().tasks(data::Split::kTrain)) texts.push_back(t.instruction);
  auto serial = e.embed(texts);
  std::vector<std::vector<std::vector<float>>> parallel(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { parallel[i] = e.embed(texts); });
  for (auto& th : threads) th.join();
  for (const auto& p : parallel) EXPECT_EQ(p, serial);
}

TEST(FastTextEmbedder, CachedByDatasetContent) {
  test::TempDir cache;
  FastTextTrainOptions o;
  o.epochs = 1;
  Stopwatch first;
  auto a = open_or_train_fasttext_embedder(mini(), cache.path(), o);
  double train_seconds = first.seconds();
  std::size_t n_files = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(cache / "fasttext-embedder")) ++n_files;
  EXPECT_EQ(n_files, 1u);  // no temporary files left behind
  Stopwatch second;
  auto b = open_or_train_fasttext_embedder(mini(), cache.path(), o);
  std::cout << "[ fastText ] cached: corpus, key and load in " << second.seconds() << " s\n";
  EXPECT_EQ(a->name(), b->name());
  EXPECT_LT(second.seconds(), train_seconds);
  // Other options are another cache entry.
  o.dim = 16;
  auto c = open_or_train_fasttext_embedder(mini(), cache.path(), o);
  EXPECT_EQ(c->dim(), 16u);
  EXPECT_NE(c->name(), a->name());
}

TEST(FastTextEmbedder, RefusesBadFilesAndOptions) {
  test::TempDir dir;
  EXPECT_THROW(FastTextEmbedder::load(dir / "missing.bin"), Error);
  test::write_text(dir / "junk.bin", "not a model");
  EXPECT_THROW(FastTextEmbedder::load(dir / "junk.bin"), Error);
  FastTextTrainOptions o;
  o.dim = 0;
  EXPECT_THROW(train_fasttext_embedder({"some words here"}, o, dir / "x.bin"), UsageError);
  EXPECT_THROW(train_fasttext_embedder({"", " ! "}, FastTextTrainOptions{}, dir / "y.bin"), UsageError);
}

}  // namespace
}  // namespace pwab::embed
