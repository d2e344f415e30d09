// The real `pwab` binary: build → validate → consistency on raw files written here, exit codes for bad usage and
// bad input, and (when ../shared/realdata is present) a build of the real Amazon Reviews 2023 samples that
// validates and that `pwab run` evaluates.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "raw_fixture.h"
#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace pwab::construct {
namespace {

//! Runs `pwab ARGS`; with `env_prefix`, the first word of ARGS is a VAR=value assignment for the command.
int run_binary(const std::string& args, std::string* output = nullptr, bool env_prefix = false) {
  test::TempDir out_dir;
  std::string cmd = env_prefix ? args.substr(0, args.find(' ')) + " " + PWAB_BINARY + args.substr(args.find(' '))
                               : std::string(PWAB_BINARY) + " " + args;
  cmd += " > " + (out_dir / "out").string() + " 2>&1";
  int status = std::system(cmd.c_str());
  if (output) *output = test::read_text(out_dir / "out");
  return WEXITSTATUS(status);
}

TEST(BuildCli, BuildValidateConsistency) {
  test::TempDir dir;
  testing::RawSample s(dir.path());
  std::string files = " --reviews " + s.electronics.string() + " " + s.home.string() + " --meta " +
                      s.meta_electronics.string() + " " + s.meta_home.string();
  std::string out_dir = (dir / "ds").string(), out;
  ASSERT_EQ(run_binary("build" + files + " --out " + out_dir + " --min-behaviours 1 --offline --seed 5", &out), 0) << out;
  for (const char* needle : {"Users: ", "Behaviours: ", "Tasks: train", "skipped", "missing timestamp", "reviews/s",
                             "pwab data validate"})
    EXPECT_NE(out.find(needle), std::string::npos) << needle << "\n" << out;
  ASSERT_EQ(run_binary("data validate --strict " + out_dir, &out), 0) << out;
  EXPECT_NE(out.find("Checks: 0 errors, 0 warnings"), std::string::npos) << out;
  ASSERT_EQ(run_binary("data consistency " + out_dir + " --embedder hashing --negative-users 3", &out), 0) << out;
  EXPECT_NE(out.find("top-1 accuracy"), std::string::npos) << out;
  ASSERT_EQ(run_binary("data consistency --json " + out_dir + " --negative-users 3", &out), 0) << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["profile_behaviour"]["users"], 7);

  ASSERT_EQ(run_binary("build --json" + files + " --out " + out_dir + " --min-behaviours 1 --type-mix 0,0,1", &out), 0) << out;
  j = nlohmann::json::parse(out.substr(0, out.rfind('}') + 1));
  EXPECT_EQ(j["tasks"]["test"]["search"], 0);
  EXPECT_GT(j["tasks"]["test"]["review"], 0);
  EXPECT_EQ(j["behaviours"]["duplicates_dropped"], 2);

  // Usage errors exit 2; bad input exits 1 with the file named.
  EXPECT_EQ(run_binary("build --reviews " + s.electronics.string() + " --out " + out_dir), 2);  // no --meta
  EXPECT_EQ(run_binary("build" + files + " --out " + out_dir + " --offline --model gpt-4o-mini"), 2);
  EXPECT_EQ(run_binary("build" + files + " --out " + out_dir + " --type-mix 1,2"), 2);
  EXPECT_EQ(run_binary("build" + files + " --out " + out_dir + " --categories Toys_and_Games", &out), 2);
  EXPECT_NE(out.find("--categories all"), std::string::npos) << out;
  EXPECT_EQ(run_binary("build --reviews " + s.meta_electronics.string() + " --meta " + s.meta_home.string() +
                           " --categories all --out " + out_dir, &out), 1);
  EXPECT_NE(out.find("meta_Electronics.jsonl: none of its"), std::string::npos) << out;
  EXPECT_EQ(run_binary("data consistency " + out_dir + " --judge llm"), 2);  // no --model
}

// LLM mode through the command line against the loopback server: recorded into a cache, then replayed with the
// server gone, giving the same dataset.
TEST(BuildCli, LlmBuildRecordsAndReplays) {
  test::TempDir dir;
  testing::RawSample s(dir.path());
  test::OpenAITestServer server;
  server.set_chat_handler([](const test::ReceivedRequest& req) {
    auto body = nlohmann::json::parse(req.body);
    std::string user = body["messages"][1]["content"];
    if (user.find("Reply with one JSON object") != std::string::npos)
      return test::ScriptedReply::text(R"({"Gender": "Male", "Age": "25-34", "Occupation": "Engineer"})");
    // A different instruction for every prompt: a hash of the prompt text.
    return test::ScriptedReply::text("Please help me with this, reference " + std::to_string(std::hash<std::string>{}(user) % 1000003) + ".");
  });
  std::string base = "build --reviews " + s.electronics.string() + " " + s.home.string() + " --meta " +
                     s.meta_electronics.string() + " " + s.meta_home.string() +
                     " --min-behaviours 1 --model test-model --base-url " + server.base_url() +
                     " --api-key-env PWAB_TEST_KEY --llm-retries 1 --llm-seed 7 --llm-cache " + (dir / "cache").string();
  std::string out;
  ASSERT_EQ(run_binary("PWAB_TEST_KEY=sk-test " + base + " --out " + (dir / "rec").string(), &out, true), 0) << out;
  EXPECT_NE(out.find("Mode: llm:test-model"), std::string::npos) << out;
  EXPECT_NE(out.find("LLM: "), std::string::npos) << out;
  EXPECT_NE(out.find("LLM cost: "), std::string::npos) << out;
  std::size_t n_requests = server.n_requests();
  EXPECT_GT(n_requests, 7u);
  auto body = nlohmann::json::parse(server.requests()[0].body);
  EXPECT_EQ(body["seed"], 7);
  server.stop();
  ASSERT_EQ(run_binary(base + " --replay --out " + (dir / "rep").string(), &out), 0) << out;
  for (const char* f : {"user_profiles.json", "user_instructions.json", "user_history.json"})
    EXPECT_EQ(test::read_text(dir / "rec" / f), test::read_text(dir / "rep" / f)) << f;
  EXPECT_NE(test::read_text(dir / "rep" / "user_profiles.json").find("Engineer"), std::string::npos);
}

// The real samples of shared/realdata (README there): source A has real timestamps and parent_asins; B and C
// have no timestamps, so their reviews are counted as malformed and skipped.
TEST(BuildCli, RealSamplesBuildValidateAndRun) {
  auto real = test::shared("realdata");
  auto a = real / "ucsd_multiagent_human_worker";
  if (!std::filesystem::exists(a / "reviews.jsonl")) GTEST_SKIP() << "no real samples at " << real;
  test::TempDir dir;
  std::string data = (dir / "real").string(), out;
  std::string cmd = "build --reviews " + (a / "reviews.jsonl").string() + " --meta " + (a / "meta.jsonl").string() +
                    " --categories all --min-behaviours 5 --users 1000 --out " + data;
  ASSERT_EQ(run_binary(cmd, &out), 0) << out;
  EXPECT_NE(out.find("Users: "), std::string::npos) << out;
  ASSERT_EQ(run_binary("data validate --strict " + data, &out), 0) << out;
  auto report = nlohmann::json::parse(test::read_text(dir / "real" / "build_report.json"));
  EXPECT_GT(report["users"]["sampled"].get<int>(), 500);
  EXPECT_EQ(report["lines"]["reviews_malformed"], 0);

  // Sources B and C lack timestamps: every line is malformed, which is an error naming the file.
  auto b = real / "agenticshop";
  if (std::filesystem::exists(b / "reviews.jsonl")) {
    EXPECT_EQ(run_binary("build --reviews " + (a / "reviews.jsonl").string() + " " + (b / "reviews.jsonl").string() +
                             " --meta " + (a / "meta.jsonl").string() + " --categories all --out " + data + "-ab",
                         &out), 1);
    EXPECT_NE(out.find("missing timestamp"), std::string::npos) << out;
  }

  // The built dataset runs: index, a short SASRec training, and the heuristic agent on the first test tasks.
  ASSERT_EQ(run_binary("index build " + data, &out), 0) << out;
  ASSERT_EQ(run_binary("rec train " + data + " --epochs 2", &out), 0) << out;
  ASSERT_EQ(run_binary("run --data " + data + " --track single --agent heuristic --embedder hashing --tasks 0:40 --out " +
                           (dir / "run").string(), &out), 0) << out;
  EXPECT_NE(out.find("Overall"), std::string::npos) << out;
}

}  // namespace
}  // namespace pwab::construct
