// The real `pwab` binary: build → validate → consistency on raw files written here, exit codes for bad usage and
// bad input, and (when ../shared/realdata is present) a build of the real Amazon Reviews 2023 samples that
// validates and that `pwab run` evaluates.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "raw_fixture.h"
#include "support/test_support.h"

namespace pwab::construct {
namespace {

int run_binary(const std::string& args, std::string* output = nullptr) {
  test::TempDir out_dir;
  std::string cmd = std::string(PWAB_BINARY) + " " + args + " > " + (out_dir / "out").string() + " 2>&1";
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
