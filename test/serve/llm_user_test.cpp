// A served multi-turn episode with the LLM user simulator (user_sim "llm"), its model answered by the real
// loopback OpenAI-compatible server of the tests: the agent's respond reaches the model, its reply is the
// observation, and the user's stop sentinel means what it means in-process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "env/tools.h"
#include "llm/http_chat_model.h"
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
  options.llm_user = [&model](const data::Task& task, uint64_t) -> std::unique_ptr<env::UserChannel> {
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

}  // namespace
}  // namespace pwab::serve
