// `pwab run` with LLMs, end to end: the real binary talks to a real OpenAI-compatible server on loopback.
// The fc agent in both tracks, the LLM user simulator, per-task usage in the records, the key never written,
// record then replay with the server gone, a replay miss, the budget stop and resume, and infrastructure
// errors re-run by --resume.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace {

using pwab::test::OpenAITestServer;
using pwab::test::ReceivedRequest;
using pwab::test::ScriptedReply;
using pwab::test::TempDir;
using Json = nlohmann::json;

constexpr const char* kKey = "sk-pwab-test-SECRET-123";

int run_binary(const std::string& args, std::string* errors = nullptr) {
  TempDir out_dir;
  std::string cmd = "PWAB_TEST_KEY=" + std::string(kKey) + " " + PWAB_BINARY + " " + args + " > " +
                    (out_dir / "out").string() + " 2> " + (out_dir / "err").string();
  int status = std::system(cmd.c_str());
  if (errors) *errors = pwab::test::read_text(out_dir / "err");
  return WEXITSTATUS(status);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

//! The agent: in multi-turn asks once, then searches with the instruction's first words, then stops; in
//! single-turn searches at once. The user simulator: a fixed hint. Decided from the request alone.
ScriptedReply answer(const ReceivedRequest& r) {
  Json body = Json::parse(r.body);
  if (body.contains("prompt")) {  // the puma agent's raw-text completions: function, then parameters
    std::string prompt = body["prompt"].get<std::string>();
    if (prompt.ends_with("### Tool:\n")) return ScriptedReply::completion("search_product_by_query", 30, 4);
    std::size_t conversation = prompt.find("Conversation so far:");
    if (conversation == std::string::npos) return ScriptedReply::completion("wireless headphones", 300, 5);
    if (prompt.find("\nUser: ", conversation) == std::string::npos)
      return ScriptedReply::completion("Say: Do these look right to you?", 320, 9);
    return ScriptedReply::completion("stop", 340, 1);
  }
  if (!body.contains("tools")) return ScriptedReply::text("I would like something from a well known brand.", 40, 12);
  int assistant_turns = 0;
  bool multi = false;
  for (const auto& m : body["messages"]) {
    if (m["role"] == "assistant") ++assistant_turns;
    if (m["role"] == "system" && has(m["content"].get<std::string>(), "finish the task")) multi = true;
  }
  if (multi && assistant_turns == 0) return ScriptedReply::text("Which brand do you prefer?", 100, 8);
  if (assistant_turns >= (multi ? 2 : 1)) return ScriptedReply::tool_call("stop", "{}", "call_9", 120, 3);
  return ScriptedReply::tool_call("search_product_by_query", R"({"query": "wireless headphones"})", "call_1", 110, 9);
}

std::vector<Json> records_of(const std::string& dir) {
  std::vector<Json> out;
  std::string text = pwab::test::read_text(std::filesystem::path(dir) / "results.jsonl");
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    out.push_back(Json::parse(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return out;
}

class LlmCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_binary("data synth --out " + data_ + " --scale mini --seed 5"), 0);
    ASSERT_EQ(run_binary("rec train " + data_ + " --epochs 2 --eval-every 0"), 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string out(const std::string& name) { return (*dir_ / name).string(); }
  //! `pwab run` with the fc agent on the server, the hashing embedder (fast) and the key in PWAB_TEST_KEY.
  std::string fc_run(const std::string& extra) const {
    return "run --quiet --data " + data_ + " --agent fc --model test-model --embedder hashing --base-url " +
           server_.base_url() + " --api-key-env PWAB_TEST_KEY --llm-retries 2 --llm-retry-delay 0.01 " + extra;
  }

  OpenAITestServer server_;
  static TempDir* dir_;
  static std::string data_;
};
TempDir* LlmCli::dir_ = nullptr;
std::string LlmCli::data_;

TEST_F(LlmCli, SingleTurnFcRecordsUsageAndNeverWritesTheKey) {
  server_.set_chat_handler(answer);
  std::string err;
  ASSERT_EQ(run_binary(fc_run("--tasks 0:6 --llm-seed 3 --out " + out("st")), &err), 0) << err;
  auto records = records_of(out("st"));
  ASSERT_EQ(records.size(), 6u);
  for (const auto& r : records) {
    EXPECT_EQ(r["steps"], 1);
    EXPECT_EQ(r["usage"]["agent"]["calls"], 1);
    EXPECT_EQ(r["usage"]["agent"]["prompt_tokens"], 110);
    EXPECT_TRUE(r["usage"]["agent"]["cost_usd"].is_null()) << "test-model has no price: unpriced, never $0";
  }
  ASSERT_EQ(server_.n_requests(), 6u);
  auto first = server_.requests()[0];
  EXPECT_EQ(first.header("authorization"), std::string("Bearer ") + kKey);
  Json body = Json::parse(first.body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["seed"], 3);
  EXPECT_EQ(body["tool_choice"], "auto");
  auto manifest = pwab::test::read_text(std::filesystem::path(out("st")) / "manifest.json");
  EXPECT_EQ(Json::parse(manifest)["config"]["llm"]["model"], "test-model");
  for (const char* f : {"manifest.json", "results.jsonl", "summary.json"})
    EXPECT_FALSE(has(pwab::test::read_text(std::filesystem::path(out("st")) / f), kKey)) << f;
}

TEST_F(LlmCli, MultiTurnWithTheLlmUserSimulator) {
  server_.set_chat_handler(answer);
  std::string err;
  ASSERT_EQ(run_binary(fc_run("--track multi --user-sim llm --user-model user-model --tasks 0:4 --out " + out("mt")),
                       &err),
            0)
      << err;
  auto records = records_of(out("mt"));
  ASSERT_EQ(records.size(), 4u);
  for (const auto& r : records) {
    EXPECT_EQ(r["steps"], 3);  // ask, search, stop
    EXPECT_EQ(r["ending"], "stop");
    EXPECT_EQ(r["usage"]["user"]["calls"], 1);
    EXPECT_EQ(r["usage"]["agent"]["calls"], 3);
    EXPECT_TRUE(has(r.dump(), "well known brand")) << "the simulator's reply reached the agent";
    EXPECT_FALSE(r.contains("user")) << "no guard and no leak: nothing to say about the user's replies";
  }
  int user_requests = 0;
  for (const auto& req : server_.requests()) {
    Json body = Json::parse(req.body);
    if (body["model"] != "user-model") continue;
    ++user_requests;
    EXPECT_EQ(body["temperature"], 1.0);
    EXPECT_EQ(body["max_tokens"], 150);
    EXPECT_FALSE(body.contains("tools"));
  }
  EXPECT_EQ(user_requests, 4);
}

TEST_F(LlmCli, UserGuardRewritesLeakyRepliesAndRecordsTheCounts) {
  // The user model's first draft of every reply gives the target away (from its own prompt); asked again with the
  // correction, it answers cleanly. Everything else as `answer`.
  server_.set_chat_handler([](const ReceivedRequest& r) {
    Json body = Json::parse(r.body);
    if (body.contains("tools") || body.contains("prompt")) return answer(r);
    const Json& messages = body["messages"];
    if (has(messages.back()["content"].get<std::string>(), "Say the same thing again"))  // the guard's correction
      return ScriptedReply::text("Something from a brand I know.", 50, 7);
    // Search and recommendation tasks leak the ASIN; review tasks their true review, quoted whole.
    const std::string prompt = messages[0]["content"];
    const std::string review = "The review you wrote of it:\n";
    const bool is_review = has(prompt, review);
    const std::string label = is_review ? review : "- Parent Asin: ";
    const std::size_t at = prompt.find(label) + label.size();
    return ScriptedReply::text("I want " + prompt.substr(at, prompt.find('\n', at) - at) + ", exactly.", 40, 6);
  });
  std::string err;
  const std::string llm_user = "--track multi --user-sim llm --user-model user-model --tasks 0:3 ";
  ASSERT_EQ(run_binary(fc_run(llm_user + "--user-guard 2 --out " + out("mt-guard")), &err), 0) << err;
  auto records = records_of(out("mt-guard"));
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r["user"], Json({{"leak_guard", 2}, {"rewrites", 1}, {"guard_fallbacks", 0}, {"leaky_drafts", 1}}))
        << r.dump();
    EXPECT_EQ(r["usage"]["user"]["calls"], 2);  // the draft and its rewrite
    EXPECT_TRUE(has(r.dump(), "a brand I know")) << "the rewrite reached the agent";
    EXPECT_FALSE(has(r["actions"].dump(), "exactly.")) << "the leaky draft never did";
  }
  Json manifest = Json::parse(pwab::test::read_text(std::filesystem::path(out("mt-guard")) / "manifest.json"));
  EXPECT_EQ(manifest["config"]["user_guard"], 2);
  // Without the guard the leaky drafts reach the agent and are only counted; the manifest has no "user_guard", so
  // runs made before the guard existed resume unchanged.
  ASSERT_EQ(run_binary(fc_run(llm_user + "--out " + out("mt-unguarded")), &err), 0) << err;
  for (const auto& r : records_of(out("mt-unguarded"))) {
    EXPECT_EQ(r["user"], Json({{"leaky_drafts", 1}})) << r.dump();
    EXPECT_EQ(r["usage"]["user"]["calls"], 1);
    EXPECT_TRUE(has(r["actions"].dump(), "exactly."));
  }
  Json plain = Json::parse(pwab::test::read_text(std::filesystem::path(out("mt-unguarded")) / "manifest.json"));
  EXPECT_FALSE(plain["config"].contains("user_guard"));
}

TEST_F(LlmCli, RecordThenReplayWithTheServerGone) {
  server_.set_chat_handler(answer);
  std::string err, a, b;
  ASSERT_EQ(run_binary(fc_run("--tasks 0:5 --llm-cache " + out("cache") + " --out " + out("rec")), &err), 0) << err;
  std::size_t sent = server_.n_requests();
  EXPECT_EQ(sent, 5u);
  server_.stop();
  ASSERT_EQ(run_binary(fc_run("--tasks 0:5 --llm-cache " + out("cache") + " --replay --out " + out("rep")), &err), 0)
      << err;
  // The same summary, measured times (analysis.time) aside.
  auto untimed = [&](const std::string& run) {
    auto j = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(out(run)) / "summary.json"));
    j["analysis"].erase("time");
    return j;
  };
  EXPECT_EQ(untimed("rec"), untimed("rep"));
  for (const auto& r : records_of(out("rep"))) {
    EXPECT_EQ(r["usage"]["agent"]["calls"], 0);
    EXPECT_EQ(r["usage"]["agent"]["cached_calls"], 1);
  }
  // A request the cache never saw stops the replay loudly.
  EXPECT_EQ(run_binary(fc_run("--tasks 5:7 --llm-cache " + out("cache") + " --replay --out " + out("miss")), &err), 1);
  EXPECT_TRUE(has(err, "replay") || has(err, "cache")) << err;
  EXPECT_FALSE(has(pwab::test::read_text(std::filesystem::path(out("cache")) / "llm-cache.sqlite3"), kKey));
}

TEST_F(LlmCli, BudgetStopsCleanlyAndResumeFinishes) {
  server_.set_chat_handler(answer);
  pwab::test::write_text(*dir_ / "prices.json",
                         R"({"unit": "usd_per_1m_tokens", "models": {"test-model": {"prompt": 1000, "completion": 1000}}})");
  std::string err;
  // Each task costs 119 tokens × $0.001 = $0.119: a $0.25 budget is reached after 3 tasks (one worker).
  const std::string base = fc_run("--tasks 0:8 --concurrency 1 --prices " + (*dir_ / "prices.json").string() +
                                  " --out " + out("budget"));
  EXPECT_EQ(run_binary(base + " --budget-usd 0.25", &err), 1);
  EXPECT_TRUE(has(err, "budget")) << err;
  std::size_t first = records_of(out("budget")).size();
  EXPECT_GE(first, 3u);
  EXPECT_LT(first, 8u);
  ASSERT_EQ(run_binary(base + " --budget-usd 5 --resume", &err), 0) << err;
  auto records = records_of(out("budget"));
  EXPECT_EQ(records.size(), 8u);
  EXPECT_NEAR(records.back()["usage"]["agent"]["cost_usd"].get<double>(), 0.119, 1e-9);
}

TEST_F(LlmCli, InfrastructureErrorsAreRerunOnResume) {
  server_.set_chat_handler([](const ReceivedRequest&) { return ScriptedReply::error(500, "the model is down"); });
  std::string err;
  const std::string base = fc_run("--tasks 0:3 --llm-timeout 5 --out " + out("down"));
  EXPECT_EQ(run_binary(base, &err), 1);
  EXPECT_TRUE(has(err, "3 tasks errored")) << err;
  for (const auto& r : records_of(out("down"))) EXPECT_TRUE(has(r["error"].get<std::string>(), "500")) << r.dump();
  server_.set_chat_handler(answer);
  ASSERT_EQ(run_binary(base + " --resume", &err), 0) << err;
  std::string score;
  TempDir tmp;
  ASSERT_EQ(std::system((std::string(PWAB_BINARY) + " score " + out("down") + " --format json > " +
                         (tmp / "s").string())
                            .c_str()),
            0);
  EXPECT_EQ(Json::parse(pwab::test::read_text(tmp / "s"))["groups"]["overall"]["n_tasks"], 3);
}

}  // namespace

namespace {

TEST_F(LlmCli, EmbedderChoicesAreRecordedAndNamedUnderTheTable) {
  std::string err;
  // all-MiniLM-L6-v2's format, with the tiny random BERT of the embed tests.
  std::string minilm = pwab::test::fixture("minilm").string();
  ASSERT_EQ(run_binary("run --quiet --data " + data_ + " --tasks 0:4 --embedder minilm:" + minilm + " --out " +
                           out("emb-minilm"),
                       &err),
            0)
      << err;
  auto config = Json::parse(pwab::test::read_text(std::filesystem::path(out("emb-minilm")) / "manifest.json"))["config"];
  EXPECT_EQ(config["embedder"].get<std::string>().rfind("minilm:", 0), 0u) << config.dump();
  EXPECT_TRUE(has(pwab::test::read_text(std::filesystem::path(out("emb-minilm")) / "summary.md"), "minilm:"));

  // The /v1/embeddings backend on the loopback server (its default handler answers every text).
  ASSERT_EQ(run_binary("run --quiet --data " + data_ + " --tasks 0:4 --embedder openai:emb-model --base-url " +
                           server_.base_url() + " --api-key-env PWAB_TEST_KEY --out " + out("emb-openai"),
                       &err),
            0)
      << err;
  config = Json::parse(pwab::test::read_text(std::filesystem::path(out("emb-openai")) / "manifest.json"))["config"];
  EXPECT_EQ(config["embedder"], "openai:emb-model");
  bool embedded = false;
  for (const auto& r : server_.requests()) embedded |= r.path == "/v1/embeddings";
  EXPECT_TRUE(embedded);
  EXPECT_EQ(run_binary("run --quiet --data " + data_ + " --embedder word2vec --out " + out("emb-bad"), &err), 2);
  EXPECT_TRUE(has(err, "--embedder")) << err;
}

}  // namespace

namespace {

TEST_F(LlmCli, EveryLlmAgentRunsBothTracksThroughTheCli) {
  server_.set_chat_handler(answer);
  std::string err;
  for (const std::string agent : {"fc", "react", "reflection", "recmind", "interecagent", "puma"}) {
    for (const std::string track : {"single", "multi"}) {
      std::string dir = out("agent-" + agent + "-" + track);
      std::string args = "run --quiet --data " + data_ + " --agent " + agent +
                         " --model test-model --embedder hashing --base-url " + server_.base_url() +
                         " --api-key-env PWAB_TEST_KEY --llm-retries 2 --llm-retry-delay 0.01 --tasks 0:3 --track " +
                         track + (track == "multi" ? " --user-sim llm" : "") +
                         (agent == "interecagent" ? " --agent-opt interec_init=heuristic" : "") + " --out " + dir;
      ASSERT_EQ(run_binary(args, &err), 0) << agent << " " << track << ": " << err;
      EXPECT_EQ(records_of(dir).size(), 3u) << agent << " " << track;
    }
  }
  // InteRecAgent keeps its per-user memory in the run directory, with every task applied once.
  auto memory = Json::parse(
      pwab::test::read_text(std::filesystem::path(out("agent-interecagent-multi")) / "interec_memory.json"));
  EXPECT_EQ(memory["applied"].size(), 3u) << memory.dump();
}

}  // namespace

namespace {

//! Trial t of a run sends --llm-seed S as S + t: this agent searches in trial 0 (seed 3) and stops at once in
//! trial 1 (seed 4), so the trials' records differ.
ScriptedReply answer_by_seed(const ReceivedRequest& r) {
  Json body = Json::parse(r.body);
  if (body.value("seed", 0) == 4) return ScriptedReply::tool_call("stop", "{}", "call_5", 90, 2);
  return answer(r);
}

TEST_F(LlmCli, TrialsAreSampledApartInTheCacheAndReplayed) {
  server_.set_chat_handler(answer_by_seed);
  std::string err;
  const std::string cache = " --llm-cache " + out("trials-cache");
  ASSERT_EQ(run_binary(fc_run("--tasks 0:4 --trials 2 --llm-seed 3" + cache + " --out " + out("trials")), &err), 0)
      << err;
  ASSERT_EQ(server_.n_requests(), 8u);
  auto records = records_of(out("trials"));
  ASSERT_EQ(records.size(), 8u);
  for (const auto& r : records) {
    EXPECT_EQ(r["usage"]["agent"]["calls"], 1) << "each trial books its own call: " << r.dump();
    EXPECT_EQ(r["ending"], r["trial"] == 0 ? "task_function" : "stop") << r.dump();
  }

  // Without a seed both trials send byte-identical requests; the cache still keeps them apart (sample index),
  // so trial 1 is asked of the server, not replayed from trial 0.
  server_.set_chat_handler(answer);
  std::size_t before = server_.n_requests();
  ASSERT_EQ(run_binary(fc_run("--tasks 0:4 --trials 2 --concurrency 1" + cache + " --out " + out("trials-noseed")), &err),
            0)
      << err;
  EXPECT_EQ(server_.n_requests() - before, 8u);
  std::size_t identical = 0;
  for (std::size_t i = before; i + 4 < server_.n_requests(); ++i)
    identical += server_.requests()[i].body == server_.requests()[i + 4].body ? 1 : 0;
  EXPECT_EQ(identical, 4u) << "trial 1's requests are the same bytes as trial 0's";

  // InteRecAgent's per-user memory is kept per trial: trial 0 in the run directory, trial 1 under trial-1/, each
  // with every task of its trial applied once.
  ASSERT_EQ(run_binary("run --quiet --data " + data_ + " --agent interecagent --model test-model --embedder hashing " +
                           "--base-url " + server_.base_url() + " --api-key-env PWAB_TEST_KEY --tasks 0:3 --trials 2 " +
                           "--agent-opt interec_init=heuristic --out " + out("trials-interec"),
                       &err),
            0)
      << err;
  for (const std::string sub : {"", "trial-1/"}) {
    auto memory = Json::parse(pwab::test::read_text(out("trials-interec") + "/" + sub + "interec_memory.json"));
    EXPECT_EQ(memory["applied"].size(), 3u) << sub << memory.dump();
  }
  EXPECT_EQ(records_of(out("trials-interec")).size(), 6u);

  // A replay with the server gone reproduces both trials.
  server_.stop();
  ASSERT_EQ(run_binary(fc_run("--tasks 0:4 --trials 2 --llm-seed 3 --replay" + cache + " --out " + out("trials-rep")),
                       &err),
            0)
      << err;
  auto replayed = records_of(out("trials-rep"));
  ASSERT_EQ(replayed.size(), 8u);
  std::map<std::pair<std::string, int>, std::string> ending;
  for (const auto& r : records) ending[{r["task"], r["trial"]}] = r["ending"];
  for (const auto& r : replayed) {
    EXPECT_EQ(r["usage"]["agent"]["cached_calls"], 1);
    EXPECT_EQ(ending.at({r["task"], r["trial"]}), r["ending"]);
  }
}

}  // namespace
