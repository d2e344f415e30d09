// The heuristic's text rules on their own: query cleaning, review composition, reading the scripted user's
// replies, the questions it asks, and the recommendation input (time order, ≤ 30, docs/decisions.md D8 fallback).
#include "agents/heuristic_policy.h"

#include <gtest/gtest.h>

#include "core/text.h"
#include "data/synth.h"
#include "env/tools.h"
#include "sim/scripted_user.h"

namespace pwab::agents {
namespace {

const data::Dataset& mini() {
  static const data::Dataset ds = data::synthesize(data::SynthOptions{});
  return ds;
}

TEST(HeuristicPolicy, SearchTermsKeepDescriptorsOnly) {
  EXPECT_EQ(search_terms_of_instruction(
                "Hello! I'm looking for a premium teal throw blanket in chevron! What I care about most: no shedding. "
                "Something in the spirit of the Tamprakor Co. frying pan I bought before would be great. Something "
                "around $15 would be fine."),
            "premium teal throw blanket chevron shedding");
  EXPECT_EQ(search_terms_of_instruction("Can you find me a 2.4ghz wireless keyboard in rose gold! Must have: satisfying "
                                        "switches. It's for gaming. Quality matters most to me."),
            "2.4ghz wireless keyboard rose gold satisfying switches gaming");
  // The request keeps a price it names; a separate price sentence goes.
  EXPECT_EQ(search_terms_of_instruction("I need a cheap USB-C cable. My budget is under $10."), "cheap USB-C cable");
  EXPECT_EQ(search_terms_of_instruction("Hi!"), "");
}

TEST(HeuristicPolicy, BrandNamedOrNot) {
  EXPECT_TRUE(instruction_names_brand("Please search for a comforter from Dranel & Co. in walnut brown.", {}));
  EXPECT_FALSE(instruction_names_brand("It's something from the kitchen.", {}));
}

TEST(HeuristicPolicy, ReviewFromTheInstructionAlone) {
  HeuristicPolicy p;
  std::string r = build_review(
      "Hi! Please post a review of my Abren Co. t-shirt. I liked it overall! I'd give it 4 stars. Mention that the fit "
      "and packaging were great, but the thickness was a letdown. Keep it positive, detailed.",
      nullptr, {}, mini(), {}, p);
  EXPECT_EQ(r, "I liked it overall! The fit is great. The packaging is great. The thickness was a letdown.");
}

TEST(HeuristicPolicy, ReviewReusesTheUsersOwnPhrasingAndHabits) {
  // A user whose past reviews say "This <store> <item> is a keeper." and "Would buy again." every time.
  const data::Dataset& ds = mini();
  data::Dataset own;
  std::vector<data::Behaviour> past;
  std::vector<const data::Behaviour*> history;
  for (data::ProductId id = 0; id < 3; ++id) {
    const data::Product& p = ds.product(id);
    data::Behaviour b;
    b.product = id;
    b.review.rating = py::Scalar::of_float(5.0);
    b.review.text = "This " + p.store.value_or("X") + " thing is a keeper. Really happy with the fit, it is solid. Would buy again.";
    past.push_back(b);
  }
  for (const auto& b : past) history.push_back(&b);
  const data::Product& reviewed = ds.product(5);
  HeuristicPolicy p;
  std::string r = build_review("Please post a review of my gadget. I absolutely love it! Mention that the fit was great.",
                               &reviewed, history, ds, {}, p);
  std::string name = reviewed.store.value_or("") + " gadget";
  EXPECT_NE(r.find("This " + name + " is a keeper."), std::string::npos) << r;
  EXPECT_NE(r.find("Really happy with the fit, it is solid."), std::string::npos) << r;
  EXPECT_NE(r.find("Would buy again."), std::string::npos) << r;
  // Without the habits and own phrasing: the plain sentences.
  p.review_habits = false;
  p.review_own_phrasing = false;
  EXPECT_EQ(build_review("Please post a review of my gadget. I absolutely love it! Mention that the fit was great.",
                         &reviewed, history, ds, {}, p),
            "I absolutely love it! The fit is great.");
}

TEST(HeuristicPolicy, ReadsTheScriptedUsersClues) {
  Clues c;
  EXPECT_TRUE(fold_reply("Sure. I'd like it to be from Voltrix Labs.", data::TaskType::kSearch, c));
  EXPECT_EQ(c.brand, "Voltrix Labs");
  EXPECT_TRUE(fold_reply("That's not it, none of those is what I'm looking for. It's something from Amazon Home, in "
                         "Kitchen & Dining. Also, the color should be Red, and my budget is under $30.",
                         data::TaskType::kSearch, c));
  EXPECT_EQ(c.category, "Amazon Home, in Kitchen & Dining");
  // Content words reach the query; the price clause does not.
  std::string terms = join(c.search_terms, " ");
  EXPECT_NE(terms.find("Red"), std::string::npos) << terms;
  EXPECT_NE(terms.find("Kitchen"), std::string::npos) << terms;
  EXPECT_EQ(terms.find("30"), std::string::npos) << terms;
  EXPECT_FALSE(fold_reply("Yes, that's what I wanted, thank you! I'm happy with it, we can stop here.", data::TaskType::kSearch, c));
  EXPECT_TRUE(c.satisfied);

  Clues r;
  EXPECT_TRUE(fold_reply("That's close, but not quite how I'd put it. Overall I liked it, I'd give it four stars.",
                         data::TaskType::kReview, r));
  EXPECT_EQ(r.stars, 4);
  fold_reply("I want to point out the problem with the zipper. Also, I want to praise the water pressure, and the fit "
             "was just okay, worth a mention.", data::TaskType::kReview, r);
  ASSERT_EQ(r.aspects.size(), 3u);
  EXPECT_EQ(r.aspects[0], (std::pair<std::string, int>{"zipper", -1}));
  EXPECT_EQ(r.aspects[1], (std::pair<std::string, int>{"water pressure", 1}));
  EXPECT_EQ(r.aspects[2], (std::pair<std::string, int>{"fit", 0}));
  fold_reply("Keep it short, a couple of sentences and make it sound positive.", data::TaskType::kReview, r);
  EXPECT_EQ(r.length, Clues::Length::kShort);
  Clues e;
  EXPECT_FALSE(fold_reply("I don't have anything more to add, that's all I can tell you.", data::TaskType::kSearch, e));
  EXPECT_TRUE(e.exhausted);
}

TEST(HeuristicPolicy, QuestionsAreRoutedToUsefulHints) {
  // Each question, sent to a scripted user, is answered with the hint kind it asks for.
  const data::Dataset& ds = mini();
  const data::Task* search = nullptr;
  for (const auto& t : ds.tasks(data::Split::kTest))
    if (t.type == data::TaskType::kSearch && ds.product(t.target_product).store) search = &t;
  ASSERT_TRUE(search);
  sim::ScriptedUser user(ds, *search, 1);
  Clues c;
  std::vector<std::string> asked;
  std::string q = next_question(data::TaskType::kSearch, c, asked, false);
  EXPECT_EQ(q, "Which brand or store would you like it from?");
  std::string reply = user.reply(q);
  EXPECT_NE(reply.find("from " + *ds.product(search->target_product).store), std::string::npos) << reply;
  asked.push_back(q);
  fold_reply(reply, data::TaskType::kSearch, c);
  EXPECT_EQ(next_question(data::TaskType::kSearch, c, asked, false), "Is there a particular color, size or material you want?");
  EXPECT_EQ(next_question(data::TaskType::kReview, {}, {}, false), "Which aspects should I highlight, any pros or cons?");
  // Everything asked: the open question.
  asked = {"Which aspects should I highlight, any pros or cons?", "Is there another aspect worth a mention, good or bad?",
           "How long should it be, and in what tone?"};
  EXPECT_EQ(next_question(data::TaskType::kReview, {}, asked, false), "Anything else I should mention?");
}

TEST(HeuristicPolicy, RecommendSequenceTimeOrderAtMost30) {
  const data::Dataset& ds = mini();
  // The user with the longest history.
  data::UserId u = 0;
  for (data::UserId i = 0; i < ds.users().size(); ++i)
    if (ds.user(i).behaviours.size() > ds.user(u).behaviours.size()) u = i;
  auto history = ds.visible_history(u, INT64_MAX);
  ASSERT_GT(history.size(), 30u);
  HeuristicPolicy p;
  auto seq = build_recommend_sequence(ds, history, {}, {}, p);
  ASSERT_EQ(seq.size(), 30u);
  EXPECT_EQ(seq.back(), ds.product(history.back()->product).parent_asin);  // most recent last
  EXPECT_EQ(seq.front(), ds.product(history[history.size() - 30]->product).parent_asin);
  // A clued category keeps that category's items; one no item has falls back to all of them (docs/decisions.md D8 (a)).
  Clues c;
  c.category = ds.product(history.front()->product).main_category;
  auto same = build_recommend_sequence(ds, history, {}, c, p);
  for (const auto& asin : same) EXPECT_EQ(ds.product(*ds.find_product(asin)).main_category, c.category);
  c.category = "Nothing Like This";
  EXPECT_EQ(build_recommend_sequence(ds, history, {}, c, p), seq);
  EXPECT_TRUE(build_recommend_sequence(ds, {}, {}, {}, p).empty());
}

}  // namespace
}  // namespace pwab::agents
