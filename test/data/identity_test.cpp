// The identities every area shares: the track (track.h) and the task key (task_key.h), each with one spelling and
// one parser.
#include <gtest/gtest.h>

#include "data/dataset.h"
#include "data/task_key.h"
#include "data/track.h"

namespace pwab::data {
namespace {

TEST(Track, SpelledOneWayAndReadBack) {
  for (Track t : {Track::kSingleTurn, Track::kMultiTurn}) EXPECT_EQ(parse_track(to_string(t)), t);
  EXPECT_EQ(to_string(Track::kSingleTurn), "single");
  EXPECT_EQ(to_string(Track::kMultiTurn), "multi");
  for (const char* bad : {"", "Single", "multi-turn", "single ", "both"}) EXPECT_FALSE(parse_track(bad)) << bad;
  EXPECT_EQ(kDefaultTrack, Track::kMultiTurn);  // docs/decisions.md D11
}

TEST(TaskKey, TheKeysTaskKeyWritesReadBack) {
  Dataset ds;
  for (Split s : {Split::kTest, Split::kTrain, Split::kTest}) {
    Task t;
    t.split = s;
    ds.add_task(t);
  }
  for (Split s : {Split::kTest, Split::kTrain})
    for (const Task& t : ds.tasks(s)) {
      auto key = parse_task_key(task_key(t));
      ASSERT_TRUE(key) << task_key(t);
      EXPECT_EQ(key->split, t.split);
      EXPECT_EQ(key->index, t.index);
      EXPECT_EQ(task_by_key(ds, task_key(t)), &t);
    }
  EXPECT_EQ(task_by_key(ds, "test/2"), nullptr);  // a well-formed key the dataset does not have
  EXPECT_EQ(task_by_key(ds, "train/1"), nullptr);
}

TEST(TaskKey, AnythingElseIsNotAKey) {
  EXPECT_EQ(parse_task_key("test/017")->index, 17u);  // leading zeros are digits
  for (const char* bad : {"", "test", "test/", "/3", "history/0", "dev/1", "test/-1", "test/+1", "test/ 1",
                          "test/1 ", "test/1/2", "test/1x", "test/99999999999999999999999", "Test/1"})
    EXPECT_FALSE(parse_task_key(bad)) << bad;
}

}  // namespace
}  // namespace pwab::data
