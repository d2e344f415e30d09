// Task-specific memory on a hand-made dataset: the exact docs/decisions.md §4.6a renderings, the header, the time
// re-sort of recommend items, "none" for an empty history, pretty_history's layout, and retrieval order with and
// without the per-run cache.
#include "agents/task_memory.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace pwab::agents {
namespace {

data::Product product(std::string asin, std::string title, std::string category, py::Scalar price,
                      std::optional<std::string> store) {
  data::Product p;
  p.parent_asin = std::move(asin);
  p.title = std::move(title);
  p.main_category = std::move(category);
  p.price = price;
  p.store = std::move(store);
  p.average_rating = py::Scalar::of_float(4.5);
  p.rating_number = py::Scalar::of_int(12);
  p.features = {"Quiet motor"};
  p.description = {"A kettle."};
  p.categories = {"Home & Kitchen", "Kettles"};
  p.details_json = R"({"Color": "Red"})";
  return p;
}

data::Behaviour behaviour(data::ProductId id, std::string asin, double rating, std::string text, int64_t ts) {
  data::Behaviour b;
  b.product = id;
  b.review.rating = py::Scalar::of_float(rating);
  b.review.title = "Title";
  b.review.text = std::move(text);
  b.review.parent_asin = std::move(asin);
  b.review.timestamp = ts;
  return b;
}

//! Two kettles and a shirt, bought in that order; the test task comes after all three.
data::Dataset tiny() {
  data::Dataset ds;
  ds.add_product(product("B0KETTLE01", "Red Electric Kettle", "Amazon Home", py::Scalar::of_float(29.99), "Voltrix"));
  data::Product shirt = product("B0SHIRT001", "Blue Cotton Shirt", "AMAZON FASHION", py::Scalar::none(), std::nullopt);
  shirt.categories = {"Clothing"};
  ds.add_product(shirt);
  ds.add_product(product("B0KETTLE02", "Steel Electric Kettle", "Amazon Home", py::Scalar::of_int(40), "Isple"));
  data::User u;
  u.id = "AUSER";
  u.behaviours = {behaviour(0, "B0KETTLE01", 5.0, "Boils fast, love this kettle.", 100),
                  behaviour(1, "B0SHIRT001", 3.0, "The shirt shrank.", 200),
                  behaviour(2, "B0KETTLE02", 4.0, "Solid kettle, a bit loud.", 300)};
  ds.add_user(std::move(u));
  data::Task t;
  t.split = data::Split::kTest;
  t.user = 0;
  t.instruction = "I need a new electric kettle";
  t.type = data::TaskType::kSearch;
  t.timestamp = 1000;
  ds.add_task(t);
  return ds;
}

//! Embeds by keyword counts, so similarities are known: "kettle" words point one way, "shirt" another.
class KeywordEmbedder final : public embed::Embedder {
 public:
  std::string name() const override { return "keywords"; }
  std::size_t dim() const override { return 2; }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const override {
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) {
      ++calls;
      float k = t.find("ettle") != std::string::npos ? 1.0f : 0.0f;
      float s = t.find("hirt") != std::string::npos ? 1.0f : 0.0f;
      float n = std::sqrt(k * k + s * s);
      out.push_back(n > 0 ? std::vector<float>{k / n, s / n} : std::vector<float>{0, 0});
    }
    return out;
  }
  mutable int calls = 0;
};

MemoryItem item(const data::Dataset& ds, std::size_t i) {
  const auto& b = ds.user(0).behaviours[i];
  return {&b, &ds.product(b.product), i, 0.0};
}

TEST(TaskMemory, ItemRenderingsPerType) {
  auto ds = tiny();
  EXPECT_EQ(render_memory_item(item(ds, 0), data::TaskType::kSearch),
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nPrice:29.99\nStore:Voltrix\n");
  EXPECT_EQ(render_memory_item(item(ds, 1), data::TaskType::kSearch),
            "Title:Blue Cotton Shirt\nMain Category:AMAZON FASHION\nPrice:None\nStore:None\n");
  EXPECT_EQ(render_memory_item(item(ds, 2), data::TaskType::kSearch),
            "Title:Steel Electric Kettle\nMain Category:Amazon Home\nPrice:40\nStore:Isple\n");
  EXPECT_EQ(render_memory_item(item(ds, 0), data::TaskType::kRecommend),
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE01\n");
  EXPECT_EQ(render_memory_item(item(ds, 1), data::TaskType::kReview), "Rating:3.0\nText:The shirt shrank.\n");
}

TEST(TaskMemory, HeaderAndJoin) {
  auto ds = tiny();
  EXPECT_EQ(task_memory_header(data::TaskType::kReview),
            "- Task type: review\n- Complete the task with the add_product_review tool\n- Task-specific Memory:\n");
  std::vector<MemoryItem> items = {item(ds, 2), item(ds, 0)};
  EXPECT_EQ(render_task_memory(items, data::TaskType::kReview),
            "- Task type: review\n- Complete the task with the add_product_review tool\n- Task-specific Memory:\n"
            "Rating:4.0\nText:Solid kettle, a bit loud.\n|Rating:5.0\nText:Boils fast, love this kettle.\n");
  EXPECT_EQ(render_task_memory(items, data::TaskType::kSearch, {.header = false}),
            "Title:Steel Electric Kettle\nMain Category:Amazon Home\nPrice:40\nStore:Isple\n|"
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nPrice:29.99\nStore:Voltrix\n");
  EXPECT_EQ(render_task_memory({}, data::TaskType::kSearch), "none");
}

TEST(TaskMemory, RecommendItemsResortedByTime) {
  auto ds = tiny();
  std::vector<MemoryItem> by_relevance = {item(ds, 2), item(ds, 0), item(ds, 1)};
  std::string header = task_memory_header(data::TaskType::kRecommend);
  EXPECT_EQ(render_task_memory(by_relevance, data::TaskType::kRecommend),
            header + "Title:Red Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE01\n|"
                     "Title:Blue Cotton Shirt\nMain Category:AMAZON FASHION\nAsin:B0SHIRT001\n|"
                     "Title:Steel Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE02\n");
  // PUMA's variant (docs/decisions.md §4.6b, D9): no header, newest first.
  EXPECT_EQ(render_task_memory(by_relevance, data::TaskType::kRecommend, {.header = false, .recommend_newest_first = true}),
            "Title:Steel Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE02\n|"
            "Title:Blue Cotton Shirt\nMain Category:AMAZON FASHION\nAsin:B0SHIRT001\n|"
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE01\n");
}

TEST(TaskMemory, PrettyHistoryLayout) {
  auto ds = tiny();
  const auto& b = ds.user(0).behaviours[0];
  EXPECT_EQ(pretty_history(ds.product(b.product), b.review, 3),
            "\nMEMORY 3:\n\nProduct:\n- Title: Red Electric Kettle\n- Parent Asin: B0KETTLE01\n"
            "- Main Category: Amazon Home\n- Average Rating: 4.5\n- Rating Number: 12\n- Price: 29.99\n"
            "- Store: Voltrix\n- Details: {\"Color\": \"Red\"}\n- Description: ['A kettle.']\n"
            "- Features: ['Quiet motor']\n\nReview:\n- Rating: 5.0\n- Text: Boils fast, love this kettle.\n"
            "- Timestamp: 100\n\n");
}

TEST(TaskMemory, RelevantItemsBestFirstTiesByTime) {
  auto ds = tiny();
  KeywordEmbedder e;
  const auto& task = ds.tasks(data::Split::kTest)[0];
  auto history = ds.visible_history(task);
  auto items = relevant_items(ds, task.user, history, task.instruction, e, {.k = 2});
  ASSERT_EQ(items.size(), 2u);
  // Both kettles are equally similar (1.0): the earlier one first; the shirt (0.0) is cut.
  EXPECT_EQ(items[0].product->parent_asin, "B0KETTLE01");
  EXPECT_EQ(items[1].product->parent_asin, "B0KETTLE02");
  EXPECT_NEAR(items[0].similarity, 1.0, 1e-6);
  EXPECT_EQ(items[1].position, 2u);
  // k larger than the history: everything, best first; empty history: nothing.
  EXPECT_EQ(relevant_items(ds, task.user, history, task.instruction, e, {.k = 10}).size(), 3u);
  EXPECT_TRUE(relevant_items(ds, task.user, {}, task.instruction, e).empty());
  // Only behaviours before the task are visible.
  EXPECT_EQ(ds.visible_history(task.user, 250).size(), 2u);
}

TEST(TaskMemory, CacheEmbedsEachBehaviourOnce) {
  auto ds = tiny();
  KeywordEmbedder e;
  BehaviourVectors cache(ds, e);
  const auto& task = ds.tasks(data::Split::kTest)[0];
  auto history = ds.visible_history(task);
  RelevanceOptions o{.k = 3, .text = RelevanceText::kCompact, .cache = &cache};
  auto a = relevant_items(ds, task.user, history, task.instruction, e, o);
  int calls = e.calls;
  auto b = relevant_items(ds, task.user, history, task.instruction, e, o);
  EXPECT_EQ(e.calls - calls, 1);  // only the instruction is embedded again
  auto c = relevant_items(ds, task.user, history, task.instruction, e, {.k = 3});
  ASSERT_EQ(a.size(), c.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].behaviour, b[i].behaviour);
    EXPECT_EQ(a[i].behaviour, c[i].behaviour);
    EXPECT_DOUBLE_EQ(a[i].similarity, c[i].similarity);
  }
}

}  // namespace
}  // namespace pwab::agents
