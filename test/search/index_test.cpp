// The index: build, open with its self-check, the cache, ranking and ties, and concurrent search.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "data/synth.h"
#include "search/search.h"
#include "support/test_support.h"

namespace pwab::search {
namespace {

data::Product product(std::string asin, std::string title, std::vector<std::string> features = {}) {
  data::Product p;
  p.parent_asin = std::move(asin);
  p.title = std::move(title);
  p.features = std::move(features);
  p.main_category = "Home";
  return p;
}

data::Dataset small_catalogue() {
  data::Dataset ds;
  // B2 is added before B1 with the same text otherwise: they must tie, and B1 must come first.
  ds.add_product(product("B2", "Red Electric Kettle", {"1.7 L", "fast boil"}));
  ds.add_product(product("B1", "Red Electric Kettle", {"1.7 L", "fast boil"}));
  ds.add_product(product("B3", "Stainless Steel Kettle for Gas Stoves", {"whistling"}));
  ds.add_product(product("B4", "Coffee Grinder", {"burr grinder with 18 settings"}));
  ds.add_product(product("B5", "Wireless Earbuds\u2122", {"Bluetooth 5.3", "noise cancelling"}));
  return ds;
}

std::vector<std::string> asins(const std::vector<Hit>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits) out.push_back(h.asin);
  return out;
}

TEST(Index, RanksAndBreaksTiesByAsin) {
  test::TempDir tmp;
  data::Dataset ds = small_catalogue();
  Index::build(ds, tmp / "idx");
  auto index = Index::open(tmp / "idx", catalogue_fingerprint(ds));
  EXPECT_EQ(index->size(), 5u);

  std::vector<Hit> hits = index->search("red kettle");
  ASSERT_EQ(asins(hits), (std::vector<std::string>{"B1", "B2", "B3"}));
  EXPECT_EQ(hits[0].score, hits[1].score);
  EXPECT_GT(hits[1].score, hits[2].score);
  EXPECT_EQ(asins(index->search("red", 2)), (std::vector<std::string>{"B1", "B2"}));
  EXPECT_EQ(index->search("kettles").size(), 3u);
  EXPECT_EQ(asins(index->search("earbuds\u2122 bluetooth")), (std::vector<std::string>{"B5"}));
  // The ASIN is part of the document text.
  EXPECT_EQ(asins(index->search("B4")), (std::vector<std::string>{"B4"}));
}

TEST(Index, EmptyAndUnknownQueriesGiveNoHits) {
  test::TempDir tmp;
  Index::build(small_catalogue(), tmp / "idx");
  auto index = Index::open(tmp / "idx");
  EXPECT_TRUE(index->search("").empty());
  EXPECT_TRUE(index->search("the of and").empty());
  EXPECT_TRUE(index->search("zyzzyva").empty());
  EXPECT_TRUE(index->search("---").empty());
  EXPECT_TRUE(index->search("kettle", 0).empty());
  EXPECT_TRUE(index->search("\xFF\xFE").empty());
  EXPECT_EQ(index->search(std::string(5000, 'x')).size(), 0u);
}

TEST(Index, RepeatedQueryTermsAreBoosted) {
  test::TempDir tmp;
  Index::build(small_catalogue(), tmp / "idx");
  auto index = Index::open(tmp / "idx");
  double once = index->search("grinder")[0].score;
  double twice = index->search("grinder grinder")[0].score;
  EXPECT_NEAR(twice, 2 * once, 1e-5);
}

TEST(Index, ReopenedIndexGivesTheSameResults) {
  test::TempDir tmp;
  data::Dataset ds = data::synthesize({.n_users = 10, .n_products = 300});
  auto built = Index::open_or_build(ds, tmp.path());
  EXPECT_EQ(built->dir(), tmp / catalogue_fingerprint(ds));
  auto reopened = Index::open(built->dir(), catalogue_fingerprint(ds));
  auto again = Index::open_or_build(ds, tmp.path());
  for (const auto& task : ds.tasks(data::Split::kTest)) {
    auto hits = built->search(task.instruction);
    auto hits2 = reopened->search(task.instruction);
    ASSERT_EQ(asins(hits), asins(hits2));
    for (std::size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i].score, hits2[i].score);
    EXPECT_EQ(asins(again->search(task.instruction)), asins(hits));
  }
}

TEST(Index, DetectsAStaleFingerprint) {
  test::TempDir tmp;
  data::Dataset ds = small_catalogue();
  Index::build(ds, tmp / "idx");
  try {
    Index::open(tmp / "idx", "0123456789abcdef");
    FAIL() << "expected a stale-index error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stale"), std::string::npos) << e.what();
  }
  // Changing one product's text changes the fingerprint, so open_or_build builds a new index.
  data::Dataset changed = small_catalogue();
  data::Dataset edited;
  for (auto p : changed.products()) {
    if (p.parent_asin == "B4") p.title = "Coffee Grinder, Conical Burr";
    edited.add_product(p);
  }
  EXPECT_NE(catalogue_fingerprint(ds), catalogue_fingerprint(edited));
  auto a = Index::open_or_build(ds, tmp.path());
  auto b = Index::open_or_build(edited, tmp.path());
  EXPECT_NE(a->dir(), b->dir());
  EXPECT_EQ(b->search("conical")[0].asin, "B4");
}

TEST(Index, DetectsCorruptionAndOldAnalyzers) {
  test::TempDir tmp;
  data::Dataset ds = small_catalogue();
  auto index = Index::open_or_build(ds, tmp.path());
  std::filesystem::path dir = index->dir();
  index.reset();
  std::string meta = test::read_text(dir / "meta.json");

  std::string bad_probe = meta;
  auto at = bad_probe.find("\"top_asin\": \"B");
  ASSERT_NE(at, std::string::npos);
  bad_probe.replace(at, 15, "\"top_asin\": \"X");
  test::write_text(dir / "meta.json", bad_probe);
  EXPECT_THROW(Index::open(dir), Error);

  std::string old_analyzer = meta;
  at = old_analyzer.find("lucene8-english/");
  old_analyzer.replace(at, 16, "lucene8-english-old/");
  test::write_text(dir / "meta.json", old_analyzer);
  try {
    Index::open(dir);
    FAIL() << "expected a stale-index error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("analyzer"), std::string::npos) << e.what();
  }
  // open_or_build repairs it.
  EXPECT_EQ(Index::open_or_build(ds, tmp.path())->search("grinder")[0].asin, "B4");

  std::filesystem::remove(dir / "meta.json");
  EXPECT_THROW(Index::open(dir), Error);
  EXPECT_THROW(Index::open(tmp / "nothing-here"), Error);
}

TEST(Index, ConcurrentSearchesAgree) {
  test::TempDir tmp;
  data::Dataset ds = data::synthesize({.n_users = 20, .n_products = 1000});
  auto index = Index::open_or_build(ds, tmp.path());
  std::vector<std::string> queries;
  for (auto split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : ds.tasks(split)) queries.push_back(t.instruction);
  std::vector<std::vector<Hit>> expected;
  for (const auto& q : queries) expected.push_back(index->search(q));

  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round) {
        for (std::size_t i = static_cast<std::size_t>(t); i < queries.size() + static_cast<std::size_t>(t); ++i) {
          std::size_t q = i % queries.size();
          auto hits = index->search(queries[q]);
          if (asins(hits) != asins(expected[q])) ++mismatches[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(Documents, TsvHasOneFlatLinePerProductInAsinOrder) {
  std::ostringstream out;
  write_documents_tsv(small_catalogue(), out);
  std::istringstream in(out.str());
  std::vector<std::string> ids;
  for (std::string line; std::getline(in, line);) {
    auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos);
    EXPECT_EQ(line.find('\t', tab + 1), std::string::npos);
    ids.push_back(line.substr(0, tab));
    EXPECT_NE(line.find("- Parent Asin: " + ids.back()), std::string::npos);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"B1", "B2", "B3", "B4", "B5"}));
}

}  // namespace
}  // namespace pwab::search
