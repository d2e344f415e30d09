// The LLM user simulator against the real loopback OpenAI server (test/support/openai_test_server.h): the exact
// requests (system prompt, role-flipped dialogue, sampling), history growth, the stop sentinel, empty replies,
// errors that must reach the runner, the ledger, and one whole multi-turn episode through runner::run_episode.
#include "sim/llm_user.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/render.h"
#include "embed/embedder.h"
#include "env/tools.h"
#include "llm/http_chat_model.h"
#include "llm/ledger.h"
#include "llm/llm_test_util.h"
#include "llm/response_cache.h"
#include "runner/episode.h"
#include "sim/scripted_user.h"
#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace pwab::sim {
namespace {

using json = nlohmann::json;
using test::OpenAITestServer;
using test::ScriptedReply;

constexpr const char* kModel = "gpt-4o-mini";

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

class LlmUserTest : public ::testing::Test {
 protected:
  LlmUserTest()
      : ds_(data::load_dataset(test::fixture("data/original"))),
        model_(llm::testing::make_endpoint(llm::testing::fast_config(server_))) {}

  const data::Task& recommend_task() { return ds_.tasks(data::Split::kTest)[0]; }  // user 1
  const data::Task& search_task() { return ds_.tasks(data::Split::kTest)[1]; }     // user 2
  const data::Task& review_task() { return ds_.tasks(data::Split::kTest)[2]; }     // user 3, no Focus Aspect
  const data::Product& target(const data::Task& t) { return ds_.product(t.target_product); }

  //! The JSON body of the i-th request the server received.
  json body(std::size_t i) { return json::parse(server_.requests().at(i).body); }

  OpenAITestServer server_;
  data::Dataset ds_;
  llm::HttpChatModel model_;
};

// --- the prompt --------------------------------------------------------------------------------------------

TEST_F(LlmUserTest, ProfileRendersElevenLinesInFileOrder) {
  const data::User& u = ds_.user(search_task().user);
  std::string p = render_user_profile(u.profile);
  ASSERT_EQ(p.front(), '\n');
  ASSERT_EQ(p.back(), '\n');
  std::vector<std::string> lines;
  std::size_t start = 1;
  for (std::size_t nl; (nl = p.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(p.substr(start, nl - start));
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[0], "- Gender: Male");
  EXPECT_EQ(lines[1], "- Age: 35-44");
  EXPECT_EQ(lines[2], "- Occupation: Other");
  // Price Sensitivity Medium, Diversity Preference Medium, Interaction Complexity High: archetype sentences.
  EXPECT_TRUE(lines[3].starts_with("- You are a balanced buyer"));
  EXPECT_EQ(lines[4], "- What you like to shop for: Running, supplements");
  EXPECT_EQ(lines[5], "- Brands you lean towards: Trailpace, Zenra Naturals");
  EXPECT_TRUE(lines[6].starts_with("- You are a moderately curious shopper"));
  EXPECT_TRUE(lines[7].starts_with("- You are a conversationalist who loves detail"));
  EXPECT_EQ(lines[8], "- How you usually express yourself: Positive, detailed, practical");
  EXPECT_EQ(lines[9], "- What you tend to mention: Specific products and brands mentioned in reviews");
  EXPECT_EQ(lines[10], "- What you care about most: Comfort, Quality");
}

TEST_F(LlmUserTest, ProfileMissingFieldRendersEmptyAndUnknownLevelLeavesItsLineOut) {
  // Fixture user 3 has no Focus Aspect (a validator warning): the line stays, empty.
  std::string p = render_user_profile(ds_.user(review_task().user).profile);
  EXPECT_TRUE(contains(p, "- What you care about most: \n"));
  EXPECT_TRUE(contains(p, "- You are a no-frills communicator"));  // Interaction Complexity Low

  data::Profile odd = ds_.user(search_task().user).profile;
  for (auto& [k, v] : odd.fields) {
    if (k == "Price Sensitivity") v = "Extreme";
    if (k == "Diversity Preference") v = "  low ";  // case and spaces do not matter
  }
  std::string q = render_user_profile(odd);
  EXPECT_FALSE(contains(q, "deal hunter"));
  EXPECT_FALSE(contains(q, "balanced buyer"));
  EXPECT_TRUE(contains(q, "- You are a cautious, selective shopper"));
  EXPECT_EQ(std::count(q.begin(), q.end(), '\n'), 11);  // leading newline + 10 lines
  EXPECT_EQ(render_user_profile(data::Profile{}).find("- You are"), std::string::npos);
}

TEST_F(LlmUserTest, FirstRequestIsTheRoleFlippedDialogueWithProfileAndTarget) {
  const data::Task& task = search_task();
  LlmUser user(ds_, task, model_, kModel);
  server_.push(ScriptedReply::text("Something wireless I can run with, and not too pricey.", 321, 14));
  std::string reply = user.reply("What kind of earbuds are you looking for?");
  EXPECT_EQ(reply, "Something wireless I can run with, and not too pricey.");

  ASSERT_EQ(server_.n_requests(), 1u);
  json b = body(0);
  EXPECT_EQ(b["model"], kModel);
  EXPECT_EQ(b["temperature"], 1.0);
  EXPECT_EQ(b["max_tokens"], 150);
  EXPECT_FALSE(b.contains("seed"));
  EXPECT_FALSE(b.contains("tools"));
  EXPECT_FALSE(b.contains("tool_choice"));

  // Exactly: system prompt, the agent's greeting as "user", the instruction as the simulator's own "assistant"
  // turn, then the agent's message as "user".
  const json& m = b["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[1], json({{"role", "user"}, {"content", LlmUser::kGreeting}}));
  EXPECT_EQ(m[2], json({{"role", "assistant"}, {"content", task.instruction}}));
  EXPECT_EQ(m[3], json({{"role", "user"}, {"content", "What kind of earbuds are you looking for?"}}));

  const std::string system = m[0]["content"];
  EXPECT_EQ(system, llm_user_system_prompt(ds_, task));
  EXPECT_EQ(system, user.system_prompt());
  // The profile, as rendered, and every profile value.
  const data::User& u = ds_.user(task.user);
  EXPECT_TRUE(contains(system, "Who you are:\n" + render_user_profile(u.profile) + "\n\n"));
  for (const auto& [k, v] : u.profile.fields) {
    if (k != "Price Sensitivity" && k != "Diversity Preference" && k != "Interaction Complexity") {
      EXPECT_TRUE(contains(system, v)) << k;
    }
  }
  // The target, as the environment renders products (title and ASIN included), under the "wanted" label.
  const data::Product& p = target(task);
  EXPECT_TRUE(contains(system, "The product you have in mind:\n\n" + data::product_fields_block(p) + "\n\n\n"));
  EXPECT_TRUE(contains(system, "- Title: " + p.title));
  EXPECT_TRUE(contains(system, "- Parent Asin: " + p.parent_asin));
  EXPECT_FALSE(contains(system, "review you wrote"));
  EXPECT_FALSE(contains(system, task.target_review.text));
  // Layout: opening line, blank line, ..., "Rules:" and seven rules; no stop rule by default (as the original).
  EXPECT_TRUE(system.starts_with("You are playing a shopper"));
  auto rules = system.substr(system.find("\n\nRules:\n") + 9);
  EXPECT_EQ(std::count(rules.begin(), rules.end(), '\n'), 6);
  EXPECT_TRUE(rules.starts_with("- Each turn, write one single line"));
  EXPECT_FALSE(contains(system, kStopSentinel));

  EXPECT_EQ(user.usage().calls, 1);
  EXPECT_EQ(user.usage().prompt_tokens, 321);
  EXPECT_EQ(user.usage().completion_tokens, 14);
  EXPECT_EQ(user.usage().cached_calls, 0);
}

TEST_F(LlmUserTest, ReviewTaskPromptHoldsTheProductBoughtAndTheTrueReview) {
  const data::Task& task = review_task();
  LlmUser user(ds_, task, model_, kModel);
  server_.push(ScriptedReply::text("It looks lovely on my counter, I'd say."));
  user.reply("What did you like about it?");
  const std::string system = body(0)["messages"][0]["content"];
  EXPECT_EQ(system, llm_user_system_prompt(ds_, task));
  const data::Product& p = target(task);
  EXPECT_TRUE(contains(system, "A product you have bought:\n\n" + data::product_fields_block(p) + "\n\n\n"));
  EXPECT_TRUE(contains(system, "The review you wrote of it:\n" + task.target_review.text + "\n\n"));
  EXPECT_TRUE(contains(system, "Looks great in my kitchen."));
  EXPECT_FALSE(contains(system, "have in mind"));
  EXPECT_EQ(body(0)["messages"][2]["content"], task.instruction);
}

// --- the dialogue ------------------------------------------------------------------------------------------

TEST_F(LlmUserTest, HistoryGrowsByTheAgentsMessageAndTheReplyEachTurn) {
  LlmUser user(ds_, recommend_task(), model_, kModel);
  const std::vector<std::string> asked = {"What do you usually listen with?", "Any budget?", "Wired or wireless?"};
  const std::vector<std::string> said = {"Mostly over-ear ones at home.", "Cheap is fine.", "Either works."};
  for (std::size_t i = 0; i < asked.size(); ++i) {
    server_.push(ScriptedReply::text(said[i], 100 + static_cast<int>(i), 5));
    EXPECT_EQ(user.reply(asked[i]), said[i]);
  }
  ASSERT_EQ(server_.n_requests(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const json m = body(i)["messages"];
    ASSERT_EQ(m.size(), 4 + 2 * i);
    EXPECT_EQ(m[0], body(0)["messages"][0]);  // the same system prompt every time
    for (std::size_t t = 0; t <= i; ++t) {
      EXPECT_EQ(m[3 + 2 * t], json({{"role", "user"}, {"content", asked[t]}}));
      if (t < i) {
        EXPECT_EQ(m[4 + 2 * t], json({{"role", "assistant"}, {"content", said[t]}}));
      }
    }
  }
  EXPECT_EQ(user.messages().size(), 9u);
  EXPECT_EQ(user.messages().back().role, "assistant");
  EXPECT_EQ(user.messages().back().content, said[2]);
  EXPECT_EQ(user.usage().calls, 3);
  EXPECT_EQ(user.usage().prompt_tokens, 303);
  EXPECT_EQ(user.usage().completion_tokens, 15);
}

TEST_F(LlmUserTest, SeedAndSamplingOptionsAreSent) {
  LlmUserOptions o;
  o.temperature = 0.7;
  o.max_tokens = 64;
  o.seed = 42;
  LlmUser user(ds_, search_task(), model_, "my-model", o);
  server_.push(ScriptedReply::text("ok"));
  user.reply("hi");
  json b = body(0);
  EXPECT_EQ(b["model"], "my-model");
  EXPECT_EQ(b["temperature"], 0.7);
  EXPECT_EQ(b["max_tokens"], 64);
  EXPECT_EQ(b["seed"], 42);
  EXPECT_THROW(LlmUser(ds_, search_task(), model_, ""), UsageError);
  o.max_tokens = 0;
  EXPECT_THROW(LlmUser(ds_, search_task(), model_, kModel, o), UsageError);
}

TEST_F(LlmUserTest, StopSentinelFromTheModelPassesThroughUnchangedByDefault) {
  // The original's user has no stop rule; should the model write the sentinel anyway, it reaches the agent as is.
  LlmUser user(ds_, search_task(), model_, kModel);
  server_.push(ScriptedReply::text("###STOP###"));
  EXPECT_EQ(user.reply("Is that everything?"), "###STOP###");
  EXPECT_FALSE(user.stopped());
  server_.push(ScriptedReply::text("Well, one more thing."));
  EXPECT_EQ(user.reply("Anything else?"), "Well, one more thing.");
  EXPECT_EQ(server_.n_requests(), 2u);
}

TEST_F(LlmUserTest, StopRuleAsksForTheSentinelAndEndsTheUsersSide) {
  LlmUserOptions o;
  o.stop_rule = true;
  LlmUser user(ds_, search_task(), model_, kModel, o);
  EXPECT_TRUE(user.system_prompt().ends_with("reply with exactly ###STOP### and nothing else."));
  server_.push(ScriptedReply::text("These look right to me."));
  EXPECT_EQ(user.reply("Here are some options."), "These look right to me.");
  server_.push(ScriptedReply::text("Perfect, thanks! ###STOP###"));
  EXPECT_EQ(user.reply("Shall I keep looking?"), kStopSentinel);
  EXPECT_TRUE(user.stopped());
  // The model's own words stay in its history; later messages get the sentinel without a call.
  EXPECT_EQ(user.messages().back().content, "Perfect, thanks! ###STOP###");
  EXPECT_EQ(user.reply("Are you sure?"), kStopSentinel);
  EXPECT_EQ(server_.n_requests(), 2u);
  EXPECT_EQ(user.usage().calls, 2);
}

TEST_F(LlmUserTest, EmptyReplyIsAskedOnceMoreThenReplacedByTheNeutralLine) {
  LlmUserOptions o;
  o.seed = 7;
  LlmUser user(ds_, search_task(), model_, kModel, o);
  server_.push(ScriptedReply::text("", 50, 0));
  server_.push(ScriptedReply::text("Something for the gym.", 50, 6));
  EXPECT_EQ(user.reply("What is it for?"), "Something for the gym.");
  ASSERT_EQ(server_.n_requests(), 2u);
  // The retry is the same dialogue, with the next seed.
  EXPECT_EQ(body(1)["messages"], body(0)["messages"]);
  EXPECT_EQ(body(0)["seed"], 7);
  EXPECT_EQ(body(1)["seed"], 8);

  server_.push(ScriptedReply::text("  \n", 60, 1));
  server_.push(ScriptedReply::text("", 60, 0));
  EXPECT_EQ(user.reply("Any colour?"), LlmUser::kFallbackReply);
  EXPECT_EQ(user.n_fallback_replies(), 1);
  EXPECT_EQ(user.messages().back().content, LlmUser::kFallbackReply);  // the dialogue stays well formed
  EXPECT_EQ(user.usage().calls, 4);
  EXPECT_EQ(user.usage().prompt_tokens, 220);
  EXPECT_EQ(user.usage().completion_tokens, 7);
}

TEST_F(LlmUserTest, EmptyReplyRetryIsAnotherCacheSample) {
  // Behind a record/replay cache the retry must not replay the stored empty reply.
  test::TempDir dir;
  auto http = std::make_shared<llm::HttpChatModel>(llm::testing::make_endpoint(llm::testing::fast_config(server_)));
  auto cache = std::make_shared<llm::ResponseCache>(dir.path());
  llm::CachedChatModel cached(http, cache, llm::CacheMode::kRecord);
  {
    LlmUser user(ds_, search_task(), cached, kModel);
    server_.push(ScriptedReply::text(""));
    server_.push(ScriptedReply::text("Black ones, please."));
    EXPECT_EQ(user.reply("Which colour?"), "Black ones, please.");
  }
  EXPECT_EQ(server_.n_requests(), 2u);
  EXPECT_EQ(cache->n_chat(), 2u);
  // A second run of the same dialogue is answered from the cache, both calls.
  LlmUser again(ds_, search_task(), cached, kModel);
  EXPECT_EQ(again.reply("Which colour?"), "Black ones, please.");
  EXPECT_EQ(server_.n_requests(), 2u);
  EXPECT_EQ(again.usage().calls, 2);
  EXPECT_EQ(again.usage().cached_calls, 2);
}

TEST_F(LlmUserTest, TitleIsInThePromptButNeverRequiredInAReply) {
  const data::Task& task = search_task();
  const data::Product& p = target(task);
  LlmUser user(ds_, task, model_, kModel);
  EXPECT_TRUE(contains(user.system_prompt(), p.title));
  EXPECT_TRUE(contains(user.system_prompt(), p.parent_asin));
  EXPECT_TRUE(contains(user.system_prompt(), "never state its title, its ASIN"));
  // A reply that names nothing of the product is an ordinary reply.
  server_.push(ScriptedReply::text("Black, and the battery should last ages."));
  std::string r = user.reply("Tell me more.");
  EXPECT_EQ(r, "Black, and the battery should last ages.");
  EXPECT_FALSE(ScriptedUser::leaks_title(r, p));
  EXPECT_EQ(user.n_leaky_replies(), 0);
  // A reply that leaks is counted for analysis but returned unchanged, as the original would.
  server_.push(ScriptedReply::text("Honestly I want the " + p.title + "."));
  EXPECT_EQ(user.reply("Which one exactly?"), "Honestly I want the " + p.title + ".");
  EXPECT_EQ(user.n_leaky_replies(), 1);
}

// --- the leak guard ----------------------------------------------------------------------------------------

//! Whether any message of the dialogue holds `part`.
bool dialogue_has(const std::vector<llm::Message>& messages, std::string_view part) {
  return std::any_of(messages.begin(), messages.end(),
                     [&](const llm::Message& m) { return contains(m.content, part); });
}

TEST_F(LlmUserTest, WithoutTheGuardLeakyRepliesAreCountedAndReturnedUnchanged) {
  // The search target is "Voltrix Wireless Earbuds - Black, 40H Playtime" (B0FIXTURE1); 3 of 5 replies leak.
  const data::Task& task = search_task();
  LlmUser user(ds_, task, model_, kModel);
  const std::vector<std::pair<std::string, bool>> said = {
      {"Something wireless for running.", false},
      {"Honestly, just get me b0fixture1.", true},                 // the ASIN, in another case
      {"I'd like voltrix WIRELESS earbuds, black.", true},         // four title words
      {"Black ones, with a long battery life.", false},
      {"The Wireless Earbuds - Black, 40H kind.", true},           // four title words across punctuation
  };
  for (const auto& [text, leaks] : said) {
    server_.push(ScriptedReply::text(text));
    EXPECT_EQ(user.reply("Tell me more."), text);
    EXPECT_EQ(find_leak(text, ds_, task).any(), leaks) << text;
  }
  EXPECT_EQ(user.n_leaky_replies(), 3);
  EXPECT_EQ(user.n_rewrites(), 0);
  EXPECT_EQ(user.n_guard_fallbacks(), 0);
  EXPECT_EQ(server_.n_requests(), said.size());
  EXPECT_EQ(json::parse(user.record_json()), json({{"leaky_drafts", 3}}));
  // No leak, guard off: nothing to record, so records stay as they were before the guard existed.
  LlmUser clean(ds_, task, model_, kModel);
  server_.push(ScriptedReply::text("Something wireless for running."));
  clean.reply("Hi");
  EXPECT_EQ(clean.record_json(), "");
}

TEST_F(LlmUserTest, GuardAsksAgainWithTheDraftAndACorrectionAndKeepsOnlyTheAcceptedReply) {
  const data::Task& task = search_task();
  LlmUserOptions o;
  o.leak_guard = 2;
  o.seed = 11;
  LlmUser user(ds_, task, model_, kModel, o);
  const std::string draft1 = "It's the B0FIXTURE1 one.";
  const std::string draft2 = "The Voltrix Wireless Earbuds Black, then.";
  const std::string draft3 = "Fine: B0FIXTURE1.";
  // Turn 1: a leak, then a clean rewrite. Turn 2: clean at once. Turn 3: two leaky drafts, then a clean one.
  server_.push(ScriptedReply::text(draft1));
  server_.push(ScriptedReply::text("Wireless ones for running, please."));
  server_.push(ScriptedReply::text("Black would be nice."));
  server_.push(ScriptedReply::text(draft2));
  server_.push(ScriptedReply::text(draft3));
  server_.push(ScriptedReply::text("Whatever lasts longest on one charge."));
  const std::vector<std::string> returned = {user.reply("What do you need?"), user.reply("Any colour?"),
                                             user.reply("Which one exactly?")};
  EXPECT_EQ(returned, (std::vector<std::string>{"Wireless ones for running, please.", "Black would be nice.",
                                                "Whatever lasts longest on one charge."}));
  for (const auto& r : returned) EXPECT_FALSE(find_leak(r, ds_, task).any()) << r;
  EXPECT_EQ(user.n_leaky_replies(), 2);  // replies whose first draft leaked
  EXPECT_EQ(user.n_rewrites(), 3);
  EXPECT_EQ(user.n_guard_fallbacks(), 0);
  EXPECT_EQ(user.usage().calls, 6);
  ASSERT_EQ(server_.n_requests(), 6u);

  // The rewrite request: the dialogue, the leaky draft as the model's turn, then the correction; the next seed.
  json first = body(0)["messages"];
  json rewrite = body(1)["messages"];
  ASSERT_EQ(rewrite.size(), first.size() + 2);
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(rewrite[i], first[i]);
  EXPECT_EQ(rewrite[first.size()], json({{"role", "assistant"}, {"content", draft1}}));
  EXPECT_EQ(rewrite[first.size() + 1], json({{"role", "user"}, {"content", LlmUser::kProductCorrection}}));
  EXPECT_EQ(body(0)["seed"], 11);
  EXPECT_EQ(body(1)["seed"], 12);
  // Turn 2's request holds the accepted reply only: no draft, no correction.
  json second = body(2)["messages"];
  ASSERT_EQ(second.size(), first.size() + 2);
  EXPECT_EQ(second[first.size()], json({{"role", "assistant"}, {"content", "Wireless ones for running, please."}}));
  EXPECT_EQ(body(2)["seed"], 11);
  // Turn 3: the second rewrite answers the latest leaky draft, with seed + 2.
  json third_rewrite = body(5)["messages"];
  EXPECT_EQ(third_rewrite[third_rewrite.size() - 2], json({{"role", "assistant"}, {"content", draft3}}));
  EXPECT_EQ(third_rewrite.back()["role"], "user");
  EXPECT_EQ(body(4)["seed"], 12);
  EXPECT_EQ(body(5)["seed"], 13);
  // The dialogue kept: accepted replies only.
  EXPECT_EQ(user.messages().size(), 9u);
  EXPECT_EQ(user.messages().back().content, "Whatever lasts longest on one charge.");
  for (const auto& leaked : {draft1, draft2, draft3}) EXPECT_FALSE(dialogue_has(user.messages(), leaked)) << leaked;
  EXPECT_FALSE(dialogue_has(user.messages(), LlmUser::kProductCorrection));
  EXPECT_EQ(json::parse(user.record_json()),
            json({{"leak_guard", 2}, {"rewrites", 3}, {"guard_fallbacks", 0}, {"leaky_drafts", 2}}));
}

TEST_F(LlmUserTest, GuardSaysTheNeutralLineWhenEveryRewriteStillLeaks) {
  const data::Task& task = search_task();
  LlmUserOptions o;
  o.leak_guard = 2;
  LlmUser user(ds_, task, model_, kModel, o);
  server_.set_chat_handler([](const test::ReceivedRequest&) { return ScriptedReply::text("I want B0FIXTURE1."); });
  EXPECT_EQ(user.reply("What do you need?"), LlmUser::kGuardFallbackReply);
  EXPECT_EQ(server_.n_requests(), 3u);  // the draft and two rewrites
  EXPECT_EQ(user.n_rewrites(), 2);
  EXPECT_EQ(user.n_guard_fallbacks(), 1);
  EXPECT_EQ(user.messages().back().content, LlmUser::kGuardFallbackReply);
  EXPECT_FALSE(find_leak(LlmUser::kGuardFallbackReply, ds_, task).any());
  // The next turn continues from the fallback line.
  EXPECT_EQ(user.reply("Anything else?"), LlmUser::kGuardFallbackReply);
  EXPECT_EQ(body(3)["messages"][4], json({{"role", "assistant"}, {"content", LlmUser::kGuardFallbackReply}}));
  EXPECT_EQ(user.n_leaky_replies(), 2);
  EXPECT_EQ(user.n_rewrites(), 4);
  EXPECT_EQ(user.n_guard_fallbacks(), 2);
  EXPECT_EQ(json::parse(user.record_json()),
            json({{"leak_guard", 2}, {"rewrites", 4}, {"guard_fallbacks", 2}, {"leaky_drafts", 2}}));
}

TEST_F(LlmUserTest, GuardCountsAnEmptyRewriteAndTriesAgain) {
  LlmUserOptions o;
  o.leak_guard = 3;
  LlmUser user(ds_, search_task(), model_, kModel, o);
  server_.push(ScriptedReply::text("B0FIXTURE1 please."));
  server_.push(ScriptedReply::text(" "));
  server_.push(ScriptedReply::text("Something black and wireless."));
  EXPECT_EQ(user.reply("Which one?"), "Something black and wireless.");
  EXPECT_EQ(user.n_rewrites(), 2);
  EXPECT_EQ(user.n_guard_fallbacks(), 0);
  EXPECT_EQ(user.n_fallback_replies(), 0);
  // The second rewrite still answers the leaky draft (the empty one said nothing).
  EXPECT_EQ(body(2)["messages"][4]["content"], "B0FIXTURE1 please.");
  o.leak_guard = -1;
  EXPECT_THROW(LlmUser(ds_, search_task(), model_, kModel, o), UsageError);
}

TEST_F(LlmUserTest, GuardOnAReviewTaskCorrectsQuotesOfTheTrueReview) {
  data::Task task = review_task();  // outlives the user
  task.target_review.text = "The board is heavy and the oak grain looks gorgeous on my counter every single day.";
  LlmUserOptions o;
  o.leak_guard = 1;
  LlmUser user(ds_, task, model_, kModel, o);
  // Naming the product is no leak in a review task (its instruction names it); six words of the review are.
  server_.push(ScriptedReply::text("My Rustic Oak Cutting Board is lovely."));
  EXPECT_EQ(user.reply("How do you like it?"), "My Rustic Oak Cutting Board is lovely.");
  server_.push(ScriptedReply::text("Well, the oak grain looks gorgeous on my counter."));
  server_.push(ScriptedReply::text("The wood's pattern is beautiful in my kitchen."));
  EXPECT_EQ(user.reply("What stands out?"), "The wood's pattern is beautiful in my kitchen.");
  ASSERT_EQ(server_.n_requests(), 3u);
  EXPECT_EQ(body(2)["messages"].back(), json({{"role", "user"}, {"content", LlmUser::kReviewCorrection}}));
  EXPECT_EQ(user.n_leaky_replies(), 1);
  EXPECT_EQ(user.n_rewrites(), 1);
}

TEST_F(LlmUserTest, GuardLeavesTheStopSentinelAlone) {
  LlmUserOptions o;
  o.leak_guard = 2;
  o.stop_rule = true;
  LlmUser user(ds_, search_task(), model_, kModel, o);
  server_.push(ScriptedReply::text("Got it, the B0FIXTURE1, thanks! ###STOP###"));
  EXPECT_EQ(user.reply("Here it is."), kStopSentinel);  // the agent sees only the sentinel: nothing to rewrite
  EXPECT_EQ(server_.n_requests(), 1u);
  EXPECT_EQ(user.n_rewrites(), 0);
  EXPECT_EQ(user.n_leaky_replies(), 0);
}

TEST_F(LlmUserTest, GuardRewritesAreCacheSamplesOfTheirOwn) {
  // Two rewrites of the same draft are the same request but for the sample: a record/replay cache must keep both.
  test::TempDir dir;
  auto http = std::make_shared<llm::HttpChatModel>(llm::testing::make_endpoint(llm::testing::fast_config(server_)));
  auto cache = std::make_shared<llm::ResponseCache>(dir.path());
  llm::CachedChatModel cached(http, cache, llm::CacheMode::kRecord);
  LlmUserOptions o;
  o.leak_guard = 2;
  server_.push(ScriptedReply::text("B0FIXTURE1."));
  server_.push(ScriptedReply::text("B0FIXTURE1."));
  server_.push(ScriptedReply::text("Something wireless."));
  {
    LlmUser user(ds_, search_task(), cached, kModel, o);
    EXPECT_EQ(user.reply("Which?"), "Something wireless.");
  }
  EXPECT_EQ(server_.n_requests(), 3u);
  EXPECT_EQ(cache->n_chat(), 3u);
  LlmUser again(ds_, search_task(), cached, kModel, o);
  EXPECT_EQ(again.reply("Which?"), "Something wireless.");
  EXPECT_EQ(server_.n_requests(), 3u);
  EXPECT_EQ(again.usage().cached_calls, 3);
  EXPECT_EQ(again.n_rewrites(), 2);
}

// --- failures and accounting -------------------------------------------------------------------------------

TEST_F(LlmUserTest, InfraErrorPropagatesAfterTheRetries) {
  LlmUser user(ds_, search_task(), model_, kModel);
  for (int i = 0; i < 3; ++i) server_.push(ScriptedReply::error(500, "upstream exploded"));  // max_attempts 3
  try {
    user.reply("Hello?");
    FAIL() << "expected llm::InfraError";
  } catch (const llm::InfraError& e) {
    EXPECT_EQ(e.http_status(), 500);
    EXPECT_EQ(e.attempts(), 3);
  }
  EXPECT_EQ(server_.n_requests(), 3u);
  EXPECT_EQ(user.usage().calls, 0);
}

TEST_F(LlmUserTest, MeteredModelRecordsTheUsersTokensUnderRoleUser) {
  llm::Ledger ledger(llm::PriceTable::builtin());
  auto metered = std::make_unique<llm::MeteredChatModel>(model_, ledger, llm::Role::kUser, "test/1");
  LlmUser user(ds_, search_task(), std::move(metered), kModel);  // the owning form, as a UserMaker would use
  server_.push(ScriptedReply::text("Wireless, please.", 1000, 10));
  server_.push(ScriptedReply::text("Black.", 1100, 2));
  user.reply("Wired or wireless?");
  user.reply("Which colour?");
  llm::Usage u = ledger.task("test/1", llm::Role::kUser);
  EXPECT_EQ(u.calls, 2);
  EXPECT_EQ(u.prompt_tokens, user.usage().prompt_tokens);
  EXPECT_EQ(u.completion_tokens, user.usage().completion_tokens);
  EXPECT_EQ(u.prompt_tokens, 2100);
  EXPECT_EQ(u.completion_tokens, 12);
  EXPECT_NEAR(*u.cost_usd(), (2100 * 0.15 + 12 * 0.60) / 1e6, 1e-12);
  EXPECT_EQ(ledger.task("test/1", llm::Role::kAgent).calls, 0);
  EXPECT_THROW(LlmUser(ds_, search_task(), std::unique_ptr<llm::ChatModel>(), kModel), UsageError);
}

// --- a whole episode ---------------------------------------------------------------------------------------

//! Plays its steps in order, then repeats the last one; records the observations it was shown.
class ScriptedAgent final : public runner::Agent {
 public:
  explicit ScriptedAgent(std::vector<env::Action> steps) : steps_(std::move(steps)) {}
  void begin(const data::Task&, const std::string&, data::Track) override {}
  runner::AgentStep next(const std::string& observation) override {
    seen.push_back(observation);
    return {steps_[std::min(seen.size() - 1, steps_.size() - 1)], 0, 0};
  }
  std::vector<std::string> seen;

 private:
  std::vector<env::Action> steps_;
};

env::Action act(std::string_view name, const json& args) { return {std::string(name), args.dump()}; }
env::Action say(const std::string& text) { return act(env::kRespond, {{"content", text}}); }

TEST_F(LlmUserTest, MultiTurnEpisodeThroughTheRunner) {
  embed::HashingEmbedder embedder;
  env::Environment environment(ds_, nullptr, nullptr, embedder);
  const data::Task& task = review_task();
  ScriptedAgent agent({say("How did you find the board?"), say("Anything you did not like?"),
                       act(env::kAddReview, {{"review", "Looks great in my kitchen."}}),
                       act(env::kStop, json::object())});
  LlmUser user(ds_, task, model_, kModel);
  server_.push(ScriptedReply::text("It looks great in my kitchen, honestly."));
  server_.push(ScriptedReply::text("Nope, nothing to complain about."));

  runner::EpisodeResult r = runner::run_episode(environment, task, agent, &user, {data::Track::kMultiTurn, 10});
  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 4);
  ASSERT_EQ(r.attempts.size(), 1u);  // the review; the respond turns record nothing in multi-turn
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_NEAR(r.attempts[0].result_acc, 1.0, 1e-6);
  // The agent saw the simulator's replies as the observations of its respond actions.
  ASSERT_EQ(agent.seen.size(), 4u);
  EXPECT_EQ(agent.seen[1], "It looks great in my kitchen, honestly.");
  EXPECT_EQ(agent.seen[2], "Nope, nothing to complain about.");
  EXPECT_EQ(r.actions[0].observation, agent.seen[1]);
  EXPECT_FALSE(r.actions[0].done);
  // The simulator saw only the agent's messages: never the tool call or its output.
  ASSERT_EQ(server_.n_requests(), 2u);
  json last = body(1)["messages"];
  ASSERT_EQ(last.size(), 6u);
  EXPECT_EQ(last[3]["content"], "How did you find the board?");
  EXPECT_EQ(last[4]["content"], "It looks great in my kitchen, honestly.");
  EXPECT_EQ(last[5]["content"], "Anything you did not like?");
  EXPECT_EQ(user.messages().size(), 7u);
}

TEST_F(LlmUserTest, InfraErrorEscapesTheEpisode) {
  // run_episode lets it through; runner::run_tasks records the task as errored so --resume runs it again.
  embed::HashingEmbedder embedder;
  env::Environment environment(ds_, nullptr, nullptr, embedder);
  ScriptedAgent agent({say("Hello, what do you need?")});
  LlmUser user(ds_, search_task(), model_, kModel);
  for (int i = 0; i < 3; ++i) server_.push(ScriptedReply::error(503, "overloaded"));
  EXPECT_THROW(runner::run_episode(environment, search_task(), agent, &user, {data::Track::kMultiTurn, 10}),
               llm::InfraError);
}

}  // namespace
}  // namespace pwab::sim
