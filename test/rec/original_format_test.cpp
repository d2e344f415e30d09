// The original PersonalWAB checkpoint format: a torch.save state_dict written by Python (fixture made by
// test/fixtures/rec/make_fixture.py), its forward pass, the ASIN contract of docs/decisions.md §2.3.2, and bad files.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

#include "core/error.h"
#include "rec/recommender.h"
#include "rec/state_dict_pickle.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace pwab;
using pwab::rec::Recommender;

namespace {

fs::path tiny_pth() { return test::fixture("rec/sasrec_tiny.pth"); }
nlohmann::json expected() { return nlohmann::json::parse(test::read_text(test::fixture("rec/expected.json"))); }

std::string asin_of(int64_t id) { return "ASIN" + std::to_string(1000 + id); }

//! 40 products; item ids follow the fixture (ASIN100<id> ↔ id), listed in a shuffled order like item_ids.json.
data::Dataset fixture_dataset(bool with_item_ids = true) {
  data::Dataset ds;
  for (int64_t id = 1; id <= 40; ++id) {
    data::Product p;
    p.parent_asin = asin_of(id);
    ds.add_product(p);
  }
  if (with_item_ids) {
    std::vector<std::pair<std::string, int64_t>> ids;
    for (int64_t id = 40; id >= 1; --id) ids.emplace_back(asin_of(id), id);
    ds.set_item_ids(ids);
  }
  return ds;
}

std::vector<std::string> asins(const std::vector<int64_t>& ids) {
  std::vector<std::string> out;
  for (int64_t id : ids) out.push_back(asin_of(id));
  return out;
}

std::string error_of(const fs::path& path, const data::Dataset& ds) {
  try {
    Recommender::load(path, ds);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RecOriginalFormat, ForwardMatchesPyTorch) {
  auto ds = fixture_dataset();
  auto rec = Recommender::load(tiny_pth(), ds);
  EXPECT_EQ(rec->n_candidates(), 40u);
  EXPECT_EQ(rec->shape().maxlen, 30);
  EXPECT_EQ(rec->shape().hidden, 50);
  EXPECT_EQ(rec->shape().blocks, 2);
  for (const auto& probe : expected()["probes"]) {
    auto input = probe["input_ids"].get<std::vector<int64_t>>();
    auto logits = probe["logits"].get<std::vector<double>>();
    auto all = rec->recommend_ids(input, 40);
    ASSERT_EQ(all.size(), 40u);
    for (const auto& [id, score] : all) EXPECT_NEAR(score, logits[id - 1], 1e-4) << "item " << id;
    auto top = rec->recommend(asins(input), 10);
    auto top_ids = probe["top10_ids"].get<std::vector<int64_t>>();
    auto top_scores = probe["top10_scores"].get<std::vector<double>>();
    ASSERT_EQ(top.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(top[i].asin, asin_of(top_ids[i])) << "rank " << i;
      EXPECT_NEAR(top[i].score, top_scores[i], 1e-4);
    }
  }
}

TEST(RecOriginalFormat, AsinContract) {
  auto ds = fixture_dataset();
  auto rec = Recommender::load(tiny_pth(), ds);
  auto probes = expected()["probes"];
  // Unknown ASINs are dropped; the rest keep their order.
  auto with_unknown = rec->recommend({"nope", asin_of(3), "B000000000", asin_of(17), asin_of(9), ""}, 10);
  auto plain = rec->recommend(asins({3, 17, 9}), 10);
  ASSERT_EQ(with_unknown.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(with_unknown[i].asin, plain[i].asin);
    EXPECT_EQ(with_unknown[i].score, plain[i].score);
    EXPECT_EQ(plain[i].asin, asin_of(probes[1]["top10_ids"][i].get<int64_t>()));
  }
  // Empty after mapping: empty result.
  EXPECT_TRUE(rec->recommend({}, 10).empty());
  EXPECT_TRUE(rec->recommend({"nope", "also unknown"}, 10).empty());
  EXPECT_TRUE(rec->recommend(asins({3}), 0).empty());
  // Order matters.
  auto reversed = rec->recommend(asins({9, 17, 3}), 10);
  EXPECT_NE(reversed[0].score, plain[0].score);
  // More than 30: the last 30 count (probe 4 has 36 inputs).
  auto long_input = probes[4]["input_ids"].get<std::vector<int64_t>>();
  ASSERT_GT(long_input.size(), 30u);
  std::vector<int64_t> last30(long_input.end() - 30, long_input.end());
  auto a = rec->recommend(asins(long_input), 10), b = rec->recommend(asins(last30), 10);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(a[i].score, b[i].score);
  // Duplicates are kept: [5, 5] is not [5].
  EXPECT_NE(rec->recommend(asins({5, 5}), 1)[0].score, rec->recommend(asins({5}), 1)[0].score);
  // k larger than the candidates: every candidate once; input items are not excluded.
  auto everything = rec->recommend(asins({5}), 100);
  EXPECT_EQ(everything.size(), 40u);
  EXPECT_TRUE(std::any_of(everything.begin(), everything.end(), [](const auto& r) { return r.asin == asin_of(5); }));
}

TEST(RecOriginalFormat, CatalogueOrderWithoutItemIds) {
  auto ds = fixture_dataset(false);  // ids 1..N in catalogue order = the fixture's ids
  auto rec = Recommender::load(tiny_pth(), ds);
  auto probe = expected()["probes"][2];
  auto top = rec->recommend(asins(probe["input_ids"].get<std::vector<int64_t>>()), 3);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(top[i].asin, asin_of(probe["top10_ids"][i].get<int64_t>()));
}

TEST(RecOriginalFormat, ConcurrentCallsAgree) {
  auto ds = fixture_dataset();
  auto rec = Recommender::load(tiny_pth(), ds);
  auto reference = rec->recommend(asins({40, 1, 1, 22, 7, 13, 2}), 10);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto got = rec->recommend(asins({40, 1, 1, 22, 7, 13, 2}), 10);
        for (std::size_t j = 0; j < got.size(); ++j)
          if (got[j].asin != reference[j].asin || got[j].score != reference[j].score) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(RecOriginalFormat, ItemMapBeyondTheTable) {
  auto ds = fixture_dataset();
  auto ids = ds.item_ids();
  ids[0].second = 104032;  // an id of the real 1000_ids.json: the tiny table has 41 rows
  ds.set_item_ids(ids);
  std::string error = error_of(tiny_pth(), ds);
  EXPECT_NE(error.find("item_emb.weight has 41 rows"), std::string::npos) << error;
  EXPECT_NE(error.find("104032"), std::string::npos) << error;
}

TEST(RecOriginalFormat, BadFilesGiveClearErrors) {
  test::TempDir dir;
  auto ds = fixture_dataset();
  EXPECT_NE(error_of(dir / "missing.pth", ds).find("cannot open"), std::string::npos);

  test::write_text(dir / "text.pth", "hello, not a model\n");
  EXPECT_NE(error_of(dir / "text.pth", ds).find("not a SASRec checkpoint"), std::string::npos);
  test::write_text(dir / "empty.pth", "");
  EXPECT_NE(error_of(dir / "empty.pth", ds).find("not a SASRec checkpoint"), std::string::npos);
  test::write_text(dir / "legacy.pth", std::string("\x80\x02\x8a\x0a", 4) + "legacy pickle follows.");
  EXPECT_NE(error_of(dir / "legacy.pth", ds).find("legacy"), std::string::npos);

  std::string bytes = test::read_text(tiny_pth());
  test::write_text(dir / "half.pth", std::string_view(bytes).substr(0, bytes.size() / 2));
  std::string half = error_of(dir / "half.pth", ds);
  EXPECT_NE(half.find("half.pth"), std::string::npos) << half;
  EXPECT_FALSE(half.empty());
}

TEST(RecStateDictPickle, RejectsWhatIsNotAStateDict) {
  auto error_of_pickle = [](std::string_view bytes) -> std::string {
    try {
      rec::parse_state_dict_pickle(bytes, "x.pkl");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of_pickle(std::string_view("\x80\x02]q\x00.", 6)).find("not a state_dict"), std::string::npos);
  EXPECT_NE(error_of_pickle("\x80\x02").find("truncated"), std::string::npos);
  EXPECT_NE(error_of_pickle("").find("truncated"), std::string::npos);
  EXPECT_NE(error_of_pickle("\x80\x02\xff").find("unsupported pickle opcode 0xff"), std::string::npos);
  EXPECT_NE(error_of_pickle("\x80\x02t.").find("MARK"), std::string::npos);
  EXPECT_NE(error_of_pickle("\x80\x02h\x05.").find("memo"), std::string::npos);
  // {"a": 1}: a dict, but its value is not a tensor.
  EXPECT_NE(error_of_pickle(std::string_view("\x80\x02}X\x01\x00\x00\x00" "aK\x01s.", 13)).find("'a' is not a tensor"),
            std::string::npos);
}

TEST(RecStateDictPickle, ReadsTheFixturesTensorList) {
  // The real pickle, read out of the zip by hand: torch writes sizes after the data, so they come from the
  // central directory entry (the name's last occurrence), which also points at the local header.
  std::string bytes = test::read_text(tiny_pth());
  const std::string name = "sasrec_tiny/data.pkl";
  auto at = bytes.rfind(name);
  ASSERT_NE(at, std::string::npos);
  auto u16 = [&](std::size_t p) -> std::size_t { return static_cast<uint8_t>(bytes[p]) | static_cast<uint8_t>(bytes[p + 1]) << 8; };
  auto u32 = [&](std::size_t p) { return u16(p) | u16(p + 2) << 16; };
  std::size_t central = at - 46;
  ASSERT_EQ(bytes.substr(central, 4), "PK\x01\x02");
  std::size_t size = u32(central + 20), local = u32(central + 42);
  std::size_t data = local + 30 + u16(local + 26) + u16(local + 28);
  auto tensors = rec::parse_state_dict_pickle(std::string_view(bytes).substr(data, size), "data.pkl");
  ASSERT_EQ(tensors.size(), 2u + 2 * 12 + 2);
  EXPECT_EQ(tensors[0].name, "item_emb.weight");
  EXPECT_EQ(tensors[0].shape, (std::vector<int64_t>{41, 50}));
  EXPECT_EQ(tensors[0].stride, (std::vector<int64_t>{50, 1}));
  EXPECT_EQ(tensors[0].dtype, rec::StorageDtype::kFloat32);
  EXPECT_EQ(tensors[0].storage_numel, 2050);
  EXPECT_EQ(tensors[6].name, "attention_layers.0.in_proj_weight");  // the state_dict groups each ModuleList
  EXPECT_EQ(tensors.back().name, "last_layernorm.bias");
}
