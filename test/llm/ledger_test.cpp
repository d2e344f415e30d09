// The cost ledger and the price table: arithmetic per task, role and run; unpriced models; cached calls;
// the budget; price files with errors that name the file and the entry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "llm/http_chat_model.h"
#include "llm/ledger.h"
#include "llm/llm_test_util.h"
#include "llm/response_cache.h"
#include "support/test_support.h"

namespace pwab::llm {
namespace {

using test::OpenAITestServer;
using test::ScriptedReply;
using test::TempDir;
using namespace pwab::llm::testing;

TEST(PriceTable, BuiltinHasTheOriginalPrices) {
  PriceTable t = PriceTable::builtin();
  EXPECT_EQ(t.entries().size(), 7u);
  auto expect = [&](const char* model, double prompt, double completion) {
    auto p = t.find(model);
    ASSERT_TRUE(p) << model;
    EXPECT_DOUBLE_EQ(p->prompt_usd_per_1m, prompt) << model;
    EXPECT_DOUBLE_EQ(p->completion_usd_per_1m, completion) << model;
  };
  expect("gpt-4o-mini", 0.15, 0.60);
  expect("gpt-4o", 5, 15);
  expect("gpt-4-turbo", 10, 30);
  expect("gpt-4-32k-0613", 60, 120);
  expect("gpt-3.5-turbo", 0.5, 1.5);
  expect("Meta-Llama-3-8B", 0.15, 0.15);
  expect("Meta-Llama-3-70B", 1.0, 1.0);
  EXPECT_FALSE(t.find("gpt-4o-mini-2024-07-18"));  // exact names only
  EXPECT_EQ(t.source(), "built-in price table");
}

TEST(PriceTable, BuiltinTextIsTheRepositoryFile) {
  std::string file = test::read_text(std::filesystem::path(PWAB_TEST_FIXTURES) / ".." / ".." / "src" / "llm" /
                                     "default_prices.json");
  EXPECT_EQ(nlohmann::json::parse(file), nlohmann::json::parse(builtin_price_table_json()));
}

TEST(PriceTable, LoadsAUserFile) {
  TempDir dir;
  test::write_text(dir / "prices.json",
                   R"({"models": {"my-llama": {"prompt": 0.2, "completion": 0.4},
                                  "gpt-4o-mini": {"prompt": 1, "completion": 2}}})");
  PriceTable t = PriceTable::load(dir / "prices.json");
  EXPECT_EQ(t.entries().size(), 2u);
  EXPECT_DOUBLE_EQ(t.find("my-llama")->completion_usd_per_1m, 0.4);
  EXPECT_DOUBLE_EQ(t.find("gpt-4o-mini")->prompt_usd_per_1m, 1.0);
  EXPECT_EQ(t.source(), (dir / "prices.json").string());
}

TEST(PriceTable, FileErrorsNameTheFileAndTheEntry) {
  TempDir dir;
  auto error_of = [&](const std::string& text) -> std::string {
    test::write_text(dir / "prices.json", text);
    try {
      PriceTable::load(dir / "prices.json");
    } catch (const DataError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string file = (dir / "prices.json").string();
  struct Case {
    std::string text;
    std::vector<std::string> expected;  // substrings of the message besides the file name
  };
  std::vector<Case> cases = {
      {R"({"models": {"gpt-4o": {"prompt": 5, )", {"not valid JSON"}},
      {R"([1, 2])", {"not a JSON object"}},
      {R"({"prices": {}})", {"unknown key \"prices\""}},
      {R"({"unit": "usd_per_token", "models": {}})", {"\"unit\""}},
      {R"({"models": []})", {"no \"models\" object"}},
      {R"({"models": {"gpt-4o": 5}})", {"models[\"gpt-4o\"]", "expected an object"}},
      {R"({"models": {"gpt-4o": {"prompt": 5}}})", {"models[\"gpt-4o\"]", "missing \"completion\""}},
      {R"({"models": {"gpt-4o": {"prompt": "5", "completion": 15}}})", {"models[\"gpt-4o\"].prompt", "\"5\""}},
      {R"({"models": {"gpt-4o": {"prompt": 5, "completion": -1}}})", {"models[\"gpt-4o\"].completion", "-1"}},
      {R"({"models": {"gpt-4o": {"prompt": 5, "completion": 15, "complection": 1}}})",
       {"models[\"gpt-4o\"]", "unknown key \"complection\""}},
  };
  for (const Case& c : cases) {
    std::string what = error_of(c.text);
    EXPECT_NE(what.find(file), std::string::npos) << c.text << " -> " << what;
    for (const std::string& part : c.expected)
      EXPECT_NE(what.find(part), std::string::npos) << c.text << " -> " << what;
  }
  try {
    PriceTable::load(dir / "missing.json");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos) << e.what();
  }
}

TEST(Ledger, TokensAndDollarsPerTaskRoleAndRun) {
  Ledger ledger(PriceTable::builtin());
  ledger.record("test/1", Role::kAgent, "gpt-4o-mini", 1'000'000, 1'000'000, false);  // 0.15 + 0.60
  ledger.record("test/1", Role::kUser, "gpt-4o-mini", 2'000, 100, false);            // 0.0003 + 0.00006
  ledger.record("test/2", Role::kAgent, "gpt-4o", 1'000, 500, false);                // 0.005 + 0.0075
  ledger.record("", Role::kOther, "gpt-4o-mini", 100'000, 0, false);                  // 0.015, run only

  Usage a1 = ledger.task("test/1", Role::kAgent);
  EXPECT_EQ(a1.calls, 1);
  EXPECT_EQ(a1.prompt_tokens, 1'000'000);
  EXPECT_NEAR(*a1.cost_usd(), 0.75, 1e-12);
  EXPECT_NEAR(*ledger.task("test/1", Role::kUser).cost_usd(), 0.00036, 1e-12);
  Usage t1 = ledger.task_total("test/1");
  EXPECT_EQ(t1.calls, 2);
  EXPECT_EQ(t1.prompt_tokens, 1'002'000);
  EXPECT_EQ(t1.completion_tokens, 1'000'100);
  EXPECT_NEAR(*t1.cost_usd(), 0.75036, 1e-12);
  EXPECT_NEAR(*ledger.task_total("test/2").cost_usd(), 0.0125, 1e-12);
  EXPECT_EQ(ledger.task_total("test/3").calls, 0);

  EXPECT_NEAR(*ledger.run(Role::kAgent).cost_usd(), 0.7625, 1e-12);
  EXPECT_NEAR(*ledger.run(Role::kOther).cost_usd(), 0.015, 1e-12);
  Usage total = ledger.run_total();
  EXPECT_EQ(total.calls, 4);
  EXPECT_NEAR(*total.cost_usd(), 0.75036 + 0.0125 + 0.015, 1e-12);
  EXPECT_EQ(total.cost_text(), "$0.777860");

  auto j = nlohmann::json::parse(ledger.to_json("test/1"));
  EXPECT_EQ(j["agent"]["prompt_tokens"], 1'000'000);
  EXPECT_EQ(j["user"]["calls"], 1);
  EXPECT_EQ(j["other"]["calls"], 0);
  EXPECT_NEAR(j["total"]["cost_usd"].get<double>(), 0.75036, 1e-12);
  auto run = nlohmann::json::parse(ledger.to_json());
  EXPECT_EQ(run["total"]["calls"], 4);
}

TEST(Ledger, UnpricedModelIsNeverZeroDollars) {
  Ledger ledger(PriceTable::builtin());
  ledger.record("test/1", Role::kAgent, "my-local-llama", 500, 50, false);
  Usage u = ledger.task("test/1", Role::kAgent);
  EXPECT_FALSE(u.priced());
  EXPECT_FALSE(u.cost_usd().has_value());
  EXPECT_EQ(u.unpriced_models, std::vector<std::string>{"my-local-llama"});
  EXPECT_EQ(u.prompt_tokens, 500);
  EXPECT_EQ(u.cost_text(), "unpriced (my-local-llama)");
  auto j = nlohmann::json::parse(u.to_json());
  EXPECT_TRUE(j["cost_usd"].is_null());
  EXPECT_EQ(j["unpriced_models"][0], "my-local-llama");

  // Mixed with a priced model: the total is unknown, the priced part is shown.
  ledger.record("test/1", Role::kUser, "gpt-4o-mini", 1'000'000, 0, false);
  Usage total = ledger.task_total("test/1");
  EXPECT_FALSE(total.cost_usd().has_value());
  EXPECT_NEAR(total.priced_cost_usd, 0.15, 1e-12);
  EXPECT_EQ(total.cost_text(), "$0.150000 + unpriced (my-local-llama)");
  ledger.record("test/2", Role::kAgent, "another-model", 1, 1, false);
  EXPECT_EQ(ledger.run_total().unpriced_models, (std::vector<std::string>{"another-model", "my-local-llama"}));
}

TEST(Ledger, CachedCallsCostNothingButAreCounted) {
  Ledger ledger(PriceTable::builtin());
  ledger.record("test/1", Role::kAgent, "gpt-4o", 1'000, 100, true);
  ledger.record("test/1", Role::kAgent, "unlisted-model", 1'000, 100, true);
  Usage u = ledger.task("test/1", Role::kAgent);
  EXPECT_EQ(u.calls, 0);
  EXPECT_EQ(u.prompt_tokens, 0);
  EXPECT_EQ(u.cached_calls, 2);
  EXPECT_EQ(u.cached_prompt_tokens, 2'000);
  EXPECT_EQ(u.cached_completion_tokens, 200);
  EXPECT_TRUE(u.priced());  // a replayed call of an unpriced model costs nothing either
  EXPECT_EQ(*u.cost_usd(), 0.0);
}

TEST(Ledger, BudgetIsReachedOnPricedCost) {
  Ledger none(PriceTable::builtin());
  none.record("t", Role::kAgent, "gpt-4", 1'000'000'000, 0, false);
  EXPECT_FALSE(none.budget_reached());  // no budget set

  Ledger ledger(PriceTable::builtin(), 0.01);
  EXPECT_FALSE(ledger.budget_reached());
  ledger.record("t/1", Role::kAgent, "gpt-4o-mini", 60'000, 0, false);  // $0.009
  EXPECT_FALSE(ledger.budget_reached());
  ledger.record("t/1", Role::kAgent, "gpt-4o-mini", 60'000, 0, true);  // replayed: $0
  EXPECT_FALSE(ledger.budget_reached());
  ledger.record("t/2", Role::kUser, "gpt-4o-mini", 0, 1'700, false);  // $0.00102 -> $0.01002
  EXPECT_TRUE(ledger.budget_reached());

  // Spending of an earlier session counts toward the budget.
  Ledger resumed(PriceTable::builtin(), 1.0);
  Usage prior;
  prior.calls = 10;
  prior.priced_cost_usd = 0.999;
  resumed.add_prior(Role::kAgent, prior);
  EXPECT_FALSE(resumed.budget_reached());
  resumed.record("t/3", Role::kAgent, "gpt-4o-mini", 10'000, 0, false);
  EXPECT_TRUE(resumed.budget_reached());
  EXPECT_EQ(resumed.run(Role::kAgent).calls, 11);
  EXPECT_EQ(resumed.task_total("t/3").calls, 1);

  EXPECT_THROW(Ledger(PriceTable::builtin(), -1.0), UsageError);
}

TEST(Ledger, ThreadSafeTotals) {
  Ledger ledger(PriceTable::builtin());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i)
        ledger.record("task/" + std::to_string(i % 10), t % 2 ? Role::kUser : Role::kAgent, "gpt-4o-mini", 10, 1,
                      false);
    });
  for (auto& th : threads) th.join();
  Usage total = ledger.run_total();
  EXPECT_EQ(total.calls, 8000);
  EXPECT_EQ(total.prompt_tokens, 80'000);
  EXPECT_EQ(ledger.task_total("task/3").calls, 800);
  EXPECT_NEAR(*total.cost_usd(), (80'000 * 0.15 + 8'000 * 0.60) / 1e6, 1e-12);
}

TEST(Usage, JsonRoundTrip) {
  Usage u;
  u.calls = 3;
  u.prompt_tokens = 100;
  u.completion_tokens = 20;
  u.cached_calls = 1;
  u.cached_prompt_tokens = 7;
  u.priced_cost_usd = 0.25;
  u.unpriced_models = {"x"};
  Usage back = Usage::from_json(u.to_json());
  EXPECT_EQ(back.calls, 3);
  EXPECT_EQ(back.completion_tokens, 20);
  EXPECT_EQ(back.cached_prompt_tokens, 7);
  EXPECT_DOUBLE_EQ(back.priced_cost_usd, 0.25);
  EXPECT_EQ(back.unpriced_models, std::vector<std::string>{"x"});
  EXPECT_THROW(Usage::from_json("{\"calls\": \"three\"}"), DataError);
}

TEST(Role, Names) {
  EXPECT_EQ(to_string(Role::kUser), "user");
  EXPECT_EQ(parse_role("agent"), Role::kAgent);
  EXPECT_THROW(parse_role("judge"), UsageError);
}

TEST(MeteredChatModel, RecordsEachRoleOfAnEpisode) {
  TempDir dir;
  OpenAITestServer server;
  auto cache = std::make_shared<ResponseCache>(dir.path());
  auto shared = std::make_shared<CachedChatModel>(std::make_shared<HttpChatModel>(make_endpoint(fast_config(server))),
                                                  cache, CacheMode::kRecord);
  Ledger ledger(PriceTable::builtin());
  MeteredChatModel agent(*shared, ledger, Role::kAgent, "test/5");
  MeteredChatModel user(*shared, ledger, Role::kUser, "test/5");
  server.push(ScriptedReply::tool_call("search_product_by_query", R"({"query": "q"})", "c1", 1'000, 100));
  server.push(ScriptedReply::text("I want it in blue.", 2'000, 10));
  agent.chat(tool_request());
  user.chat(text_request());
  agent.chat(tool_request());  // replayed from the cache
  Usage a = ledger.task("test/5", Role::kAgent);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(a.prompt_tokens, 1'000);
  EXPECT_EQ(a.cached_calls, 1);
  EXPECT_EQ(a.cached_prompt_tokens, 1'000);
  EXPECT_NEAR(*a.cost_usd(), (1'000 * 0.15 + 100 * 0.60) / 1e6, 1e-15);
  EXPECT_EQ(ledger.task("test/5", Role::kUser).prompt_tokens, 2'000);
  EXPECT_EQ(ledger.run_total().calls, 2);
}

}  // namespace
}  // namespace pwab::llm
