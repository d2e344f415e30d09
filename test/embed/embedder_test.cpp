#include "embed/embedder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace pwab::embed {

TEST(HashingEmbedder, NormalizedAndDeterministic) {
  HashingEmbedder e;
  auto a = e.embed_one("Great sound and the battery lasts forever.");
  auto b = HashingEmbedder().embed_one("Great sound and the battery lasts forever.");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 384u);
  EXPECT_NEAR(dot(a, a), 1.0, 1e-5);
  EXPECT_EQ(e.name(), "hashing-v1/384");
}

TEST(HashingEmbedder, SimilarTextsScoreHigher) {
  HashingEmbedder e;
  double same = e.similarity("The battery life is excellent.", "the battery life is EXCELLENT");
  double close = e.similarity("The battery life is excellent and the sound is great.",
                              "Excellent battery life, great sound.");
  double far = e.similarity("The battery life is excellent.", "This coffee tastes bitter and burnt.");
  EXPECT_NEAR(same, 1.0, 1e-5);
  EXPECT_GT(close, far + 0.2);
  EXPECT_LT(std::abs(far), 0.3);
}

TEST(HashingEmbedder, EmptyTextIsAZeroVector) {
  HashingEmbedder e;
  auto v = e.embed_one("");
  EXPECT_EQ(dot(v, v), 0.0);
  EXPECT_EQ(e.similarity("", "anything"), 0.0);
}

TEST(HashingEmbedder, SpecParsing) {
  EXPECT_EQ(make_embedder("hashing")->dim(), 384u);
  EXPECT_EQ(make_embedder("hashing:64")->name(), "hashing-v1/64");
  EXPECT_THROW(make_embedder("minilm"), UsageError);
  EXPECT_THROW(make_embedder("hashing:x"), UsageError);
}

}  // namespace pwab::embed
