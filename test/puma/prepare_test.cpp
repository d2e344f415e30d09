// PUMA's training data: function and parameter examples built with the runtime agent's prompt code (docs/decisions.md
// D9), the pseudo-labels (heuristic and LLM search queries, same-category recommendation labels with D8's fallback or
// skip, true reviews), and the JSONL round trip with errors that name the file and line.
#include "puma/prepare.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agents/fc_test_util.h"
#include "core/error.h"
#include "env/tools.h"
#include "llm/http_chat_model.h"
#include "support/test_support.h"

namespace pwab::puma {
namespace {

using json = nlohmann::json;
using pwab::test::ScriptedReply;

//! The agents' tiny dataset plus train tasks: 0 search (AUSER), 1 recommend of the socks (fashion history
//! exists), 2 recommend of a book (no book in the history: D8 in docs/decisions.md), 3 review, 4 recommend for
//! BNEW (no history).
data::Dataset with_train_tasks() {
  data::Dataset ds = agents::fctest::tiny();
  data::ProductId book = *ds.add_product(agents::fctest::product("B0BOOK0001", "A Novel", "Books",
                                                                 py::Scalar::of_float(15.0), "Pressy", "Pages."));
  auto add = [&](data::UserId user, std::string instruction, data::TaskType type, data::ProductId target) {
    data::Task t;
    t.split = data::Split::kTrain;
    t.index = static_cast<uint32_t>(ds.tasks(data::Split::kTrain).size());
    t.user = user;
    t.instruction = std::move(instruction);
    t.type = type;
    t.timestamp = 900;
    t.target_product = target;
    t.target_review.text = "A true review.";
    t.target_review.parent_asin = ds.product(target).parent_asin;
    t.target_review.timestamp = 900;
    ds.add_task(t);
  };
  add(0, "Looking for a quiet electric kettle from a good brand", data::TaskType::kSearch, 2);
  add(0, "Suggest something I would like to wear", data::TaskType::kRecommend, 4);
  add(0, "Suggest something new to read", data::TaskType::kRecommend, book);
  add(0, "Review this kettle for me", data::TaskType::kReview, 0);
  add(1, "Suggest anything", data::TaskType::kRecommend, 3);
  return ds;
}

const data::Dataset& ds() {
  static const data::Dataset d = with_train_tasks();
  return d;
}

TEST(PumaPrepare, FunctionExamplesUseTheSharedPrompt) {
  auto ex = function_examples(ds(), data::Split::kTrain);
  ASSERT_EQ(ex.size(), 5u);
  for (std::size_t i = 0; i < ex.size(); ++i) {
    const data::Task& t = ds().tasks(data::Split::kTrain)[i];
    EXPECT_EQ(ex[i].task, "train/" + std::to_string(i));
    EXPECT_EQ(ex[i].prompt, agents::puma_function_prompt(t.instruction));
    EXPECT_EQ(ex[i].target, env::task_function(t.type));
    EXPECT_EQ(ex[i].memory, "");
  }
}

TEST(PumaPrepare, RecommendLabelsSameCategoryThenD8) {
  PrepareOptions o;
  bool fallback = true;
  const auto& train = ds().tasks(data::Split::kTrain);
  // Fashion items of AUSER before time 900, stored order: the shirt (100), the socks (500).
  EXPECT_EQ(recommend_label(ds(), train[1], o, &fallback), "B0SHIRT001, B0SOCKS001");
  EXPECT_FALSE(fallback);
  // No book in the history: docs/decisions.md D8 (a) takes the most recent behaviours of any category, never the
  // target itself.
  std::string label = recommend_label(ds(), train[2], o, &fallback);
  EXPECT_EQ(label, "B0KETTLE01, B0SHIRT001, B0KETTLE02, B0MUG00001, B0SOCKS001");
  EXPECT_TRUE(fallback);
  EXPECT_EQ(label.find("B0BOOK0001"), std::string::npos);
  o.recommend_length = 2;
  EXPECT_EQ(recommend_label(ds(), train[2], o, &fallback), "B0MUG00001, B0SOCKS001");
  o.recommend_fallback = RecommendFallback::kSkip;
  EXPECT_EQ(recommend_label(ds(), train[2], o, &fallback), "");
  EXPECT_EQ(recommend_label(ds(), train[4], PrepareOptions{}, &fallback), "");  // no history at all

  // A numbered memory (issue 40): each item as its place counted from the newest, which the agent maps back to the
  // same ASINs, in the same order.
  PrepareOptions numbered;
  numbered.memory.recommend_layout = agents::RecommendLayout::kNumbered;
  const std::vector<std::string> refs = agents::puma_references(ds(), train[1]);
  EXPECT_EQ(refs, (std::vector<std::string>{"B0SOCKS001", "B0MUG00001", "B0KETTLE02", "B0SHIRT001", "B0KETTLE01"}));
  EXPECT_EQ(recommend_label(ds(), train[1], numbered, &fallback), "4, 1");
  EXPECT_EQ(json::parse(agents::puma_action("4, 1", env::kRecommend, refs).arguments_json)["product_sequence"],
            json({"B0SHIRT001", "B0SOCKS001"}));
  numbered.recommend_length = 2;
  EXPECT_EQ(recommend_label(ds(), train[2], numbered, &fallback), "2, 1");  // D8 (a): the two newest of any kind
  EXPECT_TRUE(fallback);
}

TEST(PumaPrepare, ParamExamplesWithHeuristicLabels) {
  agents::fctest::KeywordEmbedder embedder;
  auto counter = agents::approximate_token_counter();
  PrepareReport report;
  PrepareOptions o;
  auto ex = param_examples(ds(), data::Split::kTrain, embedder, *counter, heuristic_search_labeler(ds(), embedder), o,
                           &report);
  EXPECT_EQ(report.tasks, 5);
  EXPECT_EQ(report.examples, 4);
  EXPECT_EQ(report.skipped, 1);  // BNEW's recommendation: nothing to label with
  EXPECT_EQ(report.recommend_fallbacks, 1);
  ASSERT_EQ(ex.size(), 4u);
  const auto& train = ds().tasks(data::Split::kTrain);

  // Search: the heuristic's query from the instruction.
  EXPECT_EQ(ex[0].task, "train/0");
  EXPECT_NE(ex[0].target.find("kettle"), std::string::npos) << ex[0].target;
  EXPECT_EQ(ex[0].target.find("Looking"), std::string::npos) << ex[0].target;
  // Every prompt is the runtime agent's template with the ground-truth tool and the cut memory.
  for (const Example& e : ex) {
    const data::Task& t = train[std::stoul(e.task.substr(6))];
    EXPECT_EQ(e.memory, agents::puma_memory(ds(), t, t.type, embedder, o.memory, *counter));
    EXPECT_EQ(e.prompt, agents::puma_param_prompt(agents::puma_instruction_text(ds(), t, t.type), e.memory,
                                                  env::task_function(t.type)));
  }
  EXPECT_EQ(ex[3].type, data::TaskType::kReview);
  EXPECT_EQ(ex[3].target, "A true review.");
  EXPECT_NE(ex[3].prompt.find("Product in question:\nTitle: Red Electric Kettle"), std::string::npos);
  // Recommendation memory is newest first.
  EXPECT_EQ(ex[1].memory.rfind("Title:Wool Socks", 0) == 0 || ex[1].memory.rfind("Title:Steel Electric Kettle", 0) == 0,
            true)
      << ex[1].memory;

  // docs/decisions.md D8 skip: the book task goes too.
  o.recommend_fallback = RecommendFallback::kSkip;
  PrepareReport skip;
  EXPECT_EQ(param_examples(ds(), data::Split::kTrain, embedder, *counter, heuristic_search_labeler(ds(), embedder), o,
                           &skip)
                .size(),
            3u);
  EXPECT_EQ(skip.skipped, 2);

  // The test split labels search with the target's title (evaluation loss only) and never calls the labeler.
  SearchLabeler fails = [](const data::Task&, std::string_view) -> std::string { throw Error("not on test"); };
  auto test_ex = param_examples(ds(), data::Split::kTest, embedder, *counter, fails, PrepareOptions{});
  ASSERT_FALSE(test_ex.empty());
  EXPECT_EQ(test_ex[0].target, "Red Electric Kettle");
}

TEST(PumaPrepare, LlmSearchLabelsThroughTheServer) {
  agents::fctest::ServerLlm llm;
  agents::fctest::KeywordEmbedder embedder;
  auto counter = agents::approximate_token_counter();
  llm.server.push(ScriptedReply::text("  quiet stainless electric kettle Isple \n"));
  auto labeler = llm_search_labeler(*llm.http, "gpt-4o-mini");
  PrepareOptions o;
  o.memory.max_tokens = 20;  // the labeler still reads the full memory
  PrepareReport report;
  data::Dataset one = with_train_tasks();
  auto ex = param_examples(ds(), data::Split::kTrain, embedder, *counter, labeler, o, &report);
  EXPECT_EQ(ex[0].target, "quiet stainless electric kettle Isple");
  ASSERT_EQ(llm.server.n_requests(), 1u);  // only the search task asks
  json body = json::parse(llm.server.requests()[0].body);
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["temperature"], 0.0);
  const data::Task& t = ds().tasks(data::Split::kTrain)[0];
  agents::PumaMemoryOptions full = o.memory;
  full.max_tokens = 1 << 30;
  std::string full_memory = agents::puma_memory(ds(), t, t.type, embedder, full, *counter);
  EXPECT_EQ(body["messages"][0]["content"], search_label_prompt(t.instruction, full_memory));
  EXPECT_GT(full_memory.size(), ex[0].memory.size());
  std::string prompt = search_label_prompt("find X", "M");
  EXPECT_TRUE(prompt.ends_with("Instruction: find X\n\nMemory: M\n\nTool: search_product_by_query\n")) << prompt;
}

TEST(PumaPrepare, JsonlRoundTripAndErrors) {
  pwab::test::TempDir dir;
  auto ex = function_examples(ds(), data::Split::kTrain);
  ex[0].memory = "Title:A\n|Title:\"B\"";
  write_examples(dir / "f.jsonl", ex);
  auto back = read_examples(dir / "f.jsonl");
  ASSERT_EQ(back.size(), ex.size());
  for (std::size_t i = 0; i < ex.size(); ++i) {
    EXPECT_EQ(back[i].task, ex[i].task);
    EXPECT_EQ(back[i].prompt, ex[i].prompt);
    EXPECT_EQ(back[i].target, ex[i].target);
    EXPECT_EQ(back[i].memory, ex[i].memory);
    EXPECT_EQ(back[i].type, ex[i].type);
  }
  pwab::test::write_text(dir / "bad.jsonl", pwab::test::read_text(dir / "f.jsonl") + "{\"task\": 3}\n");
  try {
    read_examples(dir / "bad.jsonl");
    FAIL() << "no error";
  } catch (const DataError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.jsonl line 6"), std::string::npos) << m;
    EXPECT_NE(m.find("'task'"), std::string::npos) << m;
  }
  EXPECT_THROW(read_examples(dir / "missing.jsonl"), Error);
}

}  // namespace
}  // namespace pwab::puma
