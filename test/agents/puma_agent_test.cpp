// The PUMA agent and its prompt code: the one template shared with training (layouts exact), the token cut,
// task-specific memory, the output mapping (Say: / stop / each tool / unknown function), and whole episodes in
// both tracks against the real HTTP client on the loopback server (raw-text /v1/completions), with every
// function predictor.
#include "agents/puma_agent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "env/tools.h"
#include "fc_test_util.h"
#include "support/test_support.h"

namespace pwab::agents {
namespace {

using json = nlohmann::json;
using fctest::KeywordEmbedder;
using fctest::ServerLlm;
using pwab::test::ScriptedReply;

const data::Dataset& ds() { return fctest::tiny_dataset(); }
const data::Task& task(uint32_t i) { return fctest::tiny_task(i); }

struct Fixture : fctest::AgentWorld {
  std::unique_ptr<AgentFactory> factory(std::map<std::string, std::string> extra = {}, std::string memory = "",
                                        std::optional<int> k = std::nullopt) {
    AgentOptions o;
    o.memory = std::move(memory);
    o.memory_length = k;
    o.extra = std::move(extra);
    return make_agent_factory("puma", o, context("puma-lora"));
  }
  PumaAgentFactory& puma(AgentFactory& f) { return dynamic_cast<PumaAgentFactory&>(f); }
  std::string path(std::size_t i) const { return llm.server.requests().at(i).path; }
};

// ---------------------------------------------------------------------------------------------------------
// The template (one code path for training and inference, docs/decisions.md D9)
// ---------------------------------------------------------------------------------------------------------

TEST(PumaPrompt, LayoutsAreExact) {
  std::string f = puma_function_prompt("find a kettle");
  EXPECT_TRUE(f.ends_with("\n### Instruction: find a kettle\n\n### Tool:\n")) << f;
  EXPECT_EQ(std::count(f.begin(), f.end(), '\n'), 4);

  std::string p = puma_param_prompt("find a kettle", "Title:A\n|Title:B\n", "search_product_by_query");
  std::size_t first_nl = p.find('\n');
  EXPECT_EQ(p[first_nl - 1], ' ');  // the first line ends with a space
  EXPECT_EQ(p.substr(first_nl + 1),
            "### Instruction:find a kettle\n  \nMemory: Title:A\n|Title:B\n\n\nTool: search_product_by_query\n\n"
            "### Tool Parameter:\n");

  EXPECT_EQ(puma_product_block(ds().product(0)),
            "\nProduct in question:\nTitle: Red Electric Kettle\nPrice: 29.99\nStore: Voltrix\nMain Category: Amazon "
            "Home\n");
  EXPECT_EQ(puma_product_block(ds().product(1)).find("Price: None\nStore: None\n") != std::string::npos, true);
  // The product block goes with review only, whatever the task's true type.
  EXPECT_EQ(puma_instruction_text(ds(), task(2), data::TaskType::kReview),
            task(2).instruction + puma_product_block(ds().product(2)));
  EXPECT_EQ(puma_instruction_text(ds(), task(2), data::TaskType::kSearch), task(2).instruction);
  EXPECT_EQ(puma_instruction_text(ds(), task(2), std::nullopt), task(2).instruction);

  EXPECT_EQ(puma_generated_part("PROMPT ### Tool Parameter:\n  red kettle \n", "### Tool Parameter:\n"), "red kettle");
  EXPECT_EQ(puma_generated_part(" red kettle", "### Tool Parameter:\n"), "red kettle");
}

TEST(PumaPrompt, ApproximateTokenCountAndCut) {
  EXPECT_EQ(approximate_token_count(""), 0);
  EXPECT_EQ(approximate_token_count("kettle"), 1);         // up to 6 letters: one piece
  EXPECT_EQ(approximate_token_count("stainless"), 2);      // 9 letters: two
  EXPECT_EQ(approximate_token_count("a 29.99 mug"), 7);    // a, 2, 9, ., 9, 9, mug
  EXPECT_EQ(approximate_token_count("Title:Mug\n|"), 5);   // Title : Mug \n |
  EXPECT_EQ(approximate_token_count("café"), 2);           // caf + é

  auto counter = approximate_token_counter();
  EXPECT_EQ(counter->describe(), "approximate-llama/1");
  const std::string text = "Title:Red Electric Kettle\nPrice:29.99\n|Title:Blue shirt\n";
  for (int budget = 1; budget < 40; ++budget) {
    std::string cut = counter->truncate(text, budget);
    EXPECT_EQ(text.rfind(cut, 0), 0u) << budget;                    // a prefix
    EXPECT_LE(approximate_token_count(cut), budget - 1) << budget;  // the BOS takes one of the budget
    if (budget > 1 && cut != text) {
      EXPECT_GE(approximate_token_count(cut), budget - 2) << budget;  // and as long as possible
    }
  }
  EXPECT_EQ(counter->truncate(text, 1000), text);
  EXPECT_EQ(counter->truncate("Stainlesssteelkettle", 3), "Stainlessste");  // a long word cut between 6-letter pieces
  // A multi-byte character is never split.
  std::string cut = counter->truncate("ab\xC3\xA9\xC3\xA9", 3);
  EXPECT_EQ(cut, "ab\xC3\xA9");
}

TEST(PumaPrompt, MemoryPerTypeNewestFirstAndCut) {
  KeywordEmbedder embedder;
  auto counter = approximate_token_counter();
  PumaMemoryOptions o;
  o.k = 2;
  // Search: the two kettles (most similar to "kettle"), best first, no header.
  std::string search = puma_memory(ds(), task(0), data::TaskType::kSearch, embedder, o, *counter);
  EXPECT_EQ(search,
            "Title:Red Electric Kettle\nMain Category:Amazon Home\nPrice:29.99\nStore:Voltrix\n|"
            "Title:Steel Electric Kettle\nMain Category:Amazon Home\nPrice:40\nStore:Isple\n");
  // Recommend: the same items, newest first (kettle 2 at 500 before kettle 1 at 300).
  std::string rec = puma_memory(ds(), task(0), data::TaskType::kRecommend, embedder, o, *counter);
  EXPECT_EQ(rec, "Title:Steel Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE02\n|"
                 "Title:Red Electric Kettle\nMain Category:Amazon Home\nAsin:B0KETTLE01\n");
  std::string review = puma_memory(ds(), task(0), data::TaskType::kReview, embedder, o, *counter);
  EXPECT_EQ(review, "Rating:5.0\nText:Boils fast, love this kettle.\n|Rating:4.0\nText:Solid kettle, a bit loud.\n");
  // The whole visible history by default (5 items; the mug at 2000 is not visible).
  o.k = 100;
  std::string all = puma_memory(ds(), task(0), data::TaskType::kSearch, embedder, o, *counter);
  EXPECT_EQ(std::count(all.begin(), all.end(), '|'), 4);
  // The token budget cuts it.
  o.max_tokens = 12;
  std::string cut = puma_memory(ds(), task(0), data::TaskType::kSearch, embedder, o, *counter);
  EXPECT_EQ(all.rfind(cut, 0), 0u);
  EXPECT_LE(approximate_token_count(cut), 11);
  EXPECT_LT(cut.size(), all.size());
  // The ASIN layout for recommendation (docs/puma.md "Recommendation memory"): one "ASIN (category)" line per item,
  // newest first, no separators, under its own budget; the other types keep theirs.
  PumaMemoryOptions asins;
  asins.k = 2;
  asins.recommend_layout = RecommendLayout::kAsins;
  EXPECT_EQ(puma_memory(ds(), task(0), data::TaskType::kRecommend, embedder, asins, *counter),
            "B0KETTLE02 (Amazon Home)\nB0KETTLE01 (Amazon Home)\n");
  EXPECT_EQ(puma_memory(ds(), task(0), data::TaskType::kSearch, embedder, asins, *counter), search);
  asins.k = 100;
  asins.max_tokens = 8;
  asins.recommend_max_tokens = 1000;  // the recommendation budget, not max_tokens, cuts a recommendation memory
  const std::string all_asins = puma_memory(ds(), task(0), data::TaskType::kRecommend, embedder, asins, *counter);
  EXPECT_EQ(std::count(all_asins.begin(), all_asins.end(), '\n'), 5) << all_asins;
  EXPECT_EQ(puma_memory_budget(asins, data::TaskType::kRecommend), 1000);
  EXPECT_EQ(puma_memory_budget(asins, data::TaskType::kSearch), 8);
  asins.recommend_max_tokens = 0;
  EXPECT_EQ(puma_memory_budget(asins, data::TaskType::kRecommend), 8);
  EXPECT_EQ(parse_recommend_layout("asins", "--recommend-memory"), RecommendLayout::kAsins);
  // The numbered layout: each item's place in the visible history counted from the newest, which the model writes
  // and the agent maps back (puma_references, puma_action).
  const std::vector<std::string> refs = puma_references(ds(), task(0));
  ASSERT_EQ(refs.size(), 5u);
  EXPECT_EQ(refs.front(), ds().product(ds().visible_history(task(0)).back()->product).parent_asin);
  // Only a recommendation's numbers name items: for another function (or an unknown one) a number is text.
  EXPECT_EQ(puma_references(ds(), task(0), data::TaskType::kRecommend), refs);
  EXPECT_TRUE(puma_references(ds(), task(0), data::TaskType::kSearch).empty());
  EXPECT_TRUE(puma_references(ds(), task(0), std::nullopt).empty());
  auto number = [&](std::string_view asin) {
    return std::to_string(std::find(refs.begin(), refs.end(), asin) - refs.begin() + 1);
  };
  PumaMemoryOptions numbered;
  numbered.k = 2;
  numbered.recommend_layout = RecommendLayout::kNumbered;
  EXPECT_EQ(puma_memory(ds(), task(0), data::TaskType::kRecommend, embedder, numbered, *counter),
            number("B0KETTLE02") + " (Amazon Home)\n" + number("B0KETTLE01") + " (Amazon Home)\n");
  EXPECT_EQ(parse_recommend_layout("numbered", "--recommend-memory"), RecommendLayout::kNumbered);
  EXPECT_EQ(to_string(RecommendLayout::kNumbered), "numbered");
  EXPECT_EQ(to_string(RecommendLayout::kFull), "full");
  EXPECT_THROW(parse_recommend_layout("titles", "--recommend-memory"), UsageError);
  // No memory: an empty history, or an unknown function (docs/decisions.md D3).
  EXPECT_EQ(puma_memory(ds(), task(3), data::TaskType::kSearch, embedder, o, *counter), "none");
  EXPECT_EQ(puma_memory(ds(), task(0), std::nullopt, embedder, o, *counter), "none");
}

TEST(PumaPrompt, OutputsMapToActions) {
  env::Action say = puma_action("Say: Which colour do you like?", "search_product_by_query");
  EXPECT_EQ(say.name, "respond");
  EXPECT_EQ(json::parse(say.arguments_json)["content"], "Which colour do you like?");
  EXPECT_EQ(puma_action("stop", "add_product_review").name, "stop");
  EXPECT_EQ(puma_action("  stop now", "add_product_review").name, "stop");

  env::Action search = puma_action(" red kettle ", " search_product_by_query\n");
  EXPECT_EQ(search.name, env::kSearch);
  EXPECT_EQ(json::parse(search.arguments_json), json({{"query", "red kettle"}}));
  env::Action review = puma_action("Great kettle, boils fast.", "add_product_review");
  EXPECT_EQ(json::parse(review.arguments_json), json({{"review", "Great kettle, boils fast."}}));
  // Recommendation inputs keep their order and duplicates; empty pieces go (docs/decisions.md D2).
  env::Action rec = puma_action("B3, B1 ,, B2,B1, ", "get_recommendations_by_history");
  EXPECT_EQ(rec.name, env::kRecommend);
  EXPECT_EQ(json::parse(rec.arguments_json)["product_sequence"], json({"B3", "B1", "B2", "B1"}));
  // Numbers from 1 to the references' count name them (numbered memory); zero, a leading zero, five digits (an
  // ISBN-10 ASIN is ten), a number past the history or any other text stand for themselves.
  const std::vector<std::string> refs = {"NEWEST", "OLDER", "OLDEST"};
  env::Action numbered = puma_action("2, 1 ,3, 4, B9, 0, 01, 10000, 0312850123", env::kRecommend, refs);
  EXPECT_EQ(json::parse(numbered.arguments_json)["product_sequence"],
            json({"OLDER", "NEWEST", "OLDEST", "4", "B9", "0", "01", "10000", "0312850123"}));
  EXPECT_EQ(json::parse(puma_action("2, 1", env::kRecommend).arguments_json)["product_sequence"], json({"2", "1"}));
  PumaDialogue dialogue(std::string(env::kRecommend), refs);
  EXPECT_EQ(json::parse(dialogue.act("3, 1").arguments_json)["product_sequence"], json({"OLDEST", "NEWEST"}));
  EXPECT_EQ(dialogue.turns().back().text, "called get_recommendations_by_history with: 3, 1");
  // An unknown function is a wrong function, never review (docs/decisions.md D3).
  EXPECT_EQ(puma_action("red kettle", "search_products").name, "search_products");
  EXPECT_EQ(puma_action("red kettle", "").name, "(no function)");
}

TEST(FunctionPredictor, AnswersAndOptions) {
  EXPECT_EQ(function_from_answer("The tool is add_product_review."), "add_product_review");
  EXPECT_EQ(function_from_answer("search_product_by_query, not get_recommendations_by_history"),
            "search_product_by_query");
  EXPECT_EQ(function_from_answer("  review_tool\nbecause"), "review_tool");
  EXPECT_EQ(parse_function_model("llm", "x"), FunctionModel::kLlm);
  EXPECT_EQ(parse_function_model("puma", "x"), FunctionModel::kPuma);
  EXPECT_THROW(parse_function_model("gpt", "x"), UsageError);
  EXPECT_NE(function_choice_prompt().find("add_product_review"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------
// The agent
// ---------------------------------------------------------------------------------------------------------

TEST(PumaAgent, RegisteredWithOptionsAndConfig) {
  bool found = false;
  for (const auto& a : list_agents())
    if (a.name == "puma") found = a.paper_row.find("PUMA (LLaMA-7B)") != std::string::npos;
  EXPECT_TRUE(found);
  Fixture fx;
  json c = json::parse(fx.factory({{"memory_tokens", "500"}})->config_json());
  EXPECT_EQ(c["agent"], "puma");
  EXPECT_EQ(c["model"], "puma-lora");
  EXPECT_EQ(c["memory"], "taskspec");
  EXPECT_EQ(c["memory_length"], 100);  // PUMA's own default, not D1's 10 (docs/decisions.md)
  EXPECT_EQ(c["memory_tokens"], 500);
  EXPECT_EQ(c["token_counter"], "approximate-llama/1");
  EXPECT_EQ(c["prompts"], std::string(kPumaPromptsVersion));
  EXPECT_EQ(c["function_model"], "puma puma-lora/" + std::string(kPumaPromptsVersion));
  EXPECT_EQ(c["max_new_tokens"], 256);
  EXPECT_EQ(c["recommend_memory"], "full");  // the original's layout unless asked
  EXPECT_EQ(c["recommend_memory_tokens"], 0);
  EXPECT_EQ(json::parse(fx.factory({}, "", 7)->config_json())["memory_length"], 7);
  json asins = json::parse(
      fx.factory({{"recommend_memory", "asins"}, {"recommend_memory_tokens", "128"}})->config_json());
  EXPECT_EQ(asins["recommend_memory"], "asins");
  EXPECT_EQ(asins["recommend_memory_tokens"], 128);
  EXPECT_EQ(json::parse(fx.factory({{"recommend_memory", "numbered"}})->config_json())["recommend_memory"], "numbered");

  AgentOptions bad;
  bad.memory = "relevant";
  EXPECT_THROW(parse_puma_options(bad), UsageError);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"memory_tokens", "0"}, {"function_model", "gpt"}, {"nope", "1"}, {"function_file", ""},
           {"recommend_memory", "titles"}, {"recommend_memory_tokens", "-1"}}) {
    bad = {};
    bad.extra[k] = v;
    EXPECT_THROW(parse_puma_options(bad), UsageError) << k;
  }
  EXPECT_THROW(fx.factory({{"function_file", (fx.cache.path() / "missing.json").string()}}), UsageError);
  AgentContext no_llm = fctest::context_of(&ds(), nullptr, {}, 1);
  EXPECT_THROW(make_agent_factory("puma", {}, no_llm), UsageError);
}

TEST(PumaAgent, SingleTurnPredictsThenSearchesWithTheTrainingPrompt) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::completion("search_product_by_query\n", 30, 4));
  fx.llm.server.push(ScriptedReply::completion(" red electric kettle", 200, 6));
  auto agent = f->make(task(0));
  runner::EpisodeResult r = runner::run_episode(fx.env, task(0), *agent, nullptr, {data::Track::kSingleTurn, 10});

  EXPECT_EQ(r.ending, "task_function");
  EXPECT_EQ(r.steps, 1);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 0.5);  // B0KETTLE01 second of two
  EXPECT_EQ(r.prompt_tokens, 230);                   // the function call counts with the first step
  EXPECT_EQ(r.completion_tokens, 10);
  EXPECT_EQ(fx.llm.ledger.task("test/0", llm::Role::kAgent).calls, 2);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(json::parse(r.actions[0].action.arguments_json)["query"], "red electric kettle");

  ASSERT_EQ(fx.llm.server.n_requests(), 2u);
  EXPECT_EQ(fx.path(0), "/v1/completions");
  EXPECT_EQ(fx.body(0)["prompt"], puma_function_prompt(task(0).instruction));
  EXPECT_EQ(fx.body(0)["temperature"], 0.0);
  EXPECT_EQ(fx.path(1), "/v1/completions");
  json second = fx.body(1);
  PumaAgentFactory& pf = fx.puma(*f);
  std::string memory = pf.memory(task(0), "search_product_by_query");
  EXPECT_EQ(memory.rfind("Title:Red Electric Kettle\n", 0), 0u) << memory;
  EXPECT_EQ(second["prompt"], puma_param_prompt(task(0).instruction, memory, "search_product_by_query"));
  EXPECT_EQ(second["max_tokens"], 256);
  EXPECT_FALSE(second.contains("messages"));
}

// copy_search: the single-turn search query asks the model for the prompt's words only; the function prediction,
// other tools' parameters and multi-turn steps stay free.
TEST(PumaAgent, CopySearchAsksForThePromptsWordsOnSingleTurnSearchesOnly) {
  Fixture fx;
  auto f = fx.factory({{"copy_search", "true"}});
  EXPECT_EQ(json::parse(f->config_json())["copy_search"], true);
  EXPECT_FALSE(json::parse(fx.factory()->config_json()).contains("copy_search"));
  fx.llm.server.push(ScriptedReply::completion("search_product_by_query"));
  fx.llm.server.push(ScriptedReply::completion("red electric kettle"));
  runner::run_episode(fx.env, task(0), *f->make(task(0)), nullptr, {data::Track::kSingleTurn, 10});
  fx.llm.server.push(ScriptedReply::completion("get_recommendations_by_history"));
  fx.llm.server.push(ScriptedReply::completion("B0KETTLE01"));
  runner::run_episode(fx.env, task(1), *f->make(task(1)), nullptr, {data::Track::kSingleTurn, 10});
  fx.llm.server.push(ScriptedReply::completion("search_product_by_query"));
  fx.llm.server.push(ScriptedReply::completion("red electric kettle"));
  fx.llm.server.push(ScriptedReply::completion("stop"));
  fctest::FixedUser user({"Thanks."});
  runner::run_episode(fx.env, task(0), *f->make(task(0)), &user, {data::Track::kMultiTurn, 10});
  ASSERT_EQ(fx.llm.server.n_requests(), 7u);
  for (std::size_t i = 0; i < 7; ++i)
    EXPECT_EQ(fx.body(i).value("prompt_words_only", false), i == 1) << i << ": " << fx.body(i).dump();
}

TEST(PumaAgent, ReviewPromptCarriesTheProductAndSayEndsSingleTurn) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::completion("add_product_review"));
  fx.llm.server.push(ScriptedReply::completion("Say: Could you tell me more about the kettle?"));
  auto agent = f->make(task(2));
  runner::EpisodeResult r = runner::run_episode(fx.env, task(2), *agent, nullptr, {data::Track::kSingleTurn, 10});
  EXPECT_EQ(r.ending, "respond");
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0].action.name, "respond");
  std::string prompt = fx.body(1)["prompt"];
  EXPECT_NE(prompt.find(task(2).instruction + puma_product_block(ds().product(2)) + "\n  \nMemory: Rating:"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("\nTool: add_product_review\n"), std::string::npos);
}

TEST(PumaAgent, MultiTurnUsesTheDialogueThenStops) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::completion("get_recommendations_by_history"));
  fx.llm.server.push(ScriptedReply::completion("Say: What do you usually wear it with?"));
  fx.llm.server.push(ScriptedReply::completion("B0KETTLE01, B0SHIRT001"));
  fx.llm.server.push(ScriptedReply::completion("stop"));
  fctest::FixedUser user({"Warm socks, please."});
  auto agent = f->make(task(1));
  runner::EpisodeResult r = runner::run_episode(fx.env, task(1), *agent, &user, {data::Track::kMultiTurn, 10});

  EXPECT_EQ(r.ending, "stop");
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].function_acc, 1.0);
  EXPECT_DOUBLE_EQ(r.attempts[0].result_acc, 1.0);  // socks first of two
  ASSERT_EQ(user.heard.size(), 1u);
  EXPECT_EQ(user.heard[0], "What do you usually wear it with?");
  json rec_args = json::parse(r.actions[1].action.arguments_json);
  EXPECT_EQ(rec_args["product_sequence"], json({"B0KETTLE01", "B0SHIRT001"}));

  ASSERT_EQ(fx.llm.server.n_requests(), 4u);
  std::string first = fx.body(1)["prompt"], second = fx.body(2)["prompt"], third = fx.body(3)["prompt"];
  EXPECT_EQ(first.find("Conversation so far"), std::string::npos);
  EXPECT_NE(second.find(task(1).instruction +
                        "\n\nConversation so far:\nAgent: Say: What do you usually wear it with?\n"
                        "User: Warm socks, please.\n\n  \nMemory: "),
            std::string::npos)
      << second;
  EXPECT_NE(third.find("User: Warm socks, please.\nAgent: called get_recommendations_by_history with: B0KETTLE01, "
                       "B0SHIRT001\n\n  \nMemory: "),
            std::string::npos)
      << third;
  // The memory is built once per task and the same in every prompt: recommend items newest first.
  std::string memory = fx.puma(*f).memory(task(1), "get_recommendations_by_history");
  EXPECT_NE(third.find("Memory: " + memory + "\n\nTool: get_recommendations_by_history"), std::string::npos);
}

TEST(PumaAgent, UnknownFunctionIsAWrongFunctionNotReview) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.push(ScriptedReply::completion("write_a_review"));
  fx.llm.server.push(ScriptedReply::completion("A fine kettle."));
  auto agent = f->make(task(2));
  runner::EpisodeResult r = runner::run_episode(fx.env, task(2), *agent, nullptr, {data::Track::kSingleTurn, 10});
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[0].action.name, "write_a_review");
  EXPECT_EQ(r.actions[0].observation, "Unknown action write_a_review");
  EXPECT_TRUE(r.attempts.empty());  // nothing scored: F = 0, R = 0
  EXPECT_EQ(r.ending, "stop");  // the agent stops by itself instead of asking the model again
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(fx.llm.server.n_requests(), 2u);
  std::string prompt = fx.body(1)["prompt"];
  EXPECT_NE(prompt.find("Memory: none\n\nTool: write_a_review\n"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("Product in question"), std::string::npos);
}

TEST(PumaAgent, OfflineAndChatFunctionModelsAndNoMemory) {
  {  // fastText / keywords: no function request at all
    Fixture fx;
    auto f = fx.factory({{"function_model", "keywords"}}, "none");
    fx.llm.server.push(ScriptedReply::completion("electric kettle"));
    auto agent = f->make(task(0));
    runner::EpisodeResult r = runner::run_episode(fx.env, task(0), *agent, nullptr, {data::Track::kSingleTurn, 10});
    EXPECT_EQ(r.ending, "task_function");
    ASSERT_EQ(fx.llm.server.n_requests(), 1u);
    EXPECT_NE(fx.body(0)["prompt"].get<std::string>().find("\nMemory: none\n"), std::string::npos);
    EXPECT_EQ(json::parse(f->config_json())["function_model"], "keyword rules");
  }
  {  // llm: a chat request with the routing prompt, then the raw-text parameter
    Fixture fx;
    auto f = fx.factory({{"function_model", "llm"}});
    fx.llm.server.push(ScriptedReply::text("add_product_review", 50, 3));
    fx.llm.server.push(ScriptedReply::completion("Great kettle."));
    auto agent = f->make(task(2));
    runner::EpisodeResult r = runner::run_episode(fx.env, task(2), *agent, nullptr, {data::Track::kSingleTurn, 10});
    EXPECT_EQ(r.ending, "task_function");
    EXPECT_EQ(fx.path(0), "/v1/chat/completions");
    EXPECT_EQ(fx.body(0)["messages"][0]["content"], function_choice_prompt());
    EXPECT_EQ(fx.body(0)["messages"][1]["content"], task(2).instruction);
    EXPECT_EQ(fx.path(1), "/v1/completions");
  }
  {  // a function file (instruction → tool or [tool, ...]); a missing instruction is an unknown function
    Fixture fx;
    auto file = fx.cache.path() / "functions.json";
    std::ofstream(file) << json({{task(0).instruction, json::array({"search_product_by_query", "x"})}}).dump();
    auto f = fx.factory({{"function_file", file.string()}});
    EXPECT_EQ(fx.puma(*f).predictor().predict(task(0).instruction, nullptr).function, "search_product_by_query");
    EXPECT_EQ(fx.puma(*f).predictor().predict(task(1).instruction, nullptr).function, "");
    EXPECT_EQ(json::parse(f->config_json())["function_model"].get<std::string>().rfind("file ", 0), 0u);
  }
}

TEST(PumaAgent, InfrastructureErrorsPassThrough) {
  Fixture fx;
  auto f = fx.factory();
  fx.llm.server.set_chat_handler([](const auto&) { return ScriptedReply::error(503, "down"); });
  auto agent = f->make(task(0));
  EXPECT_THROW(runner::run_episode(fx.env, task(0), *agent, nullptr, {data::Track::kSingleTurn, 10}),
               llm::InfraError);
}

TEST(PumaAgent, TheModelsTokenizerCountsTheBudget) {
  // A small LLaMA-style vocabulary trained on product text stands in for the model's tokenizer.model.
  Fixture fx;
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    texts.push_back("Title:Red Electric Kettle " + std::to_string(i) + "\nMain Category:Amazon Home\nPrice:29.99\n"
                    "Store:Voltrix\n|Rating:5.0\nText:Boils fast, love this kettle. Solid, a bit loud.\n");
  tok::SpmTrainOptions so;
  so.vocab_size = 400;
  tok::train_sentencepiece(texts, fx.cache.path() / "model", so);
  auto f = fx.factory({{"tokenizer", (fx.cache.path() / "model").string()}, {"memory_tokens", "20"}});
  json c = json::parse(f->config_json());
  EXPECT_EQ(c["token_counter"].get<std::string>().rfind("sentencepiece ", 0), 0u) << c.dump();
  std::shared_ptr<const tok::Tokenizer> t = tok::load_tokenizer(fx.cache.path() / "model");
  std::string memory = fx.puma(*f).memory(task(0), "search_product_by_query");
  EXPECT_LE(t->encode(memory, true, false).size(), 20u);
  EXPECT_GE(t->encode(memory, true, false).size(), 15u);
  // The counter's prefix shortcut gives exactly what cutting the whole text gives.
  auto counter = tokenizer_token_counter(t);
  std::string long_text;
  for (const auto& x : texts) long_text += x;
  for (int budget : {1, 5, 64, 500, 3000})
    EXPECT_EQ(counter->truncate(long_text, budget), tok::truncate_to_tokens(*t, long_text, budget)) << budget;
  EXPECT_THROW(fx.factory({{"tokenizer", (fx.cache.path() / "nothing").string()}}), UsageError);
}

}  // namespace
}  // namespace pwab::agents
