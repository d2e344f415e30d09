#include "data/dataset.h"

#include <gtest/gtest.h>

namespace pwab::data {

TEST(Dataset, AddAndFind) {
  Dataset ds;
  Product p;
  p.parent_asin = "B01";
  EXPECT_EQ(ds.add_product(p), ProductId{0});
  EXPECT_FALSE(ds.add_product(p).has_value());  // duplicate key
  EXPECT_EQ(ds.find_product(std::string_view("B01")), ProductId{0});
  EXPECT_FALSE(ds.find_product("B02").has_value());
  User u;
  u.id = "U1";
  EXPECT_EQ(ds.add_user(u), UserId{0});
  EXPECT_FALSE(ds.add_user(u).has_value());
  EXPECT_EQ(ds.find_user("U1"), UserId{0});
}

TEST(Dataset, TasksAreNumberedPerSplit) {
  Dataset ds;
  for (Split s : {Split::kTest, Split::kTrain, Split::kTest}) {
    Task t;
    t.split = s;
    ds.add_task(t);
  }
  EXPECT_EQ(ds.tasks(Split::kTest).size(), 2u);
  EXPECT_EQ(ds.tasks(Split::kTest)[1].index, 1u);
  EXPECT_EQ(ds.tasks(Split::kTrain)[0].index, 0u);
  EXPECT_EQ(ds.n_tasks(), 3u);
}

TEST(Dataset, VisibleHistoryKeepsStoredOrderAndAllSplits) {
  Dataset ds;
  User u;
  u.id = "U";
  // Stored order is kept even when it is not time order (the validator warns about that separately).
  for (auto [ts, split] : {std::pair{30, Split::kHistory}, {10, Split::kTrain}, {20, Split::kTest}, {40, Split::kHistory}}) {
    Behaviour b;
    b.review.timestamp = ts;
    b.split = split;
    u.behaviours.push_back(b);
  }
  ds.add_user(u);
  Task t;
  t.timestamp = 30;
  auto v = ds.visible_history(t);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0]->review.timestamp, 10);
  EXPECT_EQ(v[1]->review.timestamp, 20);
}

TEST(Types, EnumsRoundTrip) {
  for (Split s : {Split::kHistory, Split::kTrain, Split::kTest}) EXPECT_EQ(parse_split(to_string(s)), s);
  for (TaskType t : kAllTaskTypes) EXPECT_EQ(parse_task_type(to_string(t)), t);
  EXPECT_FALSE(parse_split("dev").has_value());
  EXPECT_FALSE(parse_task_type("Search").has_value());
}

}  // namespace pwab::data
