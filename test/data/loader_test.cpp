// The loader on the hand-written fixture in the original layout (test/fixtures/data/original/README.md).
#include "data/loader.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_support.h"

namespace pwab::data {
namespace {

const char* kU1 = "AG1FIXTUREUSERONE00000000001";
const char* kU2 = "AG2FIXTUREUSERTWO00000000002";

Dataset load_fixture(Diagnostics& diag) { return load_dataset(test::fixture("data/original"), diag); }

TEST(Loader, ReadsEveryFileOfTheOriginalLayout) {
  Diagnostics diag;
  Dataset ds = load_fixture(diag);
  EXPECT_EQ(diag.n_errors(), 0u) << diag.first_error();
  EXPECT_EQ(diag.n_warnings(), 1u);  // user 3 has no "Focus Aspect"
  EXPECT_EQ(ds.products().size(), 6u);
  EXPECT_EQ(ds.users().size(), 3u);
  EXPECT_EQ(ds.tasks(Split::kTrain).size(), 2u);
  EXPECT_EQ(ds.tasks(Split::kTest).size(), 3u);
  EXPECT_EQ(ds.item_ids().size(), 5u);
  EXPECT_EQ(ds.item_ids()[0], (std::pair<std::string, int64_t>{"B0FIXTURE1", 1}));
}

TEST(Loader, KeepsOddTypedProductFieldsAsPythonWouldSeeThem) {
  Diagnostics diag;
  Dataset ds = load_fixture(diag);
  const Product& earbuds = ds.product(*ds.find_product("B0FIXTURE1"));
  EXPECT_EQ(earbuds.price.str(), "29.99");
  EXPECT_EQ(earbuds.average_rating.str(), "4.4");
  EXPECT_EQ(earbuds.features.size(), 2u);
  EXPECT_EQ(earbuds.categories.size(), 3u);
  EXPECT_EQ(earbuds.details_json, R"({"Brand":"Voltrix","Color":"Black","Item Weight":"1.6 ounces"})");

  const Product& headphones = ds.product(*ds.find_product("B0FIXTURE2"));
  EXPECT_EQ(headphones.price.kind, py::Scalar::Kind::kStr);
  EXPECT_EQ(headphones.price.str(), "$12.99");
  EXPECT_EQ(*headphones.price.number(), 12.99);
  EXPECT_EQ(headphones.average_rating.str(), "5");  // an int in the file stays an int
  EXPECT_FALSE(headphones.store.has_value());
  EXPECT_EQ(headphones.details_json.front(), '"');  // details given as a JSON-encoded string
  EXPECT_TRUE(headphones.categories.empty());

  const Product& coffee = ds.product(*ds.find_product("B0FIXTURE3"));
  EXPECT_TRUE(coffee.price.is_none());
  EXPECT_EQ(coffee.price.str(), "None");
  EXPECT_TRUE(coffee.features.empty());     // missing list → empty
  EXPECT_TRUE(coffee.description.empty());
  EXPECT_EQ(coffee.details_json, "{}");     // missing details → empty object
  EXPECT_EQ(coffee.title, "Café Moreno Dark Roast Ground Coffee™ — 12 oz");
  EXPECT_EQ(*coffee.store, "Café Moreno");

  const Product& board = ds.product(*ds.find_product("B0FIXTURE4"));
  EXPECT_EQ(board.price.kind, py::Scalar::Kind::kInt);
  EXPECT_EQ(board.price.str(), "20");
}

TEST(Loader, JoinsUsersBehavioursAndTasks) {
  Diagnostics diag;
  Dataset ds = load_fixture(diag);
  const User& u1 = ds.user(*ds.find_user(kU1));
  ASSERT_EQ(u1.behaviours.size(), 4u);
  EXPECT_TRUE(u1.has_profile);
  EXPECT_EQ(u1.profile.get("Gender"), "Female");
  EXPECT_EQ(u1.profile.fields.size(), 11u);
  EXPECT_EQ(u1.profile.fields[3].first, "Price Sensitivity");  // file order kept
  EXPECT_EQ(ds.product(u1.behaviours[1].product).parent_asin, "B0FIXTURE3");
  EXPECT_EQ(u1.behaviours[2].split, Split::kTrain);
  EXPECT_EQ(u1.behaviours[2].review.rating.str(), "5");  // int rating kept as int
  EXPECT_EQ(u1.behaviours[3].split, Split::kTest);
  EXPECT_EQ(u1.behaviours[0].review.timestamp, 1600000000000);

  const Task& t = ds.tasks(Split::kTest)[1];
  EXPECT_EQ(t.index, 1u);
  EXPECT_EQ(ds.user(t.user).id, kU2);
  EXPECT_EQ(t.type, TaskType::kSearch);
  EXPECT_EQ(ds.product(t.target_product).parent_asin, "B0FIXTURE1");
  EXPECT_EQ(t.target_review.text, "Fine for the price.");
  EXPECT_EQ(t.timestamp, 1610000500000);
  EXPECT_EQ(ds.tasks(Split::kTrain)[1].type, TaskType::kReview);
  EXPECT_EQ(ds.tasks(Split::kTest)[0].type, TaskType::kRecommend);
}

TEST(Loader, VisibleHistoryIsStrictlyEarlier) {
  Diagnostics diag;
  Dataset ds = load_fixture(diag);
  // Train task 0 is user 1's behaviour at 1600000200000: the two behaviours before it are visible, it is not.
  auto visible = ds.visible_history(ds.tasks(Split::kTrain)[0]);
  ASSERT_EQ(visible.size(), 2u);
  EXPECT_EQ(ds.product(visible[0]->product).parent_asin, "B0FIXTURE1");
  EXPECT_EQ(ds.product(visible[1]->product).parent_asin, "B0FIXTURE3");
  // Test task 0 at 1600000300000 sees the earlier train behaviour too (all splits), but not itself.
  auto later = ds.visible_history(ds.tasks(Split::kTest)[0]);
  ASSERT_EQ(later.size(), 3u);
  EXPECT_EQ(later[2]->split, Split::kTrain);
  // Two behaviours share a timestamp: at exactly that time neither is visible; one ms later both are.
  UserId u2 = *ds.find_user(kU2);
  EXPECT_TRUE(ds.visible_history(u2, 1610000000000).empty());
  EXPECT_EQ(ds.visible_history(u2, 1610000000001).size(), 2u);
}

TEST(Loader, MergedSingleFilesLoadTheSameDataset) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  for (std::string stem : {"all_products", "user_history"}) {
    nlohmann::ordered_json merged = nlohmann::ordered_json::object();
    for (int part : {1, 2}) {
      auto p = dir / (stem + "_part_" + std::to_string(part) + ".json");
      auto j = nlohmann::ordered_json::parse(test::read_text(p));
      merged.update(j);
      std::filesystem::remove(p);
    }
    test::write_text(dir / (stem + ".json"), merged.dump());
  }
  Diagnostics d1, d2;
  Dataset parts = load_fixture(d1);
  Dataset merged = load_dataset(dir.path(), d2);
  EXPECT_EQ(parts.products(), merged.products());
  EXPECT_EQ(parts.users(), merged.users());
  EXPECT_EQ(parts.tasks(Split::kTest), merged.tasks(Split::kTest));
}

TEST(Loader, OneThreadAndManyThreadsAgree) {
  Diagnostics d1, d2;
  LoadOptions one;
  one.threads = 1;
  LoadOptions four;
  four.threads = 4;
  Dataset a = load_dataset(test::fixture("data/original"), d1, one);
  Dataset b = load_dataset(test::fixture("data/original"), d2, four);
  EXPECT_EQ(a.products(), b.products());
  EXPECT_EQ(a.users(), b.users());
  EXPECT_EQ(a.tasks(Split::kTrain), b.tasks(Split::kTrain));
}

TEST(Loader, MissingOrAmbiguousFilesAreNamed) {
  test::TempDir dir;
  try {
    load_dataset(dir.path());
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("user_instructions.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("all_products.json (or all_products_part_*.json)"), std::string::npos) << msg;
  }
  test::copy_dir(test::fixture("data/original"), dir.path());
  test::write_text(dir / "all_products.json", "{}");
  try {
    load_dataset(dir.path());
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("both all_products.json and all_products_part_*.json"), std::string::npos);
  }
  EXPECT_THROW(load_dataset(dir / "no-such-dir"), DataError);
}

TEST(Loader, RealProfilesLoadWhenAvailable) {
  auto profiles = test::shared("reference-data/personalwab/user_profiles.json");
  if (!std::filesystem::exists(profiles)) GTEST_SKIP() << "shared reference data not present: " << profiles;
  Diagnostics diag;
  parse_dataset_file_for_test("user_profiles.json", test::read_text(profiles), diag);
  EXPECT_EQ(diag.n_errors(), 0u) << diag.first_error();
  EXPECT_EQ(diag.n_warnings(), 0u);
}

// Issue 31: files are mapped rather than read, with the padding simdjson needs after the end; a file whose size
// is a multiple of the page (no slack in its last page) must load the same.
TEST(Loader, FilesOfAnyLengthAgainstThePageLoadTheSame) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  Dataset before = load_dataset(dir.path());
  std::string text = test::read_text(dir / "item_ids.json");
  for (std::size_t size : {std::size_t{4096}, std::size_t{8192} - 1, std::size_t{8192} - 40, std::size_t{12288}}) {
    ASSERT_LT(text.size(), size);
    std::string padded = text + std::string(size - text.size(), ' ');
    test::write_text(dir / "item_ids.json", padded);
    ASSERT_EQ(std::filesystem::file_size(dir / "item_ids.json"), size);
    Dataset after = load_dataset(dir.path());
    EXPECT_EQ(after.item_ids(), before.item_ids()) << size;
  }
}

// A product repeated in a later part replaces the earlier record in its first position (Python's dict.update),
// with a warning naming the later file.
TEST(Loader, RepeatedProductReplacesTheEarlierOneInPlace) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  Dataset before = load_dataset(dir.path());
  auto part1 = nlohmann::ordered_json::parse(test::read_text(dir / "all_products_part_1.json"));
  std::string asin = part1.begin().key();
  auto changed = part1.begin().value();
  changed["title"] = "Replaced title";
  auto part2 = nlohmann::ordered_json::parse(test::read_text(dir / "all_products_part_2.json"));
  part2[asin] = changed;
  test::write_text(dir / "all_products_part_2.json", part2.dump());
  Diagnostics diag;
  Dataset after = load_dataset(dir.path(), diag);
  EXPECT_EQ(diag.n_errors(), 0u) << diag.first_error();
  ASSERT_EQ(after.products().size(), before.products().size());
  ProductId id = *before.find_product(asin);
  EXPECT_EQ(*after.find_product(asin), id);
  EXPECT_EQ(after.product(id).title, "Replaced title");
  bool warned = false;
  for (const auto& d : diag.kept())
    if (d.check == "duplicate-key" && d.to_string().find("all_products_part_2.json") != std::string::npos &&
        d.to_string().find(asin) != std::string::npos)
      warned = true;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace pwab::data
