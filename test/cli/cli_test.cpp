// The `pwab` command line, run in-process through cli::run and, for exit codes, as the real binary.
#include "cli/cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "support/test_support.h"

namespace pwab::cli {
namespace {

int run_binary(const std::string& args, std::string* output = nullptr) {
  test::TempDir out_dir;
  std::string cmd = std::string(PWAB_BINARY) + " " + args + " > " + (out_dir / "out").string() + " 2>&1";
  int status = std::system(cmd.c_str());
  if (output) *output = test::read_text(out_dir / "out");
  return WEXITSTATUS(status);
}

TEST(Cli, SynthThenValidate) {
  test::TempDir dir;
  std::string out;
  EXPECT_EQ(run_binary("data synth --out " + (dir / "mini").string() + " --scale mini --seed 3", &out), 0) << out;
  EXPECT_NE(out.find("wrote the mini synthetic dataset"), std::string::npos) << out;
  EXPECT_EQ(run_binary("data validate " + (dir / "mini").string(), &out), 0) << out;
  EXPECT_NE(out.find("# Instructions"), std::string::npos) << out;
  EXPECT_NE(out.find("Checks: 0 errors, 0 warnings"), std::string::npos) << out;
  EXPECT_EQ(run_binary("data validate --json " + (dir / "mini").string(), &out), 0);
  EXPECT_NE(out.find("\"instructions\": 109"), std::string::npos) << out;
}

TEST(Cli, ValidateFailsWithExitCodeOneOnErrors) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  test::write_text(dir / "user_profiles.json", "{\"A\": 1}");
  std::string out;
  EXPECT_EQ(run_binary("data validate " + dir.path().string(), &out), 1);
  EXPECT_NE(out.find("user_profiles.json: user \"A\""), std::string::npos) << out;
  EXPECT_EQ(run_binary("data validate /nonexistent-pwab-dir", &out), 1);
  EXPECT_NE(out.find("not a directory"), std::string::npos) << out;
  // Warnings pass unless --strict.
  EXPECT_EQ(run_binary("data validate " + test::fixture("data/original").string()), 0);
  EXPECT_EQ(run_binary("data validate --strict " + test::fixture("data/original").string()), 1);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run({"pwab", "data", "synth"}), kUsage);                          // --out missing
  EXPECT_EQ(run({"pwab", "data", "synth", "--out", "x", "--scale", "huge"}), kUsage);
  EXPECT_EQ(run({"pwab", "no-such-command"}), kUsage);
  EXPECT_EQ(run({"pwab", "data", "synth", "--out", "/tmp/pwab-x", "--products", "3"}), kUsage);
}

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, IndexSearchTrainRecommend) {
  test::TempDir dir;
  std::string data = (dir / "mini").string(), out;
  ASSERT_EQ(run_binary("data synth --out " + data + " --scale mini"), 0);
  ASSERT_EQ(run_binary("index build " + data, &out), 0) << out;
  EXPECT_NE(out.find("index of 2000 products ready"), std::string::npos) << out;

  ASSERT_EQ(run_binary("index docs --data " + data, &out), 0);
  EXPECT_EQ(count_lines(out), 2000);
  std::string first = out.substr(0, out.find('\n'));
  EXPECT_EQ(first.find('\t'), 10u) << first;                      // asin<TAB>text
  EXPECT_NE(first.find("- Title: "), std::string::npos) << first;  // the product lines, flattened

  ASSERT_EQ(run_binary("search --data " + data + " 'wireless earbuds'", &out), 0) << out;
  EXPECT_EQ(count_lines(out), 10);
  EXPECT_EQ(out.rfind("q0\t1\tB", 0), 0u) << out;
  test::write_text(dir / "queries.tsv", "a\tdark roast coffee\nb\tlaptop\n");
  ASSERT_EQ(run_binary("search --data " + data + " --queries " + (dir / "queries.tsv").string(), &out), 0) << out;
  EXPECT_EQ(count_lines(out), 20);
  EXPECT_NE(out.find("\nb\t1\t"), std::string::npos) << out;
  EXPECT_EQ(run_binary("search --data " + data + " x --queries " + (dir / "queries.tsv").string(), &out), 2) << out;

  EXPECT_EQ(run_binary("recommend --data " + data + " B0ANY", &out), 1);
  EXPECT_NE(out.find("run `pwab rec train"), std::string::npos) << out;
  EXPECT_EQ(run_binary("rec eval " + data, &out), 1);
  EXPECT_NE(out.find("run `pwab rec train"), std::string::npos) << out;
  ASSERT_EQ(run_binary("rec train " + data + " --epochs 2 --eval-every 0", &out), 0) << out;

  // The held-out evaluation: a table with the model and both baselines, or JSON; either recipe's checkpoint.
  ASSERT_EQ(run_binary("rec eval " + data, &out), 0) << out;
  for (const char* row : {"held-out test purchases", "HR@10", "sasrec", "most-popular", "last-item successors"})
    EXPECT_NE(out.find(row), std::string::npos) << row << "\n" << out;
  auto original = (dir / "original.pwab").string();
  ASSERT_EQ(run_binary("rec train " + data + " --recipe original --epochs 2 --out " + original, &out), 0) << out;
  ASSERT_EQ(run_binary("rec eval " + data + " --checkpoint " + original + " --k 5 --json", &out), 0) << out;
  auto report = nlohmann::json::parse(out);
  EXPECT_EQ(report["k"], 5);
  EXPECT_GT(report["cases"].get<int>(), 50);
  EXPECT_EQ(report["most_popular"]["distinct_items"], 5);
  for (const char* ranker : {"sasrec", "most_popular", "successors"}) {
    double hr = report[ranker]["hr"].get<double>();
    EXPECT_TRUE(hr >= 0 && hr <= 1) << ranker << " " << hr;
  }
  // The recipe is recorded in the checkpoint: resuming it with another model or objective is refused, with
  // the same recipe it continues.
  EXPECT_EQ(run_binary("rec train " + data + " --epochs 3 --resume --out " + original, &out), 1) << out;
  EXPECT_NE(out.find("differs from the options"), std::string::npos) << out;
  EXPECT_EQ(run_binary("rec train " + data + " --epochs 3 --dropout 0.5 --resume --out " + original, &out), 1) << out;
  EXPECT_NE(out.find("trained with loss bce, the options say softmax"), std::string::npos) << out;
  ASSERT_EQ(run_binary("rec train " + data + " --recipe original --epochs 3 --resume --out " + original, &out), 0)
      << out;
  EXPECT_NE(out.find("trained epochs 3-3"), std::string::npos) << out;
  EXPECT_EQ(run_binary("rec train " + data + " --recipe newest", &out), 2) << out;
  // A model without the train purchases never replaces the served one unasked.
  EXPECT_EQ(run_binary("rec train " + data + " --hold-out-train --epochs 2", &out), 2) << out;
  EXPECT_NE(out.find("--hold-out-train needs --out"), std::string::npos) << out;
  std::string asin = first.substr(0, 10);
  ASSERT_EQ(run_binary("recommend --data " + data + " " + asin + " B0NOTREAL", &out), 0) << out;
  EXPECT_EQ(count_lines(out), 10);
  EXPECT_EQ(out.rfind("1\tB", 0), 0u) << out;
  ASSERT_EQ(run_binary("recommend --data " + data + " B0NOTREAL", &out), 0) << out;
  EXPECT_EQ(out, "");  // unknown ASINs are dropped; nothing left → no recommendations
}

// Issue 13 item 6: a first `pwab run` on a new dataset trains and caches the recommender, as it does the index.
TEST(Cli, FirstRunTrainsAndCachesTheRecommender) {
  test::TempDir dir;
  std::string data = (dir / "mini").string(), out;
  ASSERT_EQ(run_binary("data synth --out " + data + " --scale mini --seed 4"), 0);
  std::string run = "run --data " + data + " --track single --agent heuristic --embedder hashing --tasks 0:3 --out ";
  auto ckpt = dir / "mini" / ".pwab-rec" / "sasrec.pwab";
  // A usage error of the agent comes before any training.
  EXPECT_EQ(run_binary("run --data " + data + " --agent remote --out " + (dir / "r0").string(), &out), 2) << out;
  EXPECT_NE(out.find("--agent-url"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(ckpt));
  ASSERT_EQ(run_binary(run + (dir / "r1").string(), &out), 0) << out;
  EXPECT_NE(out.find("no recommender checkpoint yet; training SASRec (30 epochs)"), std::string::npos) << out;
  EXPECT_NE(out.find("SASRec trained in"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(ckpt));
  EXPECT_FALSE(std::filesystem::exists(ckpt.string() + ".partial"));
  // The second run reuses it, and a `pwab recommend` now finds it.
  ASSERT_EQ(run_binary(run + (dir / "r2").string(), &out), 0) << out;
  EXPECT_EQ(out.find("training SASRec"), std::string::npos) << out;
  // A checkpoint the user names is never trained: it must exist.
  EXPECT_EQ(run_binary(run + (dir / "r3").string() + " --checkpoint " + (dir / "none.pwab").string(), &out), 1);
  EXPECT_NE(out.find("no recommender checkpoint at"), std::string::npos) << out;
}

TEST(Cli, VersionNamesTheLibraries) {
  std::string out;
  EXPECT_EQ(run_binary("version", &out), 0);
  for (const char* lib : {"pwab 0.1.0", "xapian", "simdjson", "sqlite", "curl", "httplib", "fasttext", "libtorch", "fmt",
                          "CLI11", "boost"})
    EXPECT_NE(out.find(lib), std::string::npos) << lib << "\n" << out;
}

}  // namespace
}  // namespace pwab::cli
