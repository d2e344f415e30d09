// `POST /v1/reward` on a real server (src/serve/reward.h) scoring with the benchmark's own functions
// (puma/scoring.h): the same numbers as `pwab puma fast-test`'s scorer, completions read as the puma agent reads
// them (and as Hermes tool calls), batches with a bad item, OpenRLHF's remote reward-model request, and refusals.
#include "serve/reward.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "env/tools.h"
#include "puma/scoring.h"
#include "serve/http_server.h"
#include "serve/serve_world.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;
using test::world;

RewardFunctions benchmark_reward() {
  const env::Environment& e = *world().env;
  auto to_score = [](puma::RolloutReward r) {
    return RolloutScore{std::move(r.function), std::move(r.parameter), r.function_acc, r.result_acc};
  };
  RewardFunctions f;
  f.score = [&e, to_score](const data::Task& t, std::string_view fn, std::string_view p) {
    return to_score(puma::rollout_reward(e, t, fn, p));
  };
  f.score_completion = [&e, to_score](const data::Task& t, std::string_view c) {
    return to_score(puma::completion_reward(e, t, c));
  };
  return f;
}

struct Served {
  Served() : service(*world().env, {}), server(service, options()) { server.start(); }
  static HttpOptions options() {
    HttpOptions o;
    o.port = 0;
    o.reward = benchmark_reward();
    return o;
  }
  Json post(const Json& body, int expect = 200) const {
    httplib::Client c("127.0.0.1", server.port());
    auto r = c.Post("/v1/reward", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expect) << r->body;
    return Json::parse(r->body);
  }
  EpisodeService service;
  HttpServer server;
};

const data::Task& first_task(data::TaskType type) {
  for (const auto& t : world().ds.tasks(data::Split::kTest))
    if (t.type == type) return t;
  throw std::runtime_error("no such task");
}

std::string title_of_target(const data::Task& task) { return world().ds.product(task.target_product).title; }

TEST(Reward, ScoresAsTheFastTestDoes) {
  Served s;
  std::vector<const data::Task*> tasks;
  std::map<std::string, std::string, std::less<>> functions, parameters;
  Json batch = Json::array();
  int n = 0;
  for (const auto& t : world().ds.tasks(data::Split::kTest)) {
    if (n++ >= 30) break;
    tasks.push_back(&t);
    // Right and wrong functions, parameters that find the target or not.
    std::string fn(n % 5 == 0 ? "search_product_by_query" : env::task_function(t.type));
    std::string param = t.type == data::TaskType::kSearch    ? title_of_target(t)
                        : t.type == data::TaskType::kReview  ? "Works as described, " + t.instruction.substr(0, 40)
                                                             : world().ds.product(t.target_product).parent_asin + ", B0";
    functions[t.instruction] = fn;
    parameters[t.instruction] = param;
    batch.push_back({{"task", runner::task_key(t)}, {"function", fn}, {"parameter", param}});
  }
  puma::FastTestResult expected = puma::fast_test(*world().env, tasks, functions, parameters);
  Json got = s.post(batch);
  ASSERT_EQ(got.size(), tasks.size());
  double found = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(got[i]["task"], expected.tasks[i].task);
    EXPECT_DOUBLE_EQ(got[i]["function_acc"].get<double>(), expected.tasks[i].f) << i;
    EXPECT_DOUBLE_EQ(got[i]["result_acc"].get<double>(), expected.tasks[i].r) << i;
    EXPECT_DOUBLE_EQ(got[i]["reward"].get<double>(), expected.tasks[i].r);
    found += expected.tasks[i].r;
  }
  EXPECT_GT(found, 0);  // some parameters found their targets: the comparison is not all zeros
}

TEST(Reward, ReadsCompletionsAsThePumaAgentDoes) {
  Served s;
  const data::Task& task = first_task(data::TaskType::kSearch);
  const std::string key = runner::task_key(task);
  Json direct = s.post({{"task", key}, {"function", "search_product_by_query"}, {"parameter", title_of_target(task)}});
  ASSERT_GT(direct["result_acc"].get<double>(), 0);
  for (const std::string& completion :
       {"search_product_by_query\n### Tool Parameter:\n" + title_of_target(task),
        "### Tool:\nsearch_product_by_query\n### Tool Parameter:\n  " + title_of_target(task) + "  ",
        "search_product_by_query\n" + title_of_target(task),
        "<tool_call>\n{\"name\": \"search_product_by_query\", \"arguments\": {\"query\": " + Json(title_of_target(task)).dump() +
            "}}\n</tool_call>"}) {
    Json got = s.post({{"task", key}, {"completion", completion}});
    EXPECT_EQ(got["function"], "search_product_by_query") << completion;
    EXPECT_EQ(got["parameter"], title_of_target(task)) << completion;
    EXPECT_DOUBLE_EQ(got["result_acc"].get<double>(), direct["result_acc"].get<double>()) << completion;
  }
  Json wrong = s.post({{"task", key}, {"completion", "add_product_review\n### Tool Parameter:\nGreat."}});
  EXPECT_EQ(wrong["function_acc"], 0.0);
  EXPECT_EQ(wrong["result_acc"], 0.0);
  // Recommendation: a tool call's list becomes the agent's comma-separated parameter.
  const data::Task& rec = first_task(data::TaskType::kRecommend);
  const std::string target = world().ds.product(rec.target_product).parent_asin;
  Json listed = s.post({{"task", runner::task_key(rec)},
                        {"completion", Json{{"name", "get_recommendations_by_history"},
                                            {"arguments", {{"product_sequence", {target, "B0NOTHING"}}}}}.dump()}});
  EXPECT_EQ(listed["parameter"], target + ", B0NOTHING");
  EXPECT_DOUBLE_EQ(listed["result_acc"].get<double>(),
                   s.post({{"task", runner::task_key(rec)}, {"function", "get_recommendations_by_history"},
                           {"parameter", target + ", B0NOTHING"}})["result_acc"].get<double>());
}

// A tool call carries get_recommendations_by_history's product_sequence as a JSON array: the same reward as the
// comma-separated text, alone and in a batch; an array of anything but strings is refused, naming the field.
TEST(Reward, TakesARecommendationParameterAsAnArrayOfAsins) {
  Served s;
  // The user's own history as the sequence, on every recommendation task of both splits: the array and the text
  // give the same answer (parameter, function and result accuracy) on each. (This small world's recommender ranks
  // no target in its top k after these sequences, so the result accuracies compared are zeros: what the test shows is
  // that the array is read exactly as the text is, the same parameter reaching the same scorer.)
  std::string key, target, listed;
  Json history = Json::array(), as_text;
  int compared = 0;
  for (data::Split split : {data::Split::kTest, data::Split::kTrain})
    for (const auto& t : world().ds.tasks(split)) {
      if (t.type != data::TaskType::kRecommend) continue;
      Json asins = Json::array();
      std::string text;
      for (const data::Behaviour* b : world().ds.visible_history(t)) {
        asins.push_back(world().ds.product(b->product).parent_asin);
        text += (text.empty() ? "" : ", ") + asins.back().get<std::string>();
      }
      Json scored = s.post({{"task", runner::task_key(t)}, {"function", "get_recommendations_by_history"}, {"parameter", text}});
      Json from_array =
          s.post({{"task", runner::task_key(t)}, {"function", "get_recommendations_by_history"}, {"parameter", asins}});
      EXPECT_EQ(from_array, scored) << runner::task_key(t);
      EXPECT_EQ(from_array["function_acc"], 1.0);
      ++compared;
      if (key.empty() && asins.size() > 1) {
        key = runner::task_key(t), target = world().ds.product(t.target_product).parent_asin, listed = text;
        history = std::move(asins), as_text = std::move(scored);
      }
    }
  ASSERT_GT(compared, 10);
  ASSERT_FALSE(key.empty());
  Json as_array = s.post({{"task", key}, {"function", "get_recommendations_by_history"}, {"parameter", history}});
  EXPECT_EQ(as_array["parameter"], listed);
  EXPECT_EQ(as_array["function_acc"], 1.0);
  EXPECT_DOUBLE_EQ(as_array["result_acc"].get<double>(), as_text["result_acc"].get<double>());
  Json batch = s.post(Json::array({{{"task", key}, {"function", "get_recommendations_by_history"}, {"parameter", history}},
                                   {{"task", key}, {"function", "get_recommendations_by_history"},
                                    {"parameter", Json::array({target, 7})}}}));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0]["parameter"], listed);
  EXPECT_DOUBLE_EQ(batch[0]["result_acc"].get<double>(), as_text["result_acc"].get<double>());
  EXPECT_EQ(batch[1]["error"]["code"], "bad_request");
  Json refused = s.post({{"task", key}, {"function", "get_recommendations_by_history"}, {"parameter", {{"a", 1}}}}, 400);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("array of ASIN strings"), std::string::npos) << refused;
  // An empty list is an empty sequence, scored as the empty text is, not refused.
  EXPECT_EQ(s.post({{"task", key}, {"function", "get_recommendations_by_history"}, {"parameter", Json::array()}}),
            s.post({{"task", key}, {"function", "get_recommendations_by_history"}, {"parameter", ""}}));
}

TEST(Reward, BatchesKeepGoingPastABadItemAndSinglesAreRefused) {
  Served s;
  Json got = s.post(Json::array({{{"task", "test/0"}, {"function", "stop"}, {"parameter", ""}},
                                 {{"task", "test/99999"}, {"completion", "x"}},
                                 {{"task", "test/1"}},
                                 7}));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0]["function_acc"], 0.0);
  EXPECT_EQ(got[1]["error"]["code"], "unknown_task");
  EXPECT_EQ(got[1]["task"], "test/99999");
  EXPECT_EQ(got[2]["error"]["code"], "bad_request");
  EXPECT_EQ(got[3]["error"]["code"], "bad_request");
  EXPECT_EQ(s.post({{"task", "test/99999"}, {"completion", "x"}}, 404)["error"]["code"], "unknown_task");
  EXPECT_EQ(s.post({{"task", "test/1"}, {"completion", "x"}, {"function", "y"}}, 400)["error"]["code"], "bad_request");
  EXPECT_EQ(s.post({{"task", "test/1"}, {"completion", "x"}, {"answer", "y"}}, 400)["error"]["code"], "bad_request");
  EXPECT_EQ(s.post(Json::array()).size(), 0u);
}

// OpenRLHF's SingleTurnAgentExecutor posts {"query": [prompt + response decoded], "prompts": [prompt], "labels":
// [label]} and reads "rewards", "scores" and "extra_logs" (openrlhf/utils/agent.py, v0.11.0).
TEST(Reward, AnswersOpenRlhfsRemoteRewardModelRequest) {
  Served s;
  const data::Task& task = first_task(data::TaskType::kSearch);
  const std::string prompt = "### Instruction:\n" + task.instruction + "\n### Tool:\n";
  const std::string response = "search_product_by_query\n### Tool Parameter:\n" + title_of_target(task) + "</s>";
  Json got = s.post({{"query", {"<s> " + prompt + response}}, {"prompts", {prompt}}, {"labels", {runner::task_key(task)}}});
  ASSERT_EQ(got["rewards"].size(), 1u);
  Json direct = s.post({{"task", runner::task_key(task)}, {"function", "search_product_by_query"},
                        {"parameter", title_of_target(task)}});
  EXPECT_DOUBLE_EQ(got["rewards"][0].get<double>(), direct["result_acc"].get<double>());
  EXPECT_EQ(got["scores"], got["rewards"]);
  EXPECT_EQ(got["extra_logs"]["function_acc"][0], 1.0);
  EXPECT_EQ(s.post({{"query", {"x"}}, {"prompts", {"x"}}, {"labels", {"test/99999"}}}, 404)["error"]["code"], "unknown_task");
  EXPECT_EQ(s.post({{"query", {"x", "y"}}, {"prompts", {"x"}}, {"labels", {"test/1"}}}, 400)["error"]["code"], "bad_request");
}

TEST(Reward, ParsesCompletions) {
  EXPECT_EQ(puma::parse_completion("get_recommendations_by_history\nB1, B2"),
            (std::pair<std::string, std::string>{"get_recommendations_by_history", "B1, B2"}));
  EXPECT_EQ(puma::parse_completion("  \n### Tool:\nadd_product_review \n### Tool Parameter:\nNice.\n"),
            (std::pair<std::string, std::string>{"add_product_review", "Nice."}));
  EXPECT_EQ(puma::parse_completion(R"({"name": "add_product_review", "arguments": "{\"review\": \"ok\"}"})"),
            (std::pair<std::string, std::string>{"add_product_review", "ok"}));
  EXPECT_EQ(puma::parse_completion(""), (std::pair<std::string, std::string>{"", ""}));
  EXPECT_EQ(puma::parse_completion("<tool_call>{broken</tool_call>").first, "<tool_call>{broken</tool_call>");
}

}  // namespace
}  // namespace pwab::serve
