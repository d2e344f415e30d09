// A served multi-turn episode with the LLM user simulator (user_sim "llm"), its model answered by the real
// loopback OpenAI-compatible server of the tests: the agent's respond reaches the model, its reply is the
// observation, and the user's stop sentinel means what it means in-process.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "env/tools.h"
#include "llm/http_chat_model.h"
#include "llm/ledger.h"
#include "llm/llm_test_util.h"
#include "serve/episode_service.h"
#include "serve/serve_world.h"
#include "sim/llm_user.h"
#include "support/openai_test_server.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;
using pwab::test::OpenAITestServer;
using pwab::test::ScriptedReply;

TEST(ServeLlmUser, RespondGoesToTheModelAndItsReplyIsTheObservation) {
  OpenAITestServer server;
  llm::HttpChatModel model(llm::testing::make_endpoint(llm::testing::fast_config(server)));
  ServiceOptions options;
  options.llm_user = [&model](const data::Task& task, uint64_t, const std::string&) -> std::unique_ptr<env::UserChannel> {
    return std::make_unique<sim::LlmUser>(test::world().ds, task, model, "gpt-4o-mini");
  };
  EpisodeService service(*test::world().env, options);
  EXPECT_EQ(service.info()["user_sims"], Json({"none", "scripted", "llm"}));

  server.push(ScriptedReply::text("Something sturdy for my kitchen, under $40."));
  server.push(ScriptedReply::text("###STOP###"));
  Json start = service.start({{"task", "test/0"}, {"track", "multi"}, {"user_sim", "llm"}});
  EXPECT_EQ(start["user_sim"], "llm");
  std::string id = start["episode_id"];
  Json r = service.step(id, {{"name", env::kRespond}, {"arguments", {{"content", "What are you looking for?"}}}});
  EXPECT_EQ(r["observation"], "Something sturdy for my kitchen, under $40.");
  EXPECT_FALSE(r["done"]);
  ASSERT_EQ(server.n_requests(), 1u);
  EXPECT_NE(server.requests()[0].body.find("What are you looking for?"), std::string::npos);
  // The user's stop sentinel is only an observation (done comes from "Error: ###STOP###" alone, as in the
  // original); the agent decides to stop.
  r = service.step(id, {{"name", env::kRespond}, {"arguments", {{"content", "Anything else?"}}}});
  EXPECT_EQ(r["observation"], "###STOP###");
  EXPECT_FALSE(r["done"]);
  r = service.step(id, {{"name", env::kStop}});
  EXPECT_EQ(r["ending"], "stop");
  Json end = service.end(id);
  EXPECT_TRUE(end["record"]["attempts"].empty());
  EXPECT_EQ(end["record"]["steps"], 3);
  EXPECT_EQ(server.n_requests(), 2u);
}

// --budget-usd on a server (issue 19: accepted and ignored, 30 paid calls where ~3 were allowed, usage null): once
// the ledger's priced cost reaches the budget, no LLM-user episode starts and no respond reaches the model; each
// record carries its own episode's usage.
TEST(ServeLlmUser, TheBudgetStopsPaidCallsAndRecordsCarryTheirUsage) {
  OpenAITestServer server;
  llm::HttpChatModel model(llm::testing::make_endpoint(llm::testing::fast_config(server)));
  llm::PriceTable prices = llm::PriceTable::parse(R"({"models": {"gpt-4o-mini": {"prompt": 1000000, "completion": 1000000}}})", "test");
  llm::Ledger ledger(prices, /*budget_usd=*/0.5);  // $1 per token: one call of a few tokens spends it
  ServiceOptions options;
  options.llm_user = [&](const data::Task& task, uint64_t, const std::string& key) -> std::unique_ptr<env::UserChannel> {
    auto metered = std::make_unique<llm::MeteredChatModel>(model, ledger, llm::Role::kUser, key);
    return std::make_unique<sim::LlmUser>(test::world().ds, task, std::move(metered), "gpt-4o-mini");
  };
  options.budget_reached = [&] { return ledger.budget_reached(); };
  options.usage_json = [&](const std::string& key) { return ledger.to_json(key); };
  EpisodeService service(*test::world().env, options);

  for (int i = 0; i < 30; ++i) server.push(ScriptedReply::text("A kettle, please."));
  std::string a = service.start({{"task", "test/0"}, {"track", "multi"}, {"user_sim", "llm"}})["episode_id"];
  std::string b = service.start({{"task", "test/1"}, {"track", "multi"}, {"user_sim", "llm"}})["episode_id"];
  const Json respond = {{"name", env::kRespond}, {"arguments", {{"content", "What are you after?"}}}};
  service.step(a, respond);  // the first paid call spends the budget
  ASSERT_TRUE(ledger.budget_reached());
  int refused = 0;
  for (int i = 0; i < 29; ++i) {
    try {
      service.step(i % 2 ? a : b, respond);
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status, 402);
      EXPECT_EQ(e.code, "budget_reached");
      ++refused;
    }
  }
  EXPECT_EQ(refused, 29);
  EXPECT_EQ(server.n_requests(), 1u);  // one paid call, not 30
  try {
    service.start({{"task", "test/2"}, {"track", "multi"}, {"user_sim", "llm"}});
    ADD_FAILURE() << "an LLM-user episode started past the budget";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.status, 402);
  }
  EXPECT_NO_THROW(service.start({{"task", "test/2"}, {"track", "multi"}}));  // the scripted user costs nothing
  service.step(a, {{"name", env::kStop}});
  Json record = service.end(a)["record"];
  ASSERT_TRUE(record["usage"].is_object()) << record.dump();
  EXPECT_GT(record["usage"]["user"]["prompt_tokens"].get<int64_t>(), 0) << record["usage"].dump();
  Json other = service.end(b)["record"];
  EXPECT_EQ(other["usage"]["user"]["prompt_tokens"], 0) << other["usage"].dump();  // b never reached the model
}

// The leak guard in a served episode: the user's leaky draft is rewritten before the agent sees it, and the
// record (the client's and the run directory's) carries the guard's counts as its "user" object.
TEST(ServeLlmUser, TheLeakGuardRewritesAndTheRecordSaysSo) {
  OpenAITestServer server;
  llm::HttpChatModel model(llm::testing::make_endpoint(llm::testing::fast_config(server)));
  ServiceOptions options;
  options.llm_user = [&model](const data::Task& task, uint64_t,
                               const std::string&) -> std::unique_ptr<env::UserChannel> {
    sim::LlmUserOptions o;
    o.leak_guard = 1;
    return std::make_unique<sim::LlmUser>(test::world().ds, task, model, "gpt-4o-mini", o);
  };
  pwab::test::TempDir dir;
  runner::RunManifest manifest;
  manifest.config_json = R"({"mode":"serve"})";
  runner::RunDirectory run = runner::RunDirectory::open(dir / "run", manifest, false);
  EpisodeService service(*test::world().env, options, &run);

  const data::Dataset& ds = test::world().ds;
  const auto& tasks = ds.tasks(data::Split::kTest);
  auto task =
      std::find_if(tasks.begin(), tasks.end(), [](const data::Task& t) { return t.type != data::TaskType::kReview; });
  ASSERT_NE(task, tasks.end());
  const std::string asin = ds.product(task->target_product).parent_asin;
  server.push(ScriptedReply::text("It is " + asin + ", of course."));
  server.push(ScriptedReply::text("Something that lasts, please."));
  const Json start = {{"task", data::task_key(*task)}, {"track", "multi"}, {"user_sim", "llm"}};
  std::string id = service.start(start)["episode_id"];
  Json r = service.step(id, {{"name", env::kRespond}, {"arguments", {{"content", "Which one do you want?"}}}});
  EXPECT_EQ(r["observation"], "Something that lasts, please.");
  ASSERT_EQ(server.n_requests(), 2u);
  EXPECT_NE(server.requests()[1].body.find(sim::LlmUser::kProductCorrection), std::string::npos);
  service.step(id, {{"name", env::kStop}});
  const Json expected = {{"leak_guard", 1}, {"rewrites", 1}, {"guard_fallbacks", 0}, {"leaky_drafts", 1}};
  EXPECT_EQ(service.end(id)["record"]["user"], expected);
  auto records = runner::read_records(dir / "run");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(Json::parse(records[0].user_json), expected);
}

}  // namespace
}  // namespace pwab::serve
