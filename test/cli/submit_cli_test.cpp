// `pwab submit prepare|verify` as the real binary (issue 21, docs/submit.md): an honest bundle of a single-turn
// run (fastText review similarity) and a multi-turn run with two trials (the scripted user) verifies; each way of
// changing a bundle after it was prepared is caught and named; runs that cannot be submitted are refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/hash.h"
#include "support/test_support.h"

namespace {

using Json = nlohmann::json;
using pwab::test::read_text;
using pwab::test::run_pwab;
using pwab::test::TempDir;
using pwab::test::write_text;
namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<Json> read_lines(const fs::path& file) {
  std::vector<Json> lines;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

void write_lines(const fs::path& file, const std::vector<Json>& lines) {
  std::string text;
  for (const Json& j : lines) text += j.dump() + "\n";
  write_text(file, text);
}

//! A cheat who edits a run's records also fixes the hash submission.json holds, so the deeper checks must catch it.
void rehash(const fs::path& bundle, int run) {
  Json claim = Json::parse(read_text(bundle / "submission.json"));
  claim["runs"][run - 1]["records_hash"] =
      pwab::to_hex(pwab::hash_file(bundle / "runs" / std::to_string(run) / "results.jsonl"));
  write_text(bundle / "submission.json", claim.dump(2));
}

class SubmitCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_pwab("data synth --out " + data_ + " --scale mini --seed 2"), 0);
    ASSERT_EQ(run_pwab("rec train " + data_ + " --epochs 3 --eval-every 0"), 0);
    ASSERT_EQ(run_pwab("run --data " + data_ + " --tasks 0:30 --quiet --out " + path("st")), 0);
    ASSERT_EQ(run_pwab("run --data " + data_ + " --track multi --tasks 0:20 --trials 2 --embedder hashing --quiet "
                       "--out " + path("mt")),
              0);
    std::string summary, errors;
    ASSERT_EQ(run_pwab("submit prepare " + path("st") + " " + path("mt") + " --out " + path("bundle") +
                           " --model 'offline heuristic' --description 'The built-in heuristic agent.'",
                       &summary, &errors),
              0)
        << errors;
    prepare_output_ = summary;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }

  //! A fresh copy of the honest bundle to change.
  static fs::path copy_of_bundle(const std::string& name) {
    fs::path copy = *dir_ / name;
    fs::copy(path("bundle"), copy, fs::copy_options::recursive);
    return copy;
  }
  //! `pwab submit verify BUNDLE` on the mini data: the exit code, with its stdout and stderr in the arguments.
  static int verify(const fs::path& bundle, std::string* out, std::string* err, const std::string& extra = "") {
    return run_pwab("submit verify " + bundle.string() + " --data " + data_ + extra, out, err);
  }

  static TempDir* dir_;
  static std::string data_, prepare_output_;
};
TempDir* SubmitCli::dir_ = nullptr;
std::string SubmitCli::data_, SubmitCli::prepare_output_;

TEST_F(SubmitCli, APreparedBundleHoldsTheClaimsAndVerifies) {
  const fs::path bundle = path("bundle");
  for (const char* f : {"submission.json", "summary.md", "runs/1/manifest.json", "runs/1/results.jsonl",
                        "runs/2/manifest.json", "runs/2/results.jsonl"})
    EXPECT_TRUE(fs::exists(bundle / f)) << f;
  Json claim = Json::parse(read_text(bundle / "submission.json"));
  EXPECT_EQ(claim["format"], "pwab-submission/1");
  EXPECT_EQ(claim["model"], "offline heuristic");
  ASSERT_EQ(claim["runs"].size(), 2u);
  // Each run's claimed scores are what `pwab score --format json` prints for the original run, without the
  // analysis figures (timings cannot be re-checked).
  for (int k : {0, 1}) {
    std::string score;
    ASSERT_EQ(run_pwab("score " + path(k == 0 ? "st" : "mt") + " --format json", &score), 0);
    Json printed = Json::parse(score);
    EXPECT_TRUE(printed.contains("analysis"));
    printed.erase("analysis");
    EXPECT_EQ(claim["runs"][k]["scores"], printed) << k;
  }
  EXPECT_TRUE(claim["runs"][1]["scores"].contains("trials"));  // pass^k claimed too
  EXPECT_EQ(claim["runs"][1]["environment"]["user_sim"], "scripted");
  EXPECT_EQ(claim["runs"][0]["agent"]["name"], "heuristic");
  EXPECT_EQ(claim["runs"][0]["records"], 30);
  EXPECT_EQ(claim["runs"][1]["records"], 40);
  EXPECT_TRUE(has(prepare_output_, "## Run 2: heuristic (taskspec), multi-turn track")) << prepare_output_;
  EXPECT_EQ(read_text(bundle / "summary.md"), prepare_output_);

  std::string out, err;
  ASSERT_EQ(verify(bundle, &out, &err), 0) << out << err;
  EXPECT_TRUE(has(out, "runs/1 heuristic (taskspec) [single-turn]: ok: 30 records re-scored")) << out;
  EXPECT_TRUE(has(out, "runs/2 heuristic (taskspec) [multi-turn]: ok: 40 records re-scored")) << out;
  EXPECT_TRUE(has(out, "30 of 109 tasks of its split")) << out;
  EXPECT_TRUE(has(out, "the scripted user's replies regenerated")) << out;
  EXPECT_TRUE(out.ends_with("verified\n")) << out;
  // A partial run is fine unless the whole split is required.
  EXPECT_EQ(verify(bundle, &out, &err, " --require-complete"), 1);
  EXPECT_TRUE(has(err, "runs/1 (heuristic (taskspec)): covers 30 of the 109 tasks of its split")) << err;
}

TEST_F(SubmitCli, AChangedClaimIsNamed) {
  const fs::path bundle = copy_of_bundle("claim");
  Json claim = Json::parse(read_text(bundle / "submission.json"));
  claim["runs"][1]["scores"]["groups"]["search"]["r_acc"]["value"] = 0.99;
  write_text(bundle / "submission.json", claim.dump(2));
  std::string out, err;
  EXPECT_EQ(verify(bundle, &out, &err), 1);
  EXPECT_TRUE(has(out, "runs/1 heuristic (taskspec) [single-turn]: ok")) << out;
  EXPECT_TRUE(has(err, "runs/2 (heuristic (taskspec)): scores groups.search.r_acc.value: claimed 0.99, the records "
                       "give "))
      << err;
}

TEST_F(SubmitCli, TheDiagnosisIsClaimedAndRecomputed) {
  // Prepared with --data, each run also claims `pwab score --data --format json`'s diagnosis; verify recomputes it
  // from the re-scored records, and a changed count is named.
  const std::string bundle = path("bundle-diag");
  std::string out, err;
  ASSERT_EQ(run_pwab("submit prepare " + path("st") + " " + path("mt") + " --out " + bundle + " --model m --data " +
                         data_,
                     &out, &err),
            0)
      << err;
  EXPECT_TRUE(has(out, "## Why tasks fail")) << out;
  Json claim = Json::parse(read_text(fs::path(bundle) / "submission.json"));
  for (int k : {0, 1}) {
    std::string score;
    ASSERT_EQ(run_pwab("score " + path(k == 0 ? "st" : "mt") + " --data " + data_ + " --format json", &score), 0);
    EXPECT_EQ(claim["runs"][k]["diagnosis"], Json::parse(score)["diagnosis"]) << k;
  }
  EXPECT_TRUE(claim["runs"][1]["diagnosis"].contains("leaks"));  // multi-turn
  ASSERT_EQ(verify(bundle, &out, &err), 0) << out << err;
  EXPECT_FALSE(has(err + out, "claims no diagnosis")) << out << err;

  claim["runs"][1]["diagnosis"]["leaks"]["overall"]["replies"] = 1;
  write_text(fs::path(bundle) / "submission.json", claim.dump(2));
  EXPECT_EQ(verify(bundle, &out, &err), 1);
  EXPECT_TRUE(has(err, "runs/2 (heuristic (taskspec)): diagnosis leaks.overall.replies: claimed 1, the records give"))
      << err;
}

TEST_F(SubmitCli, ChangedRecordsAreCaughtEvenWithTheHashFixed) {
  std::string out, err;
  {  // Edited without fixing the hash: the file is not the one prepared.
    const fs::path bundle = copy_of_bundle("unhashed");
    auto lines = read_lines(bundle / "runs/1/results.jsonl");
    lines[0]["instruction"] = "something else";
    write_lines(bundle / "runs/1/results.jsonl", lines);
    EXPECT_EQ(verify(bundle, &out, &err), 1);
    EXPECT_TRUE(has(err, "runs/1/results.jsonl is not the file the bundle was prepared with")) << err;
  }
  {  // A better result written into an attempt.
    const fs::path bundle = copy_of_bundle("attempt");
    auto lines = read_lines(bundle / "runs/1/results.jsonl");
    std::size_t k = 0;
    while (k < lines.size() && lines[k]["attempts"][0][1].get<double>() > 0.5) ++k;
    ASSERT_LT(k, lines.size());
    lines[k]["attempts"][0][1] = 1.0;
    write_lines(bundle / "runs/1/results.jsonl", lines);
    rehash(bundle, 1);
    EXPECT_EQ(verify(bundle, &out, &err), 1);
    EXPECT_TRUE(has(err, lines[k]["task"].get<std::string>() + ": attempt 1 claims result_acc 1, the trajectory gives"))
        << err;
  }
  {  // Another search query put in an agent's place: the tools answer it differently.
    const fs::path bundle = copy_of_bundle("query");
    auto lines = read_lines(bundle / "runs/1/results.jsonl");
    std::size_t k = 0;
    while (k < lines.size() && !(lines[k]["actions"][0]["name"] == "search_product_by_query" &&
                                 lines[k]["attempts"][0][1].get<double>() > 0))
      ++k;
    ASSERT_LT(k, lines.size());
    lines[k]["actions"][0]["arguments"] = R"({"query": "zzzz qqqq"})";
    write_lines(bundle / "runs/1/results.jsonl", lines);
    rehash(bundle, 1);
    EXPECT_EQ(verify(bundle, &out, &err), 1);
    EXPECT_TRUE(has(err, lines[k]["task"].get<std::string>() + ": attempt 1 claims result_acc")) << err;
  }
  {  // A user reply that leaks the answer: not what the scripted user says.
    const fs::path bundle = copy_of_bundle("reply");
    auto lines = read_lines(bundle / "runs/2/results.jsonl");
    bool changed = false;
    for (Json& line : lines)
      for (Json& action : line["actions"])
        if (!changed && action["name"] == "respond") {
          action["observation"] = "It is the product " + line["target_asin"].get<std::string>() + ".";
          changed = true;
        }
    ASSERT_TRUE(changed);
    write_lines(bundle / "runs/2/results.jsonl", lines);
    rehash(bundle, 2);
    EXPECT_EQ(verify(bundle, &out, &err), 1);
    EXPECT_TRUE(has(err, "is not the scripted user's (recorded \"It is the product")) << err;
  }
}

TEST_F(SubmitCli, AnotherDatasetOrEmbedderIsRefused) {
  std::string out, err;
  const std::string other = path("other");
  ASSERT_EQ(run_pwab("data synth --out " + other + " --scale mini --seed 3"), 0);
  EXPECT_EQ(run_pwab("submit verify " + path("bundle") + " --data " + other, &out, &err), 1);
  EXPECT_TRUE(has(err, "the run was made on dataset")) << err;
  EXPECT_EQ(verify(path("bundle"), &out, &err, " --embedder hashing"), 1);
  EXPECT_TRUE(has(err, "the run scored reviews with embedder fasttext")) << err;
}

TEST_F(SubmitCli, RunsThatCannotBeSubmittedAreRefused) {
  std::string out, err;
  // An existing bundle is not overwritten.
  EXPECT_EQ(run_pwab("submit prepare " + path("st") + " --out " + path("bundle") + " --model m", &out, &err), 2);
  EXPECT_TRUE(has(err, "already exists")) << err;
  // A shard: merge first.
  ASSERT_EQ(run_pwab("run --data " + data_ + " --tasks 0:4 --shard 1/2 --embedder hashing --quiet --out " +
                     path("shard")),
            0);
  EXPECT_EQ(run_pwab("submit prepare " + path("shard") + " --out " + path("b-shard") + " --model m", &out, &err), 2);
  EXPECT_TRUE(has(err, "is shard 1 of 2: `pwab merge`")) << err;
  // Errored tasks: retry them first.
  const fs::path errored = *dir_ / "errored";
  pwab::test::copy_dir(path("st"), errored);
  auto lines = read_lines(errored / "results.jsonl");
  lines[3]["error"] = "LLM endpoint unreachable";
  write_lines(errored / "results.jsonl", lines);
  EXPECT_EQ(run_pwab("submit prepare " + errored.string() + " --out " + path("b-err") + " --model m", &out, &err), 2);
  EXPECT_TRUE(has(err, "has 1 errored tasks")) << err;
  // A bundle that is not one.
  fs::create_directories(*dir_ / "not-a-bundle");
  write_text(*dir_ / "not-a-bundle" / "submission.json", R"({"format": "something/2"})");
  EXPECT_EQ(verify(*dir_ / "not-a-bundle", &out, &err), 1);
  EXPECT_TRUE(has(err, "format \"something/2\" is not pwab-submission/1")) << err;
}

}  // namespace
