// The diagnosis through the real binary (docs/metrics.md "Diagnosis"): `pwab score --data` in every format and
// --records-out, `pwab compare --data`, the same diagnosis after `pwab rescore`, and the LLM user's leaks measured
// end to end: a loopback model that leaks in k of n replies gives the leak rate k/n, and with `--user-guard` no
// leaked reply reaches the records.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace {

using pwab::test::OpenAITestServer;
using pwab::test::ReceivedRequest;
using pwab::test::run_pwab;
using pwab::test::ScriptedReply;
using pwab::test::TempDir;
using Json = nlohmann::json;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<Json> lines_of(const std::string& text) {
  std::vector<Json> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t nl = text.find('\n', pos);
    out.push_back(Json::parse(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return out;
}

class DiagnosisCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_pwab("data synth --out " + data_ + " --scale mini --seed 5"), 0);
    ASSERT_EQ(run_pwab("rec train " + data_ + " --epochs 2 --eval-every 0"), 0);
    ASSERT_EQ(run_pwab("run --data " + data_ + " --tasks 0:30 --embedder hashing --quiet --out " + path("st")), 0);
    ASSERT_EQ(run_pwab("run --data " + data_ + " --tasks 0:30 --embedder hashing --memory none --quiet --out " +
                       path("st-none")),
              0);
    ASSERT_EQ(run_pwab("run --data " + data_ + " --track multi --tasks 0:20 --embedder hashing --quiet --out " +
                       path("mt")),
              0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static Json diagnosis_of(const std::string& run) {
    std::string out, err;
    EXPECT_EQ(run_pwab("score " + run + " --data " + data_ + " --format json", &out, &err), 0) << err;
    return Json::parse(out)["diagnosis"];
  }

  static TempDir* dir_;
  static std::string data_;
};
TempDir* DiagnosisCli::dir_ = nullptr;
std::string DiagnosisCli::data_;

TEST_F(DiagnosisCli, ScoreWithDataAddsTheDiagnosisInEveryFormat) {
  Json d = diagnosis_of(path("st"));
  ASSERT_TRUE(d.is_object());
  EXPECT_FALSE(d.contains("leaks"));  // single-turn: no user
  for (const char* group : {"search", "recommend", "review", "overall"}) {
    std::size_t sum = 0;
    for (const auto& [name, n] : d["categories"][group]["primary"].items()) sum += n.get<std::size_t>();
    EXPECT_EQ(sum, d["categories"][group]["records"].get<std::size_t>()) << group;
  }
  EXPECT_EQ(d["categories"]["overall"]["records"], 30);
  EXPECT_EQ(d["categories"]["overall"]["primary"].size(), 14u);
  EXPECT_EQ(d["categories"]["overall"]["flags"].size(), 8u);

  // Per record: one line each, and the counts of their categories are the table's.
  std::string out, err;
  const std::string lines_file = path("st-records.jsonl");
  ASSERT_EQ(run_pwab("score " + path("st") + " --data " + data_ + " --records-out " + lines_file, &out, &err), 0);
  EXPECT_TRUE(has(out, "## Why tasks fail")) << out;
  auto records = lines_of(pwab::test::read_text(lines_file));
  ASSERT_EQ(records.size(), 30u);
  std::map<std::string, int> counts;
  for (const auto& r : records) ++counts[r["category"].get<std::string>()];
  for (const auto& [name, n] : counts) EXPECT_EQ(d["categories"]["overall"]["primary"][name], n) << name;

  ASSERT_EQ(run_pwab("score " + path("st") + " --data " + data_ + " --format md", &out, &err), 0);
  EXPECT_TRUE(has(out, "| solved |")) << out;
  EXPECT_TRUE(has(out, "## Personalization attribution")) << out;
  // Without --data: the scores as before, and --records-out alone is refused.
  ASSERT_EQ(run_pwab("score " + path("st") + " --format json", &out, &err), 0);
  EXPECT_FALSE(Json::parse(out).contains("diagnosis"));
  EXPECT_EQ(run_pwab("score " + path("st") + " --records-out " + lines_file, &out, &err), 2);
  EXPECT_TRUE(has(err, "--records-out needs --data")) << err;
  // Another dataset than the run was made on: scored, with a warning.
  const std::string other = path("tiny");
  ASSERT_EQ(run_pwab("data synth --out " + other + " --scale mini --seed 6"), 0);
  EXPECT_EQ(run_pwab("score " + path("mt") + " --data " + other + " --format json", &out, &err), 0) << err;
  EXPECT_TRUE(has(err, "was not made on")) << err;
}

TEST_F(DiagnosisCli, CompareWithDataShowsTheMovementAndThePersonalShare) {
  std::string out, err;
  ASSERT_EQ(run_pwab("compare " + path("st-none") + " " + path("st") + " --data " + data_, &out, &err), 0) << err;
  EXPECT_TRUE(has(out, "Failure categories, 30 paired records")) << out;
  EXPECT_TRUE(has(out, "unchanged")) << out;
  EXPECT_TRUE(has(out, "Personal share of the agent's parameters")) << out;
  // Without memory the recommend calls have no history to give: they cannot be personal.
  Json none = diagnosis_of(path("st-none"));
  EXPECT_EQ(none["attribution"]["recommend"]["share"]["value"], 0.0);
  Json with = diagnosis_of(path("st"));
  EXPECT_GT(with["attribution"]["recommend"]["share"]["value"].get<double>(), 0.5);
}

TEST_F(DiagnosisCli, RescoreRecomputesTheSameDiagnosis) {
  std::string out, err;
  ASSERT_EQ(run_pwab("rescore " + path("mt") + " --data " + data_ + " --out " + path("mt-rescored"), &out, &err), 0)
      << err;
  Json a = diagnosis_of(path("mt")), b = diagnosis_of(path("mt-rescored"));
  EXPECT_TRUE(a.contains("leaks"));
  EXPECT_EQ(a["user_sim"], "scripted");
  EXPECT_EQ(a, b);
  // The scripted user never gives the title or ASIN away; it may not quote 6 words of the review either.
  EXPECT_EQ(a["leaks"]["overall"]["leaked_replies"], 0);
  EXPECT_GT(a["leaks"]["overall"]["replies"].get<int>(), 0);
}

//! The fc agent asks the user once, searches, then stops. The user leaks (the target's ASIN, or for a review task
//! its true review) in the first `leaks` fresh dialogues; a re-ask (a request that already holds the leaked draft)
//! gets a clean answer.
class LeakyWorld {
 public:
  explicit LeakyWorld(int leaks) : leaks_(leaks) {}
  ScriptedReply operator()(const ReceivedRequest& r) {
    Json body = Json::parse(r.body);
    if (!body.contains("tools")) return user(body);
    int assistant_turns = 0;
    for (const auto& m : body["messages"]) assistant_turns += m["role"] == "assistant";
    if (assistant_turns == 0) return ScriptedReply::text("What exactly are you after?");
    if (assistant_turns >= 2) return ScriptedReply::tool_call("stop", "{}", "call_9");
    return ScriptedReply::tool_call("search_product_by_query", R"({"query": "something good"})");
  }

 private:
  ScriptedReply user(const Json& body) {
    const std::string system = body["messages"][0]["content"].get<std::string>();
    std::string leak;
    if (auto at = system.find("The review you wrote of it:\n"); at != std::string::npos) {
      at += std::string("The review you wrote of it:\n").size();
      leak = "As I wrote: " + system.substr(at, system.find("\n\n", at) - at);
    } else if (auto at = system.find("Parent Asin: "); at != std::string::npos) {
      at += std::string("Parent Asin: ").size();
      leak = "It is " + system.substr(at, system.find('\n', at) - at) + ", that one.";
    }
    bool fresh = true;  // a re-ask carries the leaked draft: answer it cleanly
    for (const auto& m : body["messages"])
      if (m["role"] != "system" && has(m["content"].get<std::string>(), leak.substr(0, 30))) fresh = false;
    if (fresh && !leak.empty() && leaked_.fetch_add(1) < leaks_) return ScriptedReply::text(leak);
    return ScriptedReply::text("Something sturdy that is easy to clean.");
  }

  int leaks_;
  std::atomic<int> leaked_{0};
};

TEST_F(DiagnosisCli, ALeakingLlmUserIsMeasuredAndTheGuardKeepsLeaksOut) {
  OpenAITestServer server;
  const int n = 6, k = 2;
  auto run = [&](const std::string& name, const std::string& extra) {
    auto world = std::make_shared<LeakyWorld>(k);
    server.set_chat_handler([world](const ReceivedRequest& r) { return (*world)(r); });
    std::string out, err;
    EXPECT_EQ(run_pwab("run --quiet --data " + data_ + " --agent fc --model m --embedder hashing --base-url " +
                           server.base_url() + " --track multi --user-sim llm --user-model u --concurrency 1 " +
                           "--tasks 0:" + std::to_string(n) + " --out " + path(name) + extra,
                       &out, &err),
              0)
        << err;
  };
  run("leaky", "");
  Json d = diagnosis_of(path("leaky"));
  EXPECT_EQ(d["user_sim"], "llm");
  EXPECT_EQ(d["leaks"]["overall"]["replies"], n);
  EXPECT_EQ(d["leaks"]["overall"]["leaked_replies"], k);
  EXPECT_DOUBLE_EQ(d["leaks"]["overall"]["reply_rate"].get<double>(), static_cast<double>(k) / n);
  EXPECT_EQ(d["leaks"]["overall"]["leaked_episodes"], k);
  EXPECT_EQ(d["categories"]["overall"]["flags"]["user_leaked"], k);
  EXPECT_EQ(d["leaks"]["overall"]["scores"]["clean_outcomes"], n - k);

  run("guarded", " --user-guard 2");
  Json g = diagnosis_of(path("guarded"));
  EXPECT_EQ(g["leaks"]["overall"]["replies"], n);
  EXPECT_EQ(g["leaks"]["overall"]["leaked_replies"], 0);
  int rewrites = 0;
  for (const auto& r : lines_of(pwab::test::read_text(std::filesystem::path(path("guarded")) / "results.jsonl")))
    if (r.contains("user")) rewrites += r["user"].value("rewrites", 0);
  EXPECT_EQ(rewrites, k);
}

}  // namespace
