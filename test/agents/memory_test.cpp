// The fc agent's memory strategies on a hand-made history: exact headers and item renderings, ordering (newest
// first with stable ties, by similarity with re-numbering), k honoured, random memory deterministic per seed and
// task, the empty-history behaviours, and task-specific memory for known and unknown functions.
#include "agents/memory.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "fc_test_util.h"

namespace pwab::agents {
namespace {

using fctest::KeywordEmbedder;

const data::Dataset& ds() {
  static const data::Dataset d = fctest::tiny();
  return d;
}
const data::Task& task(uint32_t i) { return ds().tasks(data::Split::kTest)[i]; }
std::vector<const data::Behaviour*> history(uint32_t i) { return ds().visible_history(task(i)); }
const data::Behaviour* b(int i) { return &ds().user(0).behaviours[static_cast<std::size_t>(i)]; }
std::string ph(int i, std::size_t n) { return pretty_history(ds().product(b(i)->product), b(i)->review, n); }

constexpr const char* kLastHeader =
    "\nWhat you know about this user from memory (their latest purchases with reviews, newest first):\n\n";
constexpr const char* kRelevantHeader =
    "\nWhat you know about this user from memory (their purchases with reviews closest to this request, most related "
    "first):\n\n";
constexpr const char* kRandomHeader =
    "\nWhat you know about this user from memory (a random sample of their purchases with reviews):\n\n";

TEST(Memory, StrategyNames) {
  for (auto s : {MemoryStrategy::kNone, MemoryStrategy::kRandom, MemoryStrategy::kLast, MemoryStrategy::kRelevant,
                 MemoryStrategy::kTaskSpec})
    EXPECT_EQ(parse_memory_strategy(to_string(s)), s);
  EXPECT_EQ(parse_memory_strategy(""), MemoryStrategy::kNone);
  EXPECT_THROW(parse_memory_strategy("taskspe"), UsageError);
  EXPECT_THROW(parse_memory_strategy("recmind"), UsageError);
  EXPECT_EQ(memory_header(MemoryStrategy::kLast), kLastHeader);
  EXPECT_EQ(memory_header(MemoryStrategy::kRelevant), kRelevantHeader);
  EXPECT_EQ(memory_header(MemoryStrategy::kRandom), kRandomHeader);
  EXPECT_EQ(memory_header(MemoryStrategy::kNone), "");
}

TEST(Memory, NoneIsTheLiteralNone) {
  EXPECT_EQ(baseline_memory(ds(), task(0), MemoryStrategy::kNone, {}, nullptr), "none");
}

TEST(Memory, LastExactRendering) {
  MemoryOptions o;
  o.k = 1;
  // The newest item: kettle 2 and the socks share time 500, and the stored order breaks the tie.
  const std::string expected = std::string(kLastHeader) +
                               "\nMEMORY 0:\n\nProduct:\n"
                               "- Title: Steel Electric Kettle\n"
                               "- Parent Asin: B0KETTLE02\n"
                               "- Main Category: Amazon Home\n"
                               "- Average Rating: 4.5\n"
                               "- Rating Number: 12\n"
                               "- Price: 40\n"
                               "- Store: Isple\n"
                               "- Details: {\"Color\": \"Red\"}\n"
                               "- Description: ['Stainless.']\n"
                               "- Features: ['Quiet motor']\n"
                               "\nReview:\n"
                               "- Rating: 4.0\n"
                               "- Text: Solid kettle, a bit loud.\n"
                               "- Timestamp: 500\n\n";
  EXPECT_EQ(baseline_memory(ds(), task(0), MemoryStrategy::kLast, o, nullptr), expected);
}

TEST(Memory, LastOrderAndK) {
  auto h = history(0);
  ASSERT_EQ(h.size(), 5u);  // the mug bought at 2000 is after the task
  auto all = last_memory(h, 10);
  EXPECT_EQ(all, (std::vector<const data::Behaviour*>{b(2), b(4), b(0), b(3), b(1)}));
  EXPECT_EQ(last_memory(h, 3), (std::vector<const data::Behaviour*>{b(2), b(4), b(0)}));
  MemoryOptions o;
  o.k = 3;
  EXPECT_EQ(baseline_memory(ds(), task(0), MemoryStrategy::kLast, o, nullptr),
            std::string(kLastHeader) + ph(2, 0) + "\n" + ph(4, 1) + "\n" + ph(0, 2));
  o.k = 10;  // k beyond the history: everything
  EXPECT_EQ(baseline_memory(ds(), task(0), MemoryStrategy::kLast, o, nullptr),
            std::string(kLastHeader) + ph(2, 0) + "\n" + ph(4, 1) + "\n" + ph(0, 2) + "\n" + ph(3, 3) + "\n" + ph(1, 4));
}

TEST(Memory, RelevantBySimilarityRenumbered) {
  KeywordEmbedder e;
  MemoryOptions o;
  o.k = 3;
  // "electric kettle": both kettles (similarity 1, stored order), then the first of the rest (similarity 0).
  EXPECT_EQ(baseline_memory(ds(), task(0), MemoryStrategy::kRelevant, o, &e),
            std::string(kRelevantHeader) + ph(0, 0) + "\n" + ph(2, 1) + "\n" + ph(1, 2));
  // "... my shirt": the shirt first.
  o.k = 2;
  EXPECT_EQ(baseline_memory(ds(), task(1), MemoryStrategy::kRelevant, o, &e),
            std::string(kRelevantHeader) + ph(1, 0) + "\n" + ph(0, 1));
  EXPECT_THROW(baseline_memory(ds(), task(0), MemoryStrategy::kRelevant, o, nullptr), UsageError);
  // The compact text with the per-run cache gives the same order here.
  BehaviourVectors cache(ds(), e);
  o.k = 3;
  o.relevance = RelevanceText::kCompact;
  o.cache = &cache;
  EXPECT_EQ(baseline_memory(ds(), task(0), MemoryStrategy::kRelevant, o, &e),
            std::string(kRelevantHeader) + ph(0, 0) + "\n" + ph(2, 1) + "\n" + ph(1, 2));
}

TEST(Memory, RandomIsDeterministicPerSeedAndTask) {
  auto h = history(0);
  auto a = random_memory(h, 3, 42);
  EXPECT_EQ(a, random_memory(h, 3, 42));
  ASSERT_EQ(a.size(), 3u);
  std::set<const data::Behaviour*> distinct(a.begin(), a.end());
  EXPECT_EQ(distinct.size(), 3u);
  for (auto* x : a) EXPECT_NE(std::find(h.begin(), h.end(), x), h.end());
  // k beyond the history: every item once, in drawn order.
  auto all = random_memory(h, 10, 42);
  EXPECT_EQ(std::set<const data::Behaviour*>(all.begin(), all.end()), std::set<const data::Behaviour*>(h.begin(), h.end()));
  // Other seeds draw other samples; the seed of a task mixes the run seed with the task's split and index.
  std::set<std::vector<const data::Behaviour*>> samples;
  for (uint64_t s = 0; s < 20; ++s) samples.insert(random_memory(h, 3, s));
  EXPECT_GT(samples.size(), 3u);
  EXPECT_EQ(random_memory_seed(7, task(0)), random_memory_seed(7, task(0)));
  EXPECT_NE(random_memory_seed(7, task(0)), random_memory_seed(8, task(0)));
  EXPECT_NE(random_memory_seed(7, task(0)), random_memory_seed(7, task(1)));

  MemoryOptions o;
  o.k = 3;
  o.run_seed = 7;
  std::string text = baseline_memory(ds(), task(0), MemoryStrategy::kRandom, o, nullptr);
  EXPECT_EQ(text, render_baseline_memory(ds(), MemoryStrategy::kRandom, random_memory(h, 3, random_memory_seed(7, task(0)))));
  EXPECT_TRUE(text.starts_with(kRandomHeader));
  EXPECT_NE(text.find("\nMEMORY 2:\n"), std::string::npos);
  EXPECT_EQ(text.find("\nMEMORY 3:\n"), std::string::npos);
  EXPECT_EQ(text, baseline_memory(ds(), task(0), MemoryStrategy::kRandom, o, nullptr));
}

TEST(Memory, EmptyHistoryGivesTheHeaderAlone) {
  KeywordEmbedder e;
  MemoryOptions o;
  ASSERT_TRUE(history(3).empty());
  EXPECT_EQ(baseline_memory(ds(), task(3), MemoryStrategy::kLast, o, nullptr), kLastHeader);
  EXPECT_EQ(baseline_memory(ds(), task(3), MemoryStrategy::kRandom, o, nullptr), kRandomHeader);
  EXPECT_EQ(baseline_memory(ds(), task(3), MemoryStrategy::kRelevant, o, &e), kRelevantHeader);  // no crash
  EXPECT_EQ(taskspec_memory(ds(), task(3), "search_product_by_query", o, e).text, "none");
}

TEST(Memory, TaskSpecific) {
  KeywordEmbedder e;
  MemoryOptions o;
  o.k = 2;
  TaskSpecMemory s = taskspec_memory(ds(), task(0), "search_product_by_query", o, e);
  ASSERT_EQ(s.type, data::TaskType::kSearch);
  EXPECT_EQ(s.text,
            "- Task type: search\n- Complete the task with the search_product_by_query tool\n- Task-specific Memory:\n"
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nPrice:29.99\nStore:Voltrix\n|"
            "Title:Steel Electric Kettle\nMain Category:Amazon Home\nPrice:40\nStore:Isple\n");
  // Recommend: the relevant items (shirt, then kettle 1) re-sorted oldest first.
  s = taskspec_memory(ds(), task(1), " get_recommendations_by_history\n", o, e);
  ASSERT_EQ(s.type, data::TaskType::kRecommend);
  EXPECT_EQ(s.text,
            "- Task type: recommend\n- Complete the task with the get_recommendations_by_history tool\n"
            "- Task-specific Memory:\n"
            "Title:Blue Cotton Shirt\nMain Category:AMAZON FASHION\nAsin:B0SHIRT001\n|"
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE01\n");
  s = taskspec_memory(ds(), task(2), "add_product_review", o, e);
  EXPECT_EQ(s.text,
            "- Task type: review\n- Complete the task with the add_product_review tool\n- Task-specific Memory:\n"
            "Rating:5.0\nText:Boils fast, love this kettle.\n|Rating:4.0\nText:Solid kettle, a bit loud.\n");
  // docs/decisions.md D3: anything but the three names is no memory, never review, never an error.
  for (std::string_view bad : {"", "review", "get_product_details_by_asin", "Add_Product_Review", "stop"}) {
    s = taskspec_memory(ds(), task(2), bad, o, e);
    EXPECT_FALSE(s.type.has_value()) << bad;
    EXPECT_EQ(s.text, "none") << bad;
  }
}

}  // namespace
}  // namespace pwab::agents
