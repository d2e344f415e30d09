// The episode service without HTTP: its rules (the same as `pwab run`'s, through runner::Episode), refusals with
// the status a front end answers, records equal to in-process ones, the run directory, and idle expiry on a
// hand-moved clock.
#include "serve/episode_service.h"

#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "env/tools.h"
#include "metrics/metrics.h"
#include "runner/results.h"
#include "serve/serve_world.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;
using test::world;

//! The status and code of the RequestError `f` throws (0 and "" when it throws none).
template <class F>
std::pair<int, std::string> refusal(F&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return {e.status, e.code};
  }
  return {0, ""};
}

const data::Task& first_task(data::TaskType type) {
  for (const auto& t : world().ds.tasks(data::Split::kTest))
    if (t.type == type) return t;
  throw std::runtime_error("no task of that type");
}

std::string key(const data::Task& t) { return runner::task_key(t); }

Json call(std::string_view name, const Json& args) { return {{"name", name}, {"arguments", args}}; }

//! The target's true review, which add_product_review scores 1.0 on.
std::string true_review(const data::Task& t) {
  for (const auto& b : world().ds.user(t.user).behaviours)
    if (b.product == t.target_product && b.review.timestamp == t.timestamp) return b.review.text;
  throw std::runtime_error("no target review");
}

class Service : public ::testing::Test {
 protected:
  Service() : service_(*world().env, options()) {}
  static ServiceOptions options() {
    ServiceOptions o;
    o.seed = 5;
    return o;
  }
  EpisodeService service_;
};

TEST_F(Service, InfoDescribesTheServer) {
  Json info = service_.info();
  EXPECT_EQ(info["dataset"]["tasks"]["test"], world().ds.tasks(data::Split::kTest).size());
  EXPECT_EQ(info["tools"].size(), env::tool_specs().size());
  EXPECT_EQ(info["tools"][0]["function"]["name"], env::kSearch);
  EXPECT_EQ(info["tracks"], Json({"single", "multi"}));
  EXPECT_EQ(info["user_sims"], Json({"none", "scripted"}));  // no LLM user configured
  EXPECT_EQ(info["limits"]["max_sessions"], 1000);
  EXPECT_EQ(info["sessions"], 0);
}

TEST_F(Service, ListsTasksWithoutTheirAnswers) {
  const auto& tasks = world().ds.tasks(data::Split::kTest);
  Json page = service_.list_tasks({{"offset", 2}, {"limit", 3}});
  EXPECT_EQ(page["total"], tasks.size());
  EXPECT_EQ(page["split"], "test");
  ASSERT_EQ(page["tasks"].size(), 3u);
  EXPECT_EQ(page["tasks"][0]["task"], "test/2");
  EXPECT_EQ(page["tasks"][0]["instruction"], tasks[2].instruction);
  EXPECT_EQ(page["tasks"][0]["user_id"], world().ds.user(tasks[2].user).id);
  for (const auto& t : page["tasks"]) EXPECT_EQ(t.size(), 3u) << t;  // task, user_id, instruction: no type, no target
  EXPECT_EQ(service_.list_tasks({{"split", "train"}})["total"], world().ds.tasks(data::Split::kTrain).size());
  EXPECT_EQ(service_.list_tasks(Json::object())["tasks"].size(), std::min<std::size_t>(100, tasks.size()));
  EXPECT_TRUE(service_.list_tasks({{"offset", 100000}})["tasks"].empty());

  EXPECT_EQ(refusal([&] { service_.list_tasks({{"split", "history"}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.list_tasks({{"limit", 5000}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.list_tasks({{"offset", -1}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.list_tasks({{"limit", "ten"}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.list_tasks({{"page", 2}}); }).first, 400);
}

TEST_F(Service, StartRefusesBadRequests) {
  auto status = [&](const Json& request) { return refusal([&] { service_.start(request); }); };
  EXPECT_EQ(status(Json::array()), std::make_pair(400, std::string("bad_request")));
  EXPECT_EQ(status(Json::object()).first, 400);  // no task
  EXPECT_EQ(status({{"task", 17}}).first, 400);
  EXPECT_EQ(status({{"task", "test17"}}).first, 400);
  EXPECT_EQ(status({{"task", "test/x"}}).first, 400);
  EXPECT_EQ(status({{"task", "history/1"}}).first, 400);
  EXPECT_EQ(status({{"task", "test/100000"}}), std::make_pair(404, std::string("unknown_task")));
  EXPECT_EQ(status({{"task", "test/0"}, {"track", "both"}}).first, 400);
  EXPECT_EQ(status({{"task", "test/0"}, {"user_sim", "scripted"}}).first, 400);  // single-turn has no user
  EXPECT_EQ(status({{"task", "test/0"}, {"track", "multi"}, {"user_sim", "llm"}}).first, 400);  // none configured
  EXPECT_EQ(status({{"task", "test/0"}, {"max_steps", 0}}).first, 400);
  EXPECT_EQ(status({{"task", "test/0"}, {"max_steps", 1001}}).first, 400);
  EXPECT_EQ(status({{"task", "test/0"}, {"seed", -1}}).first, 400);
  EXPECT_EQ(status({{"task", "test/0"}, {"tracks", "multi"}}).first, 400);  // a misspelt field is not ignored
  EXPECT_EQ(service_.n_sessions(), 0u);
}

TEST_F(Service, StartGivesTheFirstObservationToolsAndVisibleHistory) {
  const data::Task& task = first_task(data::TaskType::kReview);
  Json s = service_.start({{"task", key(task)}});
  EXPECT_EQ(s["observation"], env::initial_observation(world().ds, task));
  EXPECT_EQ(s["track"], "single");
  EXPECT_EQ(s["user_sim"], "none");
  EXPECT_EQ(s["max_steps"], 10);
  EXPECT_EQ(s["seed"], 5);
  EXPECT_EQ(s["tools"].size(), env::tool_specs().size() - 1);  // the details tool is RecMind's only
  auto visible = world().ds.visible_history(task);
  ASSERT_EQ(s["history"].size(), visible.size());
  ASSERT_FALSE(visible.empty());
  EXPECT_EQ(s["history"][0]["asin"], world().ds.product(visible[0]->product).parent_asin);
  EXPECT_EQ(s["history"][0]["review_text"], visible[0]->review.text);
  EXPECT_EQ(s["history"][0]["timestamp"], visible[0]->review.timestamp);
  for (const auto& h : s["history"]) EXPECT_LT(h["timestamp"].get<int64_t>(), task.timestamp);
  EXPECT_FALSE(service_.start({{"task", key(task)}, {"history", false}}).contains("history"));
  EXPECT_NE(s["episode_id"], service_.start({{"task", key(task)}})["episode_id"]);
  EXPECT_EQ(service_.n_sessions(), 3u);
}

TEST_F(Service, UnknownEpisodesAre404) {
  for (auto f : {+[](EpisodeService& s) { s.step("ep_nope", call(env::kStop, Json::object())); },
                 +[](EpisodeService& s) { s.state("ep_nope"); }, +[](EpisodeService& s) { s.end("ep_nope"); }})
    EXPECT_EQ(refusal([&] { f(service_); }), std::make_pair(404, std::string("unknown_episode")));
}

TEST_F(Service, SingleTurnEndsOnTheTaskFunctionAndIsRecorded) {
  pwab::test::TempDir dir;
  runner::RunManifest manifest;
  manifest.config_json = R"({"agent":"served","track":"single"})";
  auto run = runner::RunDirectory::open(dir.path() / "run", manifest, false);
  EpisodeService service(*world().env, options(), &run);

  const data::Task& task = first_task(data::TaskType::kReview);
  std::string id = service.start({{"task", key(task)}})["episode_id"];
  Json r = service.step(id, call(env::kAddReview, {{"review", true_review(task)}}));
  EXPECT_TRUE(r["done"]);
  EXPECT_TRUE(r["scored"]);
  EXPECT_TRUE(r["finished"]);
  EXPECT_EQ(r["ending"], "task_function");
  EXPECT_EQ(r["steps"], 1);
  EXPECT_EQ(r["reward"]["function_acc"], 1.0);
  EXPECT_NEAR(r["reward"]["result_acc"].get<double>(), 1.0, 1e-6);
  // Recorded as soon as it finished; further steps are refused, the state still reads.
  auto records = runner::read_records(dir.path() / "run");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].task_key, key(task));
  EXPECT_EQ(refusal([&] { service.step(id, call(env::kStop, Json::object())); }),
            std::make_pair(409, std::string("episode_finished")));
  Json state = service.state(id);
  EXPECT_TRUE(state["finished"]);
  EXPECT_EQ(state["actions"].size(), 1u);
  EXPECT_FALSE(state.contains("target_asin"));

  Json end = service.end(id);
  EXPECT_EQ(end["record"]["ending"], "task_function");
  EXPECT_EQ(end["record"]["task"], key(task));
  EXPECT_EQ(end["score"]["f"], 1.0);
  // The run directory's record, less what would tell a client how to replay the task.
  EXPECT_FALSE(end["record"].contains("target_asin"));
  EXPECT_FALSE(end["record"].contains("type"));
  Json stored = Json::parse(records[0].to_json_line());
  EXPECT_EQ(stored["target_asin"], world().ds.product(task.target_product).parent_asin);
  stored.erase("target_asin"), stored.erase("type");
  EXPECT_EQ(end["record"].dump(), stored.dump());
  EXPECT_EQ(runner::read_records(dir.path() / "run").size(), 1u);  // end does not record it twice
  EXPECT_EQ(refusal([&] { service.end(id); }).first, 404);
  EXPECT_EQ(service.n_sessions(), 0u);
}

// A recorded run counts each (task, trial) once: a replay of a finished task, or a second episode of one being
// played, is refused, so no replay can replace the first record (pwab score keeps the latest); another trial is a
// new record. An episode dropped without a record frees its (task, trial).
TEST_F(Service, ARecordedTaskCannotBeReplayedOverItsRecord) {
  pwab::test::TempDir dir;
  runner::RunManifest manifest;
  manifest.config_json = R"({"agent":"served","track":"single"})";
  auto run = runner::RunDirectory::open(dir.path() / "run", manifest, false);
  double clock = 0;
  ServiceOptions o = options();
  o.idle_timeout_s = 10;
  o.clock = [&clock] { return clock; };
  EpisodeService service(*world().env, o, &run);
  const data::Task& task = first_task(data::TaskType::kReview);

  std::string first = service.start({{"task", key(task)}})["episode_id"];
  EXPECT_EQ(refusal([&] { service.start({{"task", key(task)}}); }), std::make_pair(409, std::string("in_progress")));
  service.step(first, call(env::kAddReview, {{"review", "bad"}}));  // finishes with a low score
  EXPECT_EQ(refusal([&] { service.start({{"task", key(task)}}); }),
            std::make_pair(409, std::string("already_recorded")));
  EXPECT_EQ(refusal([&] { service.start({{"task", key(task)}, {"trial", 0}}); }).second, "already_recorded");
  service.end(first);
  EXPECT_EQ(refusal([&] { service.start({{"task", key(task)}}); }).second, "already_recorded");  // after end too
  EXPECT_EQ(refusal([&] { service.start({{"task", key(task)}, {"trial", -1}}); }).first, 400);

  // Another trial is a new record beside the first, never in its place.
  Json second = service.start({{"task", key(task)}, {"trial", 1}});
  EXPECT_EQ(second["trial"], 1);
  service.step(second["episode_id"].get<std::string>(), call(env::kAddReview, {{"review", true_review(task)}}));
  auto records = runner::read_records(dir.path() / "run");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].trial, 0);
  EXPECT_LT(metrics::score_task(records[0].outcome()).r, 0.9);  // the first record stands
  EXPECT_EQ(records[1].trial, 1);

  // Dropped unfinished (idle): no record, so trial 2 may be played again; a server without --out refuses nothing.
  std::string idle = service.start({{"task", key(task)}, {"trial", 2}})["episode_id"];
  clock = 100;
  EXPECT_EQ(service.expire_idle(), 2u);  // the idle one and the finished, never-ended trial 1
  EXPECT_NO_THROW(service.start({{"task", key(task)}, {"trial", 2}}));
  EXPECT_NO_THROW(service_.start({{"task", key(task)}}));
  EXPECT_NO_THROW(service_.start({{"task", key(task)}}));
}

// One episode cannot grow without bound (issue 19: 1,000 steps of 1 MiB made a 0.9 GB episode and a 172 MB record
// line): a step that would take it over max_episode_bytes is refused and changes nothing.
TEST(ServiceLimits, AnEpisodeHasABoundedSize) {
  ServiceOptions o;
  o.max_episode_bytes = 64 * 1024;
  o.max_steps_limit = 1000;
  EpisodeService service(*world().env, o);
  std::string id = service.start({{"task", "test/0"}, {"track", "multi"}, {"max_steps", 1000}})["episode_id"];
  const std::string chunk(8000, 'x');
  int accepted = 0;
  for (int i = 0; i < 100; ++i) {
    auto [status, code] = refusal([&] { service.step(id, call(env::kRespond, {{"content", chunk}})); });
    if (status == 0) {
      ++accepted;
      continue;
    }
    EXPECT_EQ(status, 413);
    EXPECT_EQ(code, "episode_too_large");
    break;
  }
  EXPECT_GT(accepted, 3);
  EXPECT_LT(accepted, 9);  // 64 KiB of 8 KB messages and their answers
  Json state = service.state(id);
  EXPECT_EQ(state["steps"], accepted);  // the refused step changed nothing
  EXPECT_NO_THROW(service.step(id, call(env::kStop, Json::object())));  // a small action still fits
  Json end = service.end(id);
  EXPECT_LT(end["record"].dump().size(), 80u * 1024u);
}

TEST_F(Service, EpisodeIdsAre128RandomBits) {
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    std::string id = service_.start({{"task", "test/0"}})["episode_id"];
    ASSERT_EQ(id.size(), 3u + 32u) << id;
    EXPECT_EQ(id.rfind("ep_", 0), 0u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 3), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 200u);
}

TEST_F(Service, SingleTurnRespondEndsWithAZeroAttempt) {
  std::string id = service_.start({{"task", "test/0"}})["episode_id"];
  Json r = service_.step(id, call(env::kRespond, {{"content", "What would you like?"}}));
  EXPECT_EQ(r["observation"], "Error: ###STOP###");
  EXPECT_TRUE(r["finished"]);
  EXPECT_EQ(r["ending"], "respond");
  EXPECT_EQ(service_.end(id)["score"]["r"], 0.0);
}

TEST_F(Service, StepCapEndsTheEpisode) {
  std::string id = service_.start({{"task", "test/0"}, {"max_steps", 2}})["episode_id"];
  Json details = call(env::kProductDetails, {{"product_asin", "B000000000"}});
  EXPECT_FALSE(service_.step(id, details)["finished"]);
  Json r = service_.step(id, details);
  EXPECT_TRUE(r["finished"]);
  EXPECT_EQ(r["ending"], "step_cap");
  EXPECT_EQ(r["steps"], 2);
}

TEST_F(Service, BadArgumentsAreObservationsAsInProcess) {
  const data::Task& task = first_task(data::TaskType::kSearch);
  std::string id = service_.start({{"task", key(task)}, {"track", "multi"}})["episode_id"];
  // Malformed JSON inside the arguments text is the agent's mistake, shown to it, not a refused request.
  Json r = service_.step(id, {{"name", env::kSearch}, {"arguments", "{\"query\": "}});
  EXPECT_EQ(r["observation"].get<std::string>().rfind("Error", 0), 0u) << r;
  EXPECT_TRUE(r["done"]);
  EXPECT_FALSE(r["scored"]);
  r = service_.step(id, call("fly_to_the_moon", Json::object()));
  EXPECT_NE(r["observation"].get<std::string>().find("Unknown action"), std::string::npos) << r;
  EXPECT_FALSE(r["finished"]);
  // A request that is not an action at all changes nothing.
  EXPECT_EQ(refusal([&] { service_.step(id, Json::array()); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.step(id, {{"arguments", Json::object()}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.step(id, {{"name", env::kSearch}, {"arguments", 3}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service_.step(id, {{"name", env::kStop}, {"usage", {{"prompt_tokens", -1}}}}); }).first, 400);
  EXPECT_EQ(service_.state(id)["steps"], 2);
  // An OpenAI tool call is an action too.
  r = service_.step(id, {{"type", "function"}, {"function", {{"name", env::kStop}, {"arguments", "{}"}}}});
  EXPECT_EQ(r["ending"], "stop");
}

TEST_F(Service, MultiTurnTalksToTheScriptedUser) {
  const data::Task& task = first_task(data::TaskType::kSearch);
  std::string id = service_.start({{"task", key(task)}, {"track", "multi"}})["episode_id"];
  Json r = service_.step(id, call(env::kRespond, {{"content", "What are you looking for?"}}));
  std::string reply = r["observation"];
  EXPECT_FALSE(reply.empty());
  EXPECT_EQ(reply.rfind("Error", 0), std::string::npos) << reply;
  EXPECT_FALSE(r["done"]);
  r = service_.step(id, call(env::kSearch, {{"query", reply}}));
  EXPECT_TRUE(r["done"]);
  EXPECT_TRUE(r["scored"]);
  EXPECT_FALSE(r["finished"]);  // multi-turn: recorded, and the dialogue goes on
  r = service_.step(id, call(env::kStop, Json::object()));
  EXPECT_TRUE(r["finished"]);
  EXPECT_EQ(r["ending"], "stop");
  Json end = service_.end(id);
  EXPECT_EQ(end["record"]["attempts"].size(), 1u);
  EXPECT_EQ(end["record"]["steps"], 3);
}

TEST_F(Service, EndingEarlyRecordsTheEpisodeAsItStands) {
  std::string id = service_.start({{"task", "test/0"}, {"track", "multi"}})["episode_id"];
  service_.step(id, call(env::kRespond, {{"content", "Hello?"}}));
  Json end = service_.end(id);
  EXPECT_EQ(end["record"]["ending"], "client_end");
  EXPECT_EQ(end["record"]["steps"], 1);
  EXPECT_EQ(end["score"]["f"], 0.0);
}

// The point of the service: a served episode's record is the in-process one for the same actions, in both
// tracks and every task type, the scripted user's replies included (same seed rule as `pwab run`).
TEST_F(Service, RecordEqualsTheInProcessRecord) {
  const auto& tasks = world().ds.tasks(data::Split::kTest);
  int compared = 0, scored = 0, user_replies = 0;
  for (auto track : {data::Track::kSingleTurn, data::Track::kMultiTurn})
    for (std::size_t i = 0; i < 12 && i < tasks.size(); ++i) {
      const data::Task& task = tasks[i];
      auto expected = test::run_in_process(task, track, /*seed=*/9);
      Json start = {{"task", key(task)}, {"track", track == data::Track::kSingleTurn ? "single" : "multi"}, {"seed", 9}};
      std::string id = service_.start(start)["episode_id"];
      for (const auto& d : expected.decisions)
        service_.step(id, {{"name", d.action.name},
                           {"arguments", d.action.arguments_json},
                           {"usage", {{"prompt_tokens", d.prompt_tokens}, {"completion_tokens", d.completion_tokens}}}});
      Json end = service_.end(id);
      EXPECT_EQ(test::without_timing(end["record"].dump()), test::as_served(expected.record.to_json_line())) << key(task);
      ++compared;
      for (const auto& a : expected.record.actions) {
        scored += a.scored ? 1 : 0;
        user_replies += a.action.name == env::kRespond && a.observation.rfind("Error", 0) != 0 ? 1 : 0;
      }
    }
  EXPECT_EQ(compared, 24);
  // The comparison covers real rewards and real user replies, not only Error observations.
  EXPECT_GT(scored, 12);
  EXPECT_GT(user_replies, 12);
}

TEST(ServiceExpiry, IdleEpisodesExpireOnTheClock) {
  double now = 100;
  ServiceOptions o;
  o.idle_timeout_s = 10;
  o.max_sessions = 2;
  o.clock = [&now] { return now; };
  EpisodeService service(*world().env, o);
  std::string a = service.start({{"task", "test/0"}, {"track", "multi"}})["episode_id"];
  std::string b = service.start({{"task", "test/1"}, {"track", "multi"}})["episode_id"];
  // Full: a third start is refused while both are in use.
  EXPECT_EQ(refusal([&] { service.start({{"task", "test/2"}}); }), std::make_pair(429, std::string("too_many_sessions")));
  now = 105;
  service.step(b, call(env::kRespond, {{"content", "Hi"}}));
  now = 110;
  EXPECT_EQ(service.expire_idle(), 1u);  // a: idle 10 s; b: 5 s
  EXPECT_EQ(refusal([&] { service.state(a); }).first, 404);
  EXPECT_EQ(refusal([&] { service.step(a, call(env::kStop, Json::object())); }).first, 404);
  EXPECT_EQ(service.state(b)["steps"], 1);
  now = 125;
  std::string c = service.start({{"task", "test/2"}})["episode_id"];
  // At the cap, a start drops idle episodes first (b has been idle 20 s, c not at all) and then fits.
  std::string d = service.start({{"task", "test/3"}})["episode_id"];
  EXPECT_EQ(service.n_sessions(), 2u);
  EXPECT_EQ(refusal([&] { service.end(b); }).first, 404);
  EXPECT_EQ(service.state(c)["task"], "test/2");
  EXPECT_EQ(service.state(d)["task"], "test/3");
}

// An episode may ask for a shorter idle time than the server's (an RL engine that abandons rollouts without a
// word), never a longer one.
TEST(ServiceExpiry, AnEpisodeMayAskForAShorterIdleTime) {
  double now = 100;
  ServiceOptions o;
  o.idle_timeout_s = 60;
  o.clock = [&now] { return now; };
  EpisodeService service(*world().env, o);
  std::string quick = service.start({{"task", "test/0"}, {"idle_timeout_s", 5}})["episode_id"];
  std::string slow = service.start({{"task", "test/1"}})["episode_id"];
  now = 106;
  EXPECT_EQ(service.expire_idle(), 1u);
  EXPECT_EQ(refusal([&] { service.state(quick); }).first, 404);
  EXPECT_EQ(service.state(slow)["task"], "test/1");
  EXPECT_EQ(refusal([&] { service.start({{"task", "test/2"}, {"idle_timeout_s", 61}}); }).first, 400);
  EXPECT_EQ(refusal([&] { service.start({{"task", "test/2"}, {"idle_timeout_s", "5"}}); }).first, 400);
}

}  // namespace
}  // namespace pwab::serve
