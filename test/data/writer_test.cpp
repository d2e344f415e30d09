#include "data/writer.h"

#include <gtest/gtest.h>

#include "data/loader.h"
#include "support/test_support.h"

namespace pwab::data {

TEST(Writer, RoundTripsTheFixture) {
  Dataset original = load_dataset(test::fixture("data/original"));
  test::TempDir dir;
  write_dataset(original, dir.path());
  Diagnostics diag;
  Dataset again = load_dataset(dir.path(), diag);
  EXPECT_EQ(diag.n_errors(), 0u) << diag.first_error();
  EXPECT_EQ(original.products(), again.products());
  EXPECT_EQ(original.users(), again.users());
  EXPECT_EQ(original.tasks(Split::kTrain), again.tasks(Split::kTrain));
  EXPECT_EQ(original.tasks(Split::kTest), again.tasks(Split::kTest));
  EXPECT_EQ(original.item_ids(), again.item_ids());
}

TEST(Writer, ProductJsonHasTheOriginalFieldOrder) {
  Product p;
  p.parent_asin = "B0X";
  p.title = "T";
  p.price = py::Scalar::of_float(3);
  p.details_json = R"({"b":1,"a":2})";
  EXPECT_EQ(product_json(p),
            R"({"main_category": "", "title": "T", "average_rating": null, "rating_number": null, "features": [], )"
            R"("description": [], "price": 3.0, "store": null, "categories": [], "details": {"b":1,"a":2}, )"
            R"("parent_asin": "B0X"})");
}

TEST(Writer, SwitchingPartLayoutsLeavesNoStaleFiles) {
  Dataset ds = load_dataset(test::fixture("data/original"));
  test::TempDir dir;
  write_dataset(ds, dir.path());
  WriteOptions single;
  single.product_parts = 1;
  single.history_parts = 1;
  write_dataset(ds, dir.path(), single);
  EXPECT_TRUE(std::filesystem::exists(dir / "all_products.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "all_products_part_1.json"));
  EXPECT_NO_THROW(load_dataset(dir.path()));
}

}  // namespace pwab::data
