// The offline profile rules on hand-made histories, and the consistency evaluation: metrics against a judge that
// knows the answers, the embedding judge, and the LLM judge against the loopback server.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "construct/consistency.h"
#include "construct/profile.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "llm/http_chat_model.h"
#include "llm/llm_test_util.h"
#include "support/openai_test_server.h"

namespace pwab::construct {
namespace {

data::Product product(std::string asin, std::string cat2, std::string store, double price, std::string title = "Thing") {
  data::Product p;
  p.parent_asin = std::move(asin);
  p.main_category = "All Electronics";
  p.title = std::move(title);
  p.store = std::move(store);
  p.price = py::Scalar::of_float(price);
  p.categories = {"Electronics", std::move(cat2)};
  return p;
}

data::Review review(double rating, std::string title, std::string text) {
  return {py::Scalar::of_float(rating), std::move(title), std::move(text), "", 0};
}

TEST(OfflineProfile, EachRuleOnAHandMadeHistory) {
  // Catalogue medians: 100 for the category. The user buys at ~40: high price sensitivity.
  std::vector<data::Product> catalogue;
  for (int i = 0; i < 9; ++i) catalogue.push_back(product("C" + std::to_string(i), "Headphones", "X", 100));
  std::vector<data::Product> bought = {
      product("A1", "Headphones", "Anker", 40, "Women's Wireless Earbuds"),
      product("A2", "Headphones", "Anker", 35, "Earbuds for Women, Pink"),
      product("A3", "Cables", "Belkin", 45, "USB Cable"),
      product("A4", "Headphones", "Anker", 42, "Ladies Sport Headphones"),
  };
  for (const auto& p : bought) catalogue.push_back(p);
  auto prices = PriceReference::from_catalogue(catalogue);
  EXPECT_DOUBLE_EQ(prices.reference_for(bought[0]), 100.0);
  std::vector<data::Review> reviews = {
      review(5, "Love them!", "Anker did it again! Great sound and the battery lasts forever!"),
      review(5, "Great", "Amazing value for the price! Sound is great!"),
      review(4, "Fine", "Works."),
      review(5, "Yes!", "Comfortable fit and great sound, battery is good!"),
  };
  std::vector<HistoryItem> h;
  for (std::size_t i = 0; i < bought.size(); ++i) h.push_back({&bought[i], &reviews[i]});
  auto p = offline_profile(h, prices);
  ASSERT_EQ(p.fields.size(), 11u);
  for (std::size_t i = 0; i < 11; ++i) EXPECT_EQ(p.fields[i].first, data::kProfileFields[i]);
  EXPECT_EQ(p.get("Gender"), "Female");             // women's / women / ladies in titles
  EXPECT_EQ(p.get("Age"), "Unknown");
  EXPECT_EQ(p.get("Occupation"), "Other");
  EXPECT_EQ(p.get("Price Sensitivity"), "High");    // ~0.4 of the category median
  EXPECT_EQ(p.get("Shopping Interest"), "Headphones, Cables");
  EXPECT_EQ(p.get("Brand Preference"), "Anker, Belkin");
  EXPECT_EQ(p.get("Diversity Preference"), "Medium");  // entropy of (3, 1) / log2(4) = 0.41
  EXPECT_EQ(p.get("Interaction Complexity"), "Low");  // median review of ~7 words
  EXPECT_EQ(p.get("Tone and Style"), "Positive, Enthusiastic, Concise");
  EXPECT_EQ(p.get("Item Reference"), "Sometimes names the brand or the product");  // 1 of 4 names Anker
  EXPECT_EQ(p.get("Focus Aspect"), "Performance, Sound and picture, Price and value");
  // Same history, same profile.
  EXPECT_EQ(offline_profile(h, prices), p);
}

TEST(OfflineProfile, DiversityComplexityAndFallbacks) {
  std::vector<data::Product> items;
  std::vector<data::Review> reviews;
  std::string long_text;
  for (int w = 0; w < 80; ++w) long_text += "word ";
  for (int i = 0; i < 8; ++i) {
    items.push_back(product("P" + std::to_string(i), "Cat" + std::to_string(i), "", 0));
    items.back().price = py::Scalar::none();
    items.back().store.reset();
    reviews.push_back(review(2, "meh", long_text));
  }
  std::vector<HistoryItem> h;
  for (std::size_t i = 0; i < items.size(); ++i) h.push_back({&items[i], &reviews[i]});
  auto p = offline_profile(h, PriceReference::from_catalogue(items));
  EXPECT_EQ(p.get("Gender"), "Unknown");
  EXPECT_EQ(p.get("Price Sensitivity"), "Medium");  // no prices
  EXPECT_EQ(p.get("Brand Preference"), "No particular brand");
  EXPECT_EQ(p.get("Diversity Preference"), "High");  // 8 categories in 8 behaviours
  EXPECT_EQ(p.get("Interaction Complexity"), "High");
  EXPECT_EQ(p.get("Tone and Style"), "Critical, Measured, Detailed");
  EXPECT_EQ(p.get("Focus Aspect"), "Overall satisfaction");
  EXPECT_EQ(interest_category(data::Product{}), "Other");

  int filled = 0;
  auto parsed = parse_profile_reply(R"({"Gender": "Male", "Age": 30, "Focus Aspect": ["Price", "Quality"]})", p, filled);
  EXPECT_EQ(parsed.get("Gender"), "Male");
  EXPECT_EQ(parsed.get("Age"), p.get("Age"));  // not a string: the fallback
  EXPECT_EQ(parsed.get("Focus Aspect"), "Price, Quality");
  EXPECT_EQ(filled, 9);
  parse_profile_reply("no json here", p, filled);
  EXPECT_EQ(filled, 11);
}

// A dataset of users (at most 12) whose profiles name their own products' words, so profiles and users match.
data::Dataset consistency_dataset(int n_users) {
  data::Dataset ds;
  const char* themes[] = {"guitar", "coffee", "camping", "yoga", "knitting", "aquarium", "baking", "cycling",
                          "chess", "gardening", "astronomy", "pottery"};
  for (int u = 0; u < n_users; ++u) {
    std::string theme = themes[u % 12];
    data::User user;
    user.id = "U" + std::to_string(u);
    for (int k = 0; k < 6; ++k) {
      auto pid = ds.add_product(product(user.id + "-" + std::to_string(k), theme + " gear", theme + "co", 10,
                                        theme + " " + theme + " kit number " + std::to_string(k)));
      data::Behaviour b;
      b.product = *pid;
      b.review = review(5, theme + " fun", "I love " + theme);
      b.review.timestamp = k;
      user.behaviours.push_back(b);
    }
    user.profile.fields = {{"Shopping Interest", theme + " gear"}, {"Brand Preference", theme + "co"}};
    user.has_profile = true;
    ds.add_user(std::move(user));
  }
  return ds;
}

// Knows which user each profile belongs to: the best possible judge (or, reversed, the worst).
class OracleJudge final : public ConsistencyJudge {
 public:
  OracleJudge(const data::Dataset& ds, bool reversed) : ds_(ds), reversed_(reversed) {}
  std::string name() const override { return reversed_ ? "anti-oracle" : "oracle"; }
  int pick_user(const std::string& profile, const std::vector<std::string>& candidates) override {
    const data::User& u = owner(profile);
    std::string mine = behaviours_text(ds_, u, 20);
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if ((candidates[i] == mine) != reversed_) return static_cast<int>(i);
    return -1;
  }
  std::vector<int> rank_products(const std::string& profile, const std::vector<std::string>& candidates) override {
    const data::User& u = owner(profile);
    std::vector<int> pos, neg;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      bool owned = false;
      for (const auto& b : u.behaviours) owned = owned || product_judge_text(ds_.product(b.product)) == candidates[i];
      (owned ? pos : neg).push_back(static_cast<int>(i));
    }
    if (reversed_) std::swap(pos, neg);
    pos.insert(pos.end(), neg.begin(), neg.end());
    return pos;
  }

 private:
  const data::User& owner(const std::string& profile) const {
    for (const auto& u : ds_.users())
      if (profile_text(u.profile) == profile) return u;
    throw Error("unknown profile");
  }
  const data::Dataset& ds_;
  bool reversed_;
};

TEST(Consistency, MetricsAgainstKnownAnswers) {
  auto ds = consistency_dataset(12);
  ConsistencyOptions o;
  OracleJudge best(ds, false), worst(ds, true);
  auto a = evaluate_consistency(ds, best, o);
  EXPECT_EQ(a.users_behaviour, 12u);
  EXPECT_EQ(a.users_product, 12u);
  EXPECT_DOUBLE_EQ(a.top1_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(a.ndcg, 1.0);
  EXPECT_DOUBLE_EQ(a.recall, 1.0);
  // Random expectations: 1 of 5; Recall@5 = 5/10; NDCG@5 = 0.3 * sum(1/log2(i+1), i=1..5) / sum(.., i=1..3).
  EXPECT_DOUBLE_EQ(a.top1_random, 0.2);
  EXPECT_DOUBLE_EQ(a.recall_random, 0.5);
  double s5 = 0, s3 = 0;
  for (int i = 1; i <= 5; ++i) s5 += 1 / std::log2(i + 1.0);
  for (int i = 1; i <= 3; ++i) s3 += 1 / std::log2(i + 1.0);
  EXPECT_NEAR(a.ndcg_random, 0.3 * s5 / s3, 1e-12);
  auto b = evaluate_consistency(ds, worst, o);
  EXPECT_DOUBLE_EQ(b.top1_accuracy, 0.0);
  EXPECT_DOUBLE_EQ(b.ndcg, 0.0);  // 7 negatives fill the top 5
  EXPECT_DOUBLE_EQ(b.recall, 0.0);
  // A seeded sample of users; the same seed gives the same result.
  o.max_users = 7;
  EXPECT_EQ(evaluate_consistency(ds, best, o).users_behaviour, 7u);
  // Too few users for 4 negatives.
  auto tiny = consistency_dataset(3);
  EXPECT_THROW(evaluate_consistency(tiny, best, ConsistencyOptions{}), DataError);
}

TEST(Consistency, EmbeddingJudgeMatchesProfilesToTheirUsers) {
  auto ds = consistency_dataset(12);
  embed::HashingEmbedder embedder(256);
  EmbeddingJudge judge(embedder);
  auto r = evaluate_consistency(ds, judge, ConsistencyOptions{});
  EXPECT_EQ(r.judge, "embedding:" + embedder.name());
  EXPECT_GT(r.top1_accuracy, 0.9);
  EXPECT_GT(r.ndcg, 0.9);
  EXPECT_EQ(evaluate_consistency(ds, judge, ConsistencyOptions{}).top1_accuracy, r.top1_accuracy);
  EXPECT_NE(format_consistency(r).find("Profile-product: NDCG@5"), std::string::npos);
  auto j = nlohmann::json::parse(consistency_json(r));
  EXPECT_EQ(j["profile_behaviour"]["users"], 12);
}

TEST(Consistency, LlmJudgeReadsNumbersFromReplies) {
  test::OpenAITestServer server;
  llm::HttpChatModel model(llm::testing::make_endpoint(llm::testing::fast_config(server)));
  LlmJudge judge(model, "gpt-4o-mini", std::nullopt);
  std::vector<std::string> five = {"a", "b", "c", "d", "e"};
  server.push(test::ScriptedReply::text("Shopper 3"));
  EXPECT_EQ(judge.pick_user("Gender: Female\n", five), 2);
  server.push(test::ScriptedReply::text("I cannot decide."));
  EXPECT_EQ(judge.pick_user("Gender: Female\n", five), -1);
  server.push(test::ScriptedReply::text("9"));  // out of range
  EXPECT_EQ(judge.pick_user("Gender: Female\n", five), -1);
  server.push(test::ScriptedReply::text("4, 2, 4, 17, 1"));  // repeats and unknown numbers are ignored
  EXPECT_EQ(judge.rank_products("p", five), (std::vector<int>{3, 1, 0, 2, 4}));
  EXPECT_EQ(judge.unusable_replies(), 2u);
  auto body = nlohmann::json::parse(server.requests()[0].body);
  std::string prompt = body["messages"][1]["content"];
  EXPECT_NE(prompt.find("Shopper 5:\ne"), std::string::npos) << prompt;
  EXPECT_EQ(body["temperature"], 0.0);

  // End to end on a dataset: the server always answers "1".
  auto ds = consistency_dataset(6);
  server.set_chat_handler([](const test::ReceivedRequest&) { return test::ScriptedReply::text("1"); });
  auto r = evaluate_consistency(ds, judge, ConsistencyOptions{});
  EXPECT_EQ(r.users_behaviour, 6u);
  EXPECT_EQ(r.judge, "llm:gpt-4o-mini");
}

}  // namespace
}  // namespace pwab::construct
