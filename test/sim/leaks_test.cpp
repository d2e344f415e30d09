// The one definition of a leak (sim/leaks.h): words, shared runs, the ASIN, title runs, review quotes, and what
// the scripted user gives away by design on the mini synthetic dataset.
#include "sim/leaks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/loader.h"
#include "data/synth.h"
#include "sim/scripted_user.h"
#include "support/test_support.h"

namespace pwab::sim {
namespace {

using Words = std::vector<std::string>;

bool contains_text(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const data::Dataset& fixture() {
  static const data::Dataset ds = data::load_dataset(test::fixture("data/original"));
  return ds;
}

// Fixture test tasks: 0 recommends "Kelmora Over-Ear Headphones", 1 searches "Voltrix Wireless Earbuds - Black,
// 40H Playtime" (B0FIXTURE1), 2 reviews "Rustic Oak Cutting Board" (B0FIXTURE4) with the 5-word review "Looks great
// in my kitchen." titled "Nice".
const data::Task& search_task() { return fixture().tasks(data::Split::kTest)[1]; }
const data::Task& review_task() { return fixture().tasks(data::Split::kTest)[2]; }

//! The review task with a review long enough to be quoted.
data::Task long_review_task() {
  data::Task t = review_task();
  t.target_review.text = "The board is heavy and the oak grain looks gorgeous on my counter every single day.";
  t.target_review.title = "Best cutting board I have ever owned";
  return t;
}

TEST(Leaks, WordsAreLowerCasedRunsOfLettersAndDigits) {
  EXPECT_EQ(leak_words("Voltrix Wireless-Earbuds -- BLACK, 40H!"),
            (Words{"voltrix", "wireless", "earbuds", "black", "40h"}));
  // Non-ASCII letters stay inside words; non-ASCII punctuation and symbols separate them like ASCII ones.
  EXPECT_EQ(leak_words("Café Moreno™ — 12 oz"), (Words{"café", "moreno", "12", "oz"}));
  EXPECT_EQ(leak_words("Earbuds\u2014Black \u201cPro\u201d\u2026 don\u2019t\u00a0stop \u00bbx\u00d7y\u00ab"),
            (Words{"earbuds", "black", "pro", "don", "t", "stop", "x", "y"}));
  EXPECT_EQ(leak_words("\u00fcber \u4e2d\u6587 na\u00efve"), (Words{"\u00fcber", "\u4e2d\u6587", "na\u00efve"}));
  EXPECT_TRUE(leak_words(" ,.;-- ").empty());
  EXPECT_TRUE(leak_words("").empty());
}

TEST(Leaks, SharedRunNeedsNConsecutiveWordsOrTheWholeShortSource) {
  const Words source = {"rustic", "oak", "cutting", "board"};
  EXPECT_EQ(shared_run({"a", "rustic", "oak", "cutting", "board", "b"}, source, 4), "rustic oak cutting board");
  EXPECT_EQ(shared_run({"rustic", "oak", "cutting", "table"}, source, 4), "");
  EXPECT_EQ(shared_run({"oak", "cutting", "board"}, source, 3), "oak cutting board");
  // Not consecutive in the text: no run.
  EXPECT_EQ(shared_run({"rustic", "oak", "and", "cutting", "board"}, source, 3), "");
  // A source shorter than n must appear whole.
  EXPECT_EQ(shared_run({"my", "oak", "board"}, {"oak", "board"}, 4), "oak board");
  EXPECT_EQ(shared_run({"my", "oak"}, {"oak", "board"}, 4), "");
  EXPECT_EQ(shared_run({}, source, 4), "");
  EXPECT_EQ(shared_run(source, {}, 4), "");
  EXPECT_EQ(shared_run(source, source, 0), "");
}

TEST(Leaks, AsinInAnyCaseButOnlyAsAWholeWord) {
  const data::Task& t = search_task();
  Leak leak = find_leak("I think it's b0fixture1, right?", fixture(), t);
  EXPECT_TRUE(leak.any());
  EXPECT_TRUE(leak.asin);
  EXPECT_FALSE(leak.title);
  EXPECT_EQ(leak.evidence, "B0FIXTURE1");  // as the product has it
  EXPECT_TRUE(find_leak("Item B0FIXTURE1.", fixture(), t).asin);
  EXPECT_FALSE(find_leak("Item XB0FIXTURE1 or B0FIXTURE12", fixture(), t).any());
}

TEST(Leaks, FourTitleWordsAcrossPunctuationAndCaseButNotThree) {
  const data::Task& t = search_task();
  // "Voltrix Wireless Earbuds - Black, 40H Playtime": the dash and comma do not break the run.
  Leak leak = find_leak("I'd love WIRELESS earbuds... black; 40h would be ideal", fixture(), t);
  EXPECT_TRUE(leak.title);
  EXPECT_FALSE(leak.asin);
  EXPECT_EQ(leak.evidence, "wireless earbuds black 40h");
  EXPECT_FALSE(find_leak("Voltrix wireless earbuds, please.", fixture(), t).any());  // three words
  EXPECT_FALSE(find_leak("Voltrix earbuds, wireless and black.", fixture(), t).any());  // not consecutive
  // Both: the ASIN is the evidence.
  leak = find_leak("B0FIXTURE1, the Voltrix Wireless Earbuds Black", fixture(), t);
  EXPECT_TRUE(leak.asin && leak.title);
  EXPECT_EQ(leak.evidence, "B0FIXTURE1");
  // A longer rule asks for more.
  EXPECT_FALSE(find_leak("wireless earbuds black 40h", fixture(), t, LeakRule{5, 6}).any());
  EXPECT_TRUE(find_leak("wireless earbuds black 40h playtime", fixture(), t, LeakRule{5, 6}).title);
}

TEST(Leaks, ReviewTasksLeakSixWordsOfTheTrueReviewNotTheTitle) {
  const data::Task t = long_review_task();
  Leak leak = find_leak("Well, THE OAK GRAIN looks gorgeous, on my counter.", fixture(), t);
  EXPECT_TRUE(leak.review);
  EXPECT_FALSE(leak.title || leak.asin);
  EXPECT_EQ(leak.evidence, "the oak grain looks gorgeous on");
  EXPECT_FALSE(find_leak("the oak grain looks gorgeous to me", fixture(), t).any());  // five words
  // The review's own title counts when it is long enough.
  EXPECT_EQ(find_leak("honestly the best cutting board i have ever owned", fixture(), t).evidence,
            "best cutting board i have ever");
  // The product is named by a review task's instruction: its title and ASIN are not leaks there.
  EXPECT_FALSE(find_leak("My Rustic Oak Cutting Board, B0FIXTURE4, is great.", fixture(), t).any());
  // A review (or review title) shorter than the rule is ordinary phrasing, even when said whole.
  const data::Task& short_review = review_task();
  EXPECT_FALSE(find_leak("It looks great in my kitchen. Nice!", fixture(), short_review).any());
  EXPECT_TRUE(find_leak("It looks great in my kitchen.", fixture(), short_review, LeakRule{4, 5}).review);
}

TEST(Leaks, TheStopSentinelAndEmptyTextLeakNothing) {
  EXPECT_FALSE(find_leak("###STOP###", fixture(), search_task()).any());
  EXPECT_FALSE(find_leak("", fixture(), search_task()).any());
  EXPECT_FALSE(find_leak("###STOP###", fixture(), long_review_task()).any());
}

TEST(Leaks, ScriptedUserNeverGivesTheTargetAwayOnTheMiniDataset) {
  // By design (docs/simulator.md "Leaks and the guard"): never the ASIN or 4 title words. Its review hints are
  // drawn from the true review but quote at most "the" and one aspect phrase, which in these reviews stays
  // under six words.
  const data::Dataset ds = data::synthesize(data::SynthOptions{});
  const std::vector<std::string> questions = {
      "What did you think of it?", "Which aspects should the review mention?", "What did you like or dislike?",
      "How long should the review be?", "What category is it?", "What is your budget?", "Which brand?",
      "What features do you need?", "What colour?", "Can you tell me more?", "Anything else?", "And?", "More?"};
  int replies = 0, review_tasks = 0;
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const data::Task& t : ds.tasks(split)) {
      review_tasks += t.type == data::TaskType::kReview;
      ScriptedUser user(ds, t, 7);
      for (const auto& q : questions) {
        std::string reply = user.reply(q);
        ++replies;
        Leak leak = find_leak(reply, ds, t);
        EXPECT_FALSE(leak.any()) << data::task_key(t) << ": " << reply << " [" << leak.evidence << "]";
      }
    }
  EXPECT_GT(review_tasks, 10);
  EXPECT_GT(replies, 1000);
}

TEST(Leaks, ScriptedUserCanQuoteSixReviewWordsWhenAnAspectClauseMatchesTheReview) {
  // Not by design but possible: an aspect hint is "the <aspect>" plus fixed words, and a neutral one ends "was just
  // okay". A review sentence that says exactly that is quoted for seven words (the evidence is the first six).
  data::Task t = review_task();
  t.target_review.text = "The zipper pull tab was just okay.";
  ScriptedUser user(fixture(), t, 1);
  std::string said;
  for (int i = 0; i < 4; ++i) said += user.reply("Which aspects should the review mention?") + "\n";
  EXPECT_TRUE(contains_text(said, "The zipper pull tab was just okay")) << said;
  EXPECT_EQ(find_leak(said, fixture(), t).evidence, "the zipper pull tab was just") << said;
}

}  // namespace
}  // namespace pwab::sim
