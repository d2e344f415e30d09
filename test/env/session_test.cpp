// The environment on the hand-written fixture: observations, argument errors, endings and rewards that do not
// need the search index or the recommender (those are covered with the real services in backends_test.cpp).
#include "env/environment.h"

#include <gtest/gtest.h>

#include "data/loader.h"
#include "data/render.h"
#include "env/tools.h"
#include "support/test_support.h"

namespace pwab::env {
namespace {

class EnvFixture : public ::testing::Test {
 protected:
  EnvFixture() : ds_(data::load_dataset(test::fixture("data/original"))), env_(ds_, nullptr, nullptr, embedder_) {}
  const data::Task& task(data::Split s, int i) { return ds_.tasks(s)[static_cast<std::size_t>(i)]; }
  data::Dataset ds_;
  embed::HashingEmbedder embedder_;
  Environment env_;
};

TEST_F(EnvFixture, InitialObservation) {
  // test[1] is a search task of user 2; train[1] a review task of user 1.
  EXPECT_EQ(initial_observation(ds_, task(data::Split::kTest, 1)),
            "USER AG2FIXTUREUSERTWO00000000002: I need cheap wireless earbuds, black, long battery life.");
  std::string review = initial_observation(ds_, task(data::Split::kTrain, 1));
  EXPECT_EQ(review, "USER AG1FIXTUREUSERONE00000000001: Write a review for the cutting board: heavy, well made, five "
                    "stars.\nThe product details follow: \n- Title: Rustic Oak Cutting Board\n- Parent Asin: "
                    "B0FIXTURE4\n- Average Rating: 4.7\n- Rating Number: 402\n- Price: 20\n- Store: Oakly Home\n- "
                    "Features: ['Solid oak', 'Juice groove']\n- Description: ['Made to last.', 'Hand wash only.']\n- "
                    "Details: {\"Material\": \"Oak\", \"Dimensions\": \"18 x 12 inches\"}\n- Category: Amazon Home\n");
}

TEST_F(EnvFixture, DetailsToolRendersOrSaysNotFound) {
  ToolOutput out = env_.call_tool(kProductDetails, R"({"product_asin": "B0FIXTURE2"})");
  EXPECT_EQ(out.observation(),
            "\nProduct Details:\n- Title: Kelmora Over-Ear Headphones\n- Parent Asin: B0FIXTURE2\n- Average Rating: 5\n"
            "- Rating Number: 12\n- Price: $12.99\n- Store: None\n- Features: []\n- Description: []\n"
            "- Details: \"{\\\"Brand\\\": \\\"Kelmora\\\", \\\"Color\\\": \\\"White\\\"}\"\n- Category: All Electronics\n");
  EXPECT_EQ(env_.call_tool(kProductDetails, R"({"product_asin": "B0NOPE"})").observation(), "Product not found.");
}

TEST_F(EnvFixture, ReviewObservationIsAPythonDict) {
  ToolOutput out = env_.call_tool(kAddReview, R"({"review": "It's great"})");
  EXPECT_EQ(out.observation(), "{'review': \"It's great\"}");
  EXPECT_EQ(env_.call_tool(kAddReview, R"({"review": ""})").text, "No review provided.");
}

TEST_F(EnvFixture, EveryBadArgumentClassIsAnErrorObservation) {
  struct Case {
    std::string_view tool, args, expected;
  };
  const Case cases[] = {
      {kSearch, R"({})", "Error: search_product_by_query() is missing the required argument 'query'"},
      {kSearch, R"({"query": "x", "limit": 5})", "Error: search_product_by_query() got an unexpected argument 'limit'"},
      {kSearch, R"({"query": 5})", "Error: search_product_by_query() argument 'query' must be a string, got an integer"},
      {kSearch, R"(["x"])", "Error: search_product_by_query() takes its arguments as a JSON object, got a list"},
      {kSearch, R"({"query": )", "Error: search_product_by_query() arguments are not valid JSON"},
      {kRecommend, R"({"product_sequence": "B0FIXTURE1"})",
       "Error: get_recommendations_by_history() argument 'product_sequence' must be a list of strings, got a string"},
      {kRecommend, R"({"product_sequence": ["B0FIXTURE1", 3]})",
       "Error: get_recommendations_by_history() argument 'product_sequence' must be a list of strings; element 1 is "
       "an integer"},
      {kAddReview, R"({"review": null})", "Error: add_product_review() argument 'review' must be a string, got null"},
      {kStop, R"({"now": true})", "Error: stop() got an unexpected argument 'now'"},
  };
  for (const auto& c : cases) {
    Session s(env_, task(data::Split::kTest, 1));
    s.reset();
    StepResult r = s.step({std::string(c.tool), std::string(c.args)});
    EXPECT_EQ(r.observation, c.expected);
    EXPECT_EQ(r.reward, Reward{});
    EXPECT_FALSE(r.scored);
    // A task function with bad arguments still ends the episode (function accuracy 0 for the attempt).
    EXPECT_EQ(r.done, c.tool != kStop);
  }
}

TEST_F(EnvFixture, EndingsOfEachAction) {
  Session s(env_, task(data::Split::kTest, 1));
  s.reset();
  StepResult unknown = s.step({"buy_now", "{}"});
  EXPECT_EQ(unknown.observation, "Unknown action buy_now");
  EXPECT_FALSE(unknown.done);
  StepResult details = s.step({std::string(kProductDetails), R"({"product_asin": "B0FIXTURE1"})"});
  EXPECT_FALSE(details.done);
  StepResult stop = s.step({std::string(kStop), "{}"});
  EXPECT_EQ(stop.observation, "###STOP###");
  EXPECT_FALSE(stop.done);  // the agent loop, not the environment, ends on stop
  StepResult respond = s.step({"respond", R"({"content": "Which colour?"})"});
  EXPECT_EQ(respond.observation, "Error: ###STOP###");  // single-turn: nobody answers
  EXPECT_TRUE(respond.done);
  EXPECT_FALSE(respond.scored);
  EXPECT_EQ(s.actions().size(), 4u);
}

TEST_F(EnvFixture, RespondGoesToTheUser) {
  struct Echo : UserChannel {
    std::string reply(const std::string& m) override { return "you said: " + m; }
  } user;
  Session s(env_, task(data::Split::kTest, 1), &user);
  StepResult r = s.step({"respond", R"({"content": "Black ones?"})"});
  EXPECT_EQ(r.observation, "you said: Black ones?");
  EXPECT_FALSE(r.done);
}

TEST_F(EnvFixture, ReviewRewardIsTheEmbeddingCosine) {
  const data::Task& t = task(data::Split::kTest, 2);  // review task, true text "Looks great in my kitchen."
  Session s(env_, t);
  StepResult exact = s.step({std::string(kAddReview), R"({"review": "Looks great in my kitchen."})"});
  EXPECT_TRUE(exact.done);
  EXPECT_TRUE(exact.scored);
  EXPECT_EQ(exact.reward.function_acc, 1.0);
  EXPECT_NEAR(exact.reward.result_acc, 1.0, 1e-6);
  Session s2(env_, t);
  StepResult other = s2.step({std::string(kAddReview), R"({"review": "Terrible battery, returned it."})"});
  EXPECT_LT(other.reward.result_acc, 0.5);
  // A review on a search task: right output shape, wrong function → F = 0, R = 0.
  Session s3(env_, task(data::Split::kTest, 1));
  StepResult wrong = s3.step({std::string(kAddReview), R"({"review": "Fine for the price."})"});
  EXPECT_EQ(wrong.reward, Reward{});
  EXPECT_TRUE(wrong.scored);
}

TEST(RankScore, FormulaEdgeCases) {
  std::vector<std::string> ten;
  for (int i = 0; i < 10; ++i) ten.push_back("Product " + std::to_string(i) + ": \n- Parent Asin: B0ITEM" + std::to_string(i) + "\n");
  EXPECT_DOUBLE_EQ(rank_score(ten, "B0ITEM0"), 1.0);   // rank 1 of 10
  EXPECT_DOUBLE_EQ(rank_score(ten, "B0ITEM1"), 0.9);
  EXPECT_NEAR(rank_score(ten, "B0ITEM9"), 0.1, 1e-12);  // rank 10 of 10
  EXPECT_DOUBLE_EQ(rank_score(ten, "B0MISSING"), 0.0);  // absent
  std::vector<std::string> three(ten.begin(), ten.begin() + 3);
  EXPECT_NEAR(rank_score(three, "B0ITEM1"), 1.0 - 1.0 / 3, 1e-12);  // fewer than 10: N is the actual count
  EXPECT_DOUBLE_EQ(rank_score({}, "B0ITEM1"), 0.0);                  // empty list
  EXPECT_DOUBLE_EQ(rank_score(ten, ""), 0.0);
  // Only the first occurrence counts.
  std::vector<std::string> dup = {"a B0X", "B0X again"};
  EXPECT_DOUBLE_EQ(rank_score(dup, "B0X"), 1.0);
}

TEST_F(EnvFixture, ServicesNotConfiguredIsAnErrorNotACrash) {
  Session s(env_, task(data::Split::kTest, 1));
  StepResult r = s.step({std::string(kSearch), R"({"query": "earbuds"})"});
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.observation.rfind("Error: ", 0), 0u);
  EXPECT_EQ(r.reward, Reward{});
}

TEST_F(EnvFixture, VisibleHistoryIsUsedForNothingElse) {
  // The environment's observations and rewards depend on the task and the catalogue only: removing every
  // behaviour of the user (past and future) changes nothing.
  data::Dataset stripped = ds_;
  for (data::UserId u = 0; u < stripped.users().size(); ++u) stripped.mutable_user(u).behaviours.clear();
  Environment env2(stripped, nullptr, nullptr, embedder_);
  for (data::Split split : {data::Split::kTrain, data::Split::kTest}) {
    for (std::size_t i = 0; i < ds_.tasks(split).size(); ++i) {
      const auto& a = ds_.tasks(split)[i];
      const auto& b = stripped.tasks(split)[i];
      EXPECT_EQ(initial_observation(ds_, a), initial_observation(stripped, b));
      Session s1(env_, a), s2(env2, b);
      for (const Action& act : {Action{std::string(kAddReview), R"({"review": "Heavy and well made."})"},
                                Action{std::string(kProductDetails), R"({"product_asin": "B0FIXTURE3"})"}}) {
        StepResult r1 = s1.step(act), r2 = s2.step(act);
        EXPECT_EQ(r1.observation, r2.observation);
        EXPECT_EQ(r1.reward, r2.reward);
      }
    }
  }
}

}  // namespace
}  // namespace pwab::env
