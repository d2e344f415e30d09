// Serving without libtorch: this binary links pwab_rec_core only, so it proves that Recommender::load and
// recommend() need no torch. The original-format fixture and a pwab checkpoint made here from the fixture's
// weights (its probes are PyTorch's numbers) give the scores PyTorch computed; damaged checkpoints are refused
// with the same messages as before.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "rec/checkpoint_file.h"
#include "rec/item_map.h"
#include "rec/recommender.h"
#include "rec/weights.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace pwab;
using pwab::rec::Recommender;

namespace {

const fs::path& fixture_pth() {
  static const fs::path path = test::fixture("rec/sasrec_tiny.pth");
  return path;
}
const nlohmann::json& fixture_expected() {
  static const nlohmann::json expected = nlohmann::json::parse(test::read_text(test::fixture("rec/expected.json")));
  return expected;
}

std::string fixture_asin(int64_t id) { return "ASIN" + std::to_string(1000 + id); }

//! The fixture's 40 items, ASIN100<id> ↔ id, with item_ids.json listing them in reverse.
const data::Dataset& fixture_products() {
  static const data::Dataset ds = [] {
    data::Dataset d;
    std::vector<std::pair<std::string, int64_t>> ids;
    for (int64_t id = 1; id <= 40; ++id) {
      data::Product product;
      product.parent_asin = fixture_asin(id);
      d.add_product(product);
      ids.emplace_back(fixture_asin(41 - id), 41 - id);
    }
    d.set_item_ids(ids);
    return d;
  }();
  return ds;
}

//! Every candidate's logit within 1e-4 of PyTorch's and the same top 10 ASINs, for each probe of expected.json.
void expect_pytorch_scores(const Recommender& rec) {
  for (const auto& probe : fixture_expected()["probes"]) {
    const auto input = probe["input_ids"].get<std::vector<int64_t>>();
    const auto logits = probe["logits"].get<std::vector<double>>();
    SCOPED_TRACE("probe of " + std::to_string(input.size()) + " items");
    auto scored = rec.recommend_ids(input, 40);
    ASSERT_EQ(scored.size(), 40u);
    for (const auto& [id, score] : scored) EXPECT_NEAR(score, logits[id - 1], 1e-4) << "item " << id;
    std::vector<std::string> asins;
    for (int64_t id : input) asins.push_back(fixture_asin(id));
    auto top = rec.recommend(asins, 10);
    ASSERT_EQ(top.size(), 10u);
    for (std::size_t rank = 0; rank < 10; ++rank)
      EXPECT_EQ(top[rank].asin, fixture_asin(probe["top10_ids"][rank].get<int64_t>())) << "rank " << rank;
  }
}

//! A pwab checkpoint holding the fixture's weights, as train() lays it out: the served arrays under their own
//! names, the latest epoch's under "latest/" (zeros here, so serving them would fail every check), and probes:
//! PyTorch's top 5 of each expected.json input.
rec::CheckpointContents fixture_checkpoint() {
  rec::CheckpointContents contents;
  for (auto& [name, array] : rec::read_torch_save_weights(fixture_pth())) {
    contents.arrays.push_back({std::string(rec::kLatestPrefix) + name, array.shape,
                               std::vector<float>(array.values.size(), 0.0f)});
    contents.arrays.push_back({name, array.shape, std::move(array.values)});
  }
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& probe : fixture_expected()["probes"]) {
    auto ids = probe["top10_ids"].get<std::vector<int64_t>>();
    auto scores = probe["top10_scores"].get<std::vector<double>>();
    probes.push_back({{"input_ids", probe["input_ids"]},
                      {"top_ids", std::vector<int64_t>(ids.begin(), ids.begin() + 5)},
                      {"top_scores", std::vector<double>(scores.begin(), scores.begin() + 5)}});
  }
  nlohmann::json meta = {
      {"config", {{"maxlen", 30}, {"hidden", 50}, {"blocks", 2}, {"heads", 2}, {"item_rows", 41}, {"dropout", 0.5}}},
      {"item_map", {{"fingerprint", rec::ItemMap::from_dataset(fixture_products()).fingerprint()}, {"size", 40}}},
      {"epoch", 9},
      {"best_epoch", 7},
      {"probes", probes}};
  contents.meta_json = meta.dump();
  return contents;
}

//! Loads `bytes` as a checkpoint file; returns the error text, or "" when it loads.
std::string load_error(const std::string& bytes, const data::Dataset& ds = fixture_products()) {
  test::TempDir dir;
  test::write_text(dir / "sasrec.ckpt", bytes);
  try {
    Recommender::load(dir / "sasrec.ckpt", ds);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

rec::NamedArray& array_named(rec::CheckpointContents& contents, std::string_view name) {
  for (auto& array : contents.arrays)
    if (array.name == name) return array;
  throw std::logic_error("no array " + std::string(name));
}

}  // namespace

TEST(RecCore, ServesTheOriginalPthAsPyTorchDoes) {
  auto rec = Recommender::load(fixture_pth(), fixture_products());
  EXPECT_EQ(rec->description(), "original PersonalWAB .pth");
  EXPECT_EQ(rec->n_candidates(), 40u);
  EXPECT_EQ(rec->shape().maxlen, 30);
  EXPECT_EQ(rec->shape().hidden, 50);
  EXPECT_EQ(rec->shape().blocks, 2);
  EXPECT_EQ(rec->shape().heads, 2);
  expect_pytorch_scores(*rec);
}

TEST(RecCore, ServesAPwabCheckpointAndChecksItsProbes) {
  test::TempDir dir;
  test::write_text(dir / "sasrec.ckpt", rec::encode_checkpoint(fixture_checkpoint()));
  auto rec = Recommender::load(dir / "sasrec.ckpt", fixture_products());
  EXPECT_EQ(rec->description(), "pwab checkpoint (epoch 7 of 9)");
  EXPECT_EQ(rec->item_id(fixture_asin(17)), 17);
  expect_pytorch_scores(*rec);
}

TEST(RecCore, DamagedPwabCheckpointsAreRefused) {
  const std::string good = rec::encode_checkpoint(fixture_checkpoint());
  ASSERT_EQ(load_error(good), "");
  EXPECT_TRUE(contains(load_error(good.substr(0, good.size() - 1000)), "truncated"));
  EXPECT_TRUE(contains(load_error(good.substr(0, 20)), "truncated"));

  auto without = fixture_checkpoint();
  std::erase_if(without.arrays, [](const auto& a) { return a.name == "last_layernorm.bias"; });
  std::string missing = load_error(rec::encode_checkpoint(without));
  EXPECT_TRUE(contains(missing, "tensor 'last_layernorm.bias' is missing")) << missing;

  auto misshapen = fixture_checkpoint();
  array_named(misshapen, "pos_emb.weight").shape = {50, 31};
  std::string shape = load_error(rec::encode_checkpoint(misshapen));
  EXPECT_TRUE(contains(shape, "tensor 'pos_emb.weight' has shape [50, 31], expected [31, 50]")) << shape;

  auto corrupt = fixture_checkpoint();  // changed weights: PyTorch's probe scores no longer hold
  array_named(corrupt, "last_layernorm.weight").values[3] += 5;
  std::string self_test = load_error(rec::encode_checkpoint(corrupt));
  EXPECT_TRUE(contains(self_test, "self-test failed")) << self_test;

  auto bad_probe = fixture_checkpoint();
  auto meta = nlohmann::json::parse(bad_probe.meta_json);
  meta["probes"][0]["input_ids"].push_back(4000);
  bad_probe.meta_json = meta.dump();
  std::string unknown = load_error(rec::encode_checkpoint(bad_probe));
  EXPECT_TRUE(contains(unknown, "a probe names an unknown item")) << unknown;

  auto no_config = fixture_checkpoint();
  meta = nlohmann::json::parse(no_config.meta_json);
  meta.erase("config");
  no_config.meta_json = meta.dump();
  std::string metadata = load_error(rec::encode_checkpoint(no_config));
  EXPECT_TRUE(contains(metadata, "corrupt checkpoint metadata")) << metadata;
}

TEST(RecCore, AnotherItemMapIsRefused) {
  const std::string good = rec::encode_checkpoint(fixture_checkpoint());
  data::Dataset swapped = fixture_products();
  auto ids = swapped.item_ids();
  std::swap(ids[0].second, ids[1].second);
  swapped.set_item_ids(ids);
  std::string fingerprint = load_error(good, swapped);
  EXPECT_TRUE(contains(fingerprint, "trained with another item map")) << fingerprint;

  // An id beyond the 41-row table: refused for both formats, before any weight is used.
  data::Dataset wide = fixture_products();
  ids = wide.item_ids();
  ids[0].second = 104032;
  wide.set_item_ids(ids);
  auto checkpoint = fixture_checkpoint();
  auto meta = nlohmann::json::parse(checkpoint.meta_json);
  meta["item_map"]["fingerprint"] = rec::ItemMap::from_dataset(wide).fingerprint();
  checkpoint.meta_json = meta.dump();
  for (const std::string& bytes : {rec::encode_checkpoint(checkpoint), test::read_text(fixture_pth())}) {
    std::string rows = load_error(bytes, wide);
    EXPECT_TRUE(contains(rows, "item_emb.weight has 41 rows, but the item map uses id 104032")) << rows;
  }
}

TEST(RecCore, FilesThatAreNoCheckpoint) {
  test::TempDir dir;
  try {
    Recommender::load(dir / "absent.pth", fixture_products());
    ADD_FAILURE() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "absent.pth: cannot open")) << e.what();
  }
  EXPECT_TRUE(contains(load_error("hello, not a model\n"), "not a SASRec checkpoint"));
  EXPECT_TRUE(contains(load_error(std::string("\x80\x02\x8a\x0a", 4) + "legacy pickle follows."), "legacy"));
  const std::string pth = test::read_text(fixture_pth());
  std::string half = load_error(pth.substr(0, pth.size() / 2));
  EXPECT_TRUE(contains(half, "sasrec.ckpt: not a zip archive")) << half;
}
