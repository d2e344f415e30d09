// `pwab run`, `score`, `compare`, `merge` and `agents` as the real binary: both tracks end to end on the mini
// dataset, the summary recomputed from records, resume refusing another config, shards merging to the
// unsharded run, and usage errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace {

using pwab::test::TempDir;

using pwab::test::run_pwab;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

//! One mini dataset with its index and a briefly trained recommender, shared by the tests of this file.
class RunCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_pwab("data synth --out " + data_ + " --scale mini --seed 2"), 0);
    ASSERT_EQ(run_pwab("rec train " + data_ + " --epochs 3 --eval-every 0"), 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string out(const std::string& name) { return (*dir_ / name).string(); }

  static TempDir* dir_;
  static std::string data_;
};
TempDir* RunCli::dir_ = nullptr;
std::string RunCli::data_;

TEST_F(RunCli, SingleTurnRunScoresAndRescores) {
  std::string table, err;
  ASSERT_EQ(run_pwab("run --data " + data_ + " --agent heuristic --out " + out("st") + " --seed 1", &table, &err), 0)
      << err;
  EXPECT_TRUE(has(table, "Search")) << table;
  EXPECT_TRUE(has(table, "heuristic")) << table;
  EXPECT_TRUE(has(table, "Review similarity: fasttext")) << table;  // which embedder scored the reviews
  EXPECT_FALSE(has(table, "Avg. Steps")) << table;  // single-turn tables have no steps column
  EXPECT_TRUE(has(err, "ran ")) << err;
  for (const char* f : {"manifest.json", "results.jsonl", "summary.md", "summary.csv", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out("st")) / f)) << f;

  std::string rescored;
  ASSERT_EQ(run_pwab("score " + out("st"), &rescored), 0);
  EXPECT_EQ(rescored, table);
  // summary.json holds the diagnosis too: exactly what `pwab score --data` prints.
  ASSERT_EQ(run_pwab("score " + out("st") + " --data " + data_ + " --format json", &rescored), 0);
  EXPECT_EQ(rescored, pwab::test::read_text(std::filesystem::path(out("st")) / "summary.json"));
  EXPECT_TRUE(nlohmann::json::parse(rescored).contains("diagnosis"));
  std::string md;
  ASSERT_EQ(run_pwab("score " + out("st") + " --data " + data_ + " --format md", &md), 0);
  EXPECT_EQ(md, pwab::test::read_text(std::filesystem::path(out("st")) / "summary.md"));
  auto summary = nlohmann::json::parse(rescored);
  EXPECT_GT(summary["groups"]["overall"]["r_acc"]["value"].get<double>(), 0.0);
  EXPECT_EQ(summary["groups"]["overall"]["f_acc"]["value"].get<double>() > 0.5, true);
  ASSERT_EQ(run_pwab("score " + out("st") + " --format csv", &rescored), 0);
  EXPECT_EQ(rescored.rfind("group,metric,value,ci_low,ci_high,n_tasks\n", 0), 0u) << rescored;
  ASSERT_EQ(run_pwab("score " + out("st") + " --format md", &rescored), 0);
  EXPECT_TRUE(has(rescored, "|")) << rescored;

  auto manifest = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(out("st")) / "manifest.json"));
  EXPECT_EQ(manifest["config"]["agent"], "heuristic");
  EXPECT_EQ(manifest["config"]["track"], "single");
  EXPECT_EQ(manifest["config"]["max_steps"], 10);
  EXPECT_EQ(manifest["seed"], 1);

  // Resume of a finished run does nothing; a different config is refused, naming what differs.
  ASSERT_EQ(run_pwab("run --data " + data_ + " --agent heuristic --out " + out("st") + " --seed 1 --resume", &table,
                       &err),
            0)
      << err;
  EXPECT_TRUE(has(err, "ran 0 tasks")) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --agent heuristic --memory none --out " + out("st") + " --resume",
                       nullptr, &err),
            2);
  EXPECT_TRUE(has(err, "config")) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --agent heuristic --out " + out("st"), nullptr, &err), 2);
  EXPECT_TRUE(has(err, "already")) << err;

  // The no-memory variant, compared with the full agent: a paired report.
  ASSERT_EQ(run_pwab("run --data " + data_ + " --agent heuristic --memory none --quiet --out " + out("st-none")), 0);
  std::string cmp;
  ASSERT_EQ(run_pwab("compare " + out("st-none") + " " + out("st"), &cmp, &err), 0) << err;
  EXPECT_TRUE(has(cmp, "[A]") && has(cmp, "[B]")) << cmp;
}

TEST_F(RunCli, MultiTurnWithScriptedUser) {
  std::string table, err;
  ASSERT_EQ(run_pwab("run --data " + data_ + " --track multi --tasks 0:12 --concurrency 3 --out " + out("mt"), &table,
                       &err),
            0)
      << err;
  EXPECT_TRUE(has(table, "Avg. Steps")) << table;
  auto manifest = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(out("mt")) / "manifest.json"));
  EXPECT_EQ(manifest["config"]["user_sim"], "scripted");
  EXPECT_EQ(manifest["config"]["tasks"], "0:12");
  std::string records = pwab::test::read_text(std::filesystem::path(out("mt")) / "results.jsonl");
  EXPECT_EQ(std::count(records.begin(), records.end(), '\n'), 12);
  EXPECT_TRUE(has(records, "\"respond\"")) << "the heuristic asks the user in multi-turn";
}

TEST_F(RunCli, ShardsMergeToTheUnshardedRun) {
  std::string err;
  const std::string common = "run --data " + data_ + " --track multi --tasks 0:15 --seed 4 --quiet ";
  ASSERT_EQ(run_pwab(common + "--out " + out("whole")), 0);
  for (int k = 0; k < 3; ++k)
    ASSERT_EQ(run_pwab(common + "--shard " + std::to_string(k) + "/3 --out " + out("s" + std::to_string(k)), nullptr,
                         &err),
              0)
        << err;
  std::string merged, whole;
  ASSERT_EQ(run_pwab("merge --out " + out("merged") + " " + out("s0") + " " + out("s1") + " " + out("s2"), &merged,
                       &err),
            0)
      << err;
  ASSERT_EQ(run_pwab("score " + out("whole") + " --format json", &whole), 0);
  ASSERT_EQ(run_pwab("score " + out("merged") + " --format json", &merged), 0);
  // Every figure agrees but the measured times (analysis.time), which differ from run to run.
  auto untimed = [](const std::string& text) {
    nlohmann::json j = nlohmann::json::parse(text);
    j["analysis"].erase("time");
    return j;
  };
  EXPECT_EQ(untimed(merged), untimed(whole));
  EXPECT_EQ(run_pwab("merge --out " + out("merged2") + " " + out("s0") + " " + out("s1"), nullptr, &err), 2);
  EXPECT_TRUE(has(err, "shard")) << err;
}

//! The records of a run directory by (task, trial) text, timings zeroed (they differ between runs).
std::map<std::string, nlohmann::json> records_by_id(const std::string& dir) {
  std::map<std::string, nlohmann::json> out;
  std::istringstream lines(pwab::test::read_text(std::filesystem::path(dir) / "results.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    j["seconds_env"] = j["seconds_agent"] = 0;
    std::string id = j["task"].get<std::string>() + "#" + std::to_string(j["trial"].get<int>());
    EXPECT_TRUE(out.emplace(id, j).second) << "twice: " << id;
  }
  return out;
}

TEST_F(RunCli, TrialsGivePassHatAndResumePerTrial) {
  std::string table, err;
  const std::string common = "run --data " + data_ + " --track multi --tasks 0:9 --seed 3 --concurrency 2 ";
  ASSERT_EQ(run_pwab(common + "--trials 2 --out " + out("tr"), &table, &err), 0) << err;
  EXPECT_TRUE(has(table, "pass^2")) << table;
  EXPECT_TRUE(has(table, "Flip rate")) << table;
  auto manifest = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(out("tr")) / "manifest.json"));
  EXPECT_EQ(manifest["config"]["trials"], 2);
  auto records = records_by_id(out("tr"));
  EXPECT_EQ(records.size(), 18u);

  // Trial 0 is the single-trial run with the same seed, record for record.
  ASSERT_EQ(run_pwab(common + "--quiet --out " + out("tr-once")), 0);
  auto once = records_by_id(out("tr-once"));
  ASSERT_EQ(once.size(), 9u);
  for (const auto& [id, rec] : once) EXPECT_EQ(records.at(id), rec) << id;
  auto once_manifest = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(out("tr-once")) / "manifest.json"));
  EXPECT_EQ(once_manifest["config"]["trials"], 1);

  std::string json;
  ASSERT_EQ(run_pwab("score " + out("tr") + " --data " + data_ + " --format json", &json, &err), 0) << err;
  EXPECT_EQ(json, pwab::test::read_text(std::filesystem::path(out("tr")) / "summary.json"));
  auto summary = nlohmann::json::parse(json);
  EXPECT_EQ(summary["trials"]["max_trials"], 2);
  EXPECT_EQ(summary["groups"]["overall"]["n_tasks"], 9);
  EXPECT_EQ(summary["groups"]["overall"]["n_outcomes"], 18);
  const auto& overall = summary["trials"]["groups"]["overall"];
  ASSERT_EQ(overall["pass_hat"].size(), 2u);
  double p1 = overall["pass_hat"][0]["value"], p2 = overall["pass_hat"][1]["value"];
  EXPECT_GT(p1, 0.0);
  EXPECT_LE(p2, p1);  // all of two trials passing is never likelier than one
  EXPECT_EQ(overall["n_multi"], 9);
  // A stricter pass rule can only lower pass^1.
  ASSERT_EQ(run_pwab("score " + out("tr") + " --format json --pass-threshold 1", &json, &err), 0) << err;
  EXPECT_LE(nlohmann::json::parse(json)["trials"]["groups"]["overall"]["pass_hat"][0]["value"].get<double>(), p1);
  EXPECT_EQ(nlohmann::json::parse(json)["trials"]["pass_rule"]["review"], 1.0);
  std::string csv;
  ASSERT_EQ(run_pwab("score " + out("tr") + " --format csv", &csv), 0);
  EXPECT_TRUE(has(csv, "\noverall,pass^2,")) << csv;
  EXPECT_EQ(run_pwab("score " + out("tr") + " --pass-threshold review=high", nullptr, &err), 2);
  EXPECT_TRUE(has(err, "high")) << err;

  // Resume without --trials keeps 2 and has nothing to do; fewer is refused; more runs exactly the new trial.
  ASSERT_EQ(run_pwab(common + "--resume --out " + out("tr"), nullptr, &err), 0) << err;
  EXPECT_TRUE(has(err, "ran 0 tasks")) << err;
  EXPECT_EQ(run_pwab(common + "--resume --trials 1 --out " + out("tr"), nullptr, &err), 2);
  EXPECT_TRUE(has(err, "2 trials")) << err;
  ASSERT_EQ(run_pwab(common + "--resume --trials 3 --out " + out("tr"), nullptr, &err), 0) << err;
  EXPECT_TRUE(has(err, "ran 9 tasks")) << err;
  EXPECT_TRUE(has(err, "18 already done")) << err;
  auto raised = records_by_id(out("tr"));
  EXPECT_EQ(raised.size(), 27u);
  for (const auto& [id, rec] : records) EXPECT_EQ(raised.at(id), rec) << id;  // earlier trials untouched
  manifest = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(out("tr")) / "manifest.json"));
  EXPECT_EQ(manifest["config"]["trials"], 3);
  ASSERT_EQ(run_pwab("score " + out("tr") + " --format json", &json), 0);
  EXPECT_EQ(nlohmann::json::parse(json)["trials"]["groups"]["overall"]["pass_hat"].size(), 3u);

  // Compare pairs tasks by their means over trials.
  std::string cmp;
  ASSERT_EQ(run_pwab("compare " + out("tr-once") + " " + out("tr"), &cmp, &err), 0) << err;
  EXPECT_TRUE(has(cmp, "Paired tasks: 9")) << cmp;
  EXPECT_TRUE(has(cmp, "up to 1 per task in A, 3 in B")) << cmp;
}

TEST_F(RunCli, UsageErrors) {
  std::string err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u1") + " --agent nobody", nullptr, &err), 2);
  EXPECT_TRUE(has(err, "nobody")) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u2") + " --track sideways", nullptr, &err), 2);
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u3") + " --user-sim scripted", nullptr, &err), 2);
  EXPECT_TRUE(has(err, "single-turn")) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u4") + " --shard 3/3", nullptr, &err), 2);
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u5") + " --tasks 9:2", nullptr, &err), 2);
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u6") + " --split history", nullptr, &err), 2);
  // The leak guard is the LLM user's: with the scripted user (the multi-turn default) it is refused, as is N < 0.
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u7") + " --track multi --user-guard 2", nullptr, &err),
            2);
  EXPECT_TRUE(has(err, "--user-guard needs --user-sim llm")) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --out " + out("u8") + " --track multi --user-sim llm --user-model m "
                     "--user-guard -1", nullptr, &err), 2);
  EXPECT_TRUE(has(err, "--user-guard must be 0 (off) or more")) << err;
  EXPECT_FALSE(std::filesystem::exists(out("u7"))) << "refused before anything is written";
  EXPECT_EQ(run_pwab("score /nonexistent-pwab-run", nullptr, &err), 1);
  EXPECT_TRUE(has(err, "manifest.json")) << err;
  std::string list;
  ASSERT_EQ(run_pwab("agents", &list), 0);
  EXPECT_TRUE(has(list, "heuristic")) << list;
}

}  // namespace

namespace {

//! The records of a run directory by (task, trial), without the environment's timing.
std::map<std::string, nlohmann::json> records_of(const std::string& dir) {
  std::map<std::string, nlohmann::json> out;
  std::istringstream in(pwab::test::read_text(std::filesystem::path(dir) / "results.jsonl"));
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("seconds_env");
    out[j["task"].get<std::string>() + "#" + std::to_string(j["trial"].get<int>())] = j;
  }
  return out;
}

// `pwab rescore` (issue 21): the stored trajectories replayed on the same data and services give the same records
// in both tracks (timing aside), with no agent; with other services (fewer results per search) the observations
// and scores follow them while the actions stay the agent's.
TEST_F(RunCli, RescoreReplaysTrajectoriesWithoutTheAgent) {
  for (const char* track : {"single", "multi"}) {
    const std::string run = out(std::string("rs-") + track), again = run + "-again";
    ASSERT_EQ(run_pwab("run --data " + data_ + " --track " + track + " --tasks 0:25 --embedder hashing --out " + run +
                       " --quiet"),
              0);
    std::string summary, errors;
    ASSERT_EQ(run_pwab("rescore " + run + " --data " + data_ + " --out " + again, &summary, &errors), 0) << errors;
    EXPECT_TRUE(has(errors, "re-graded 25 records")) << errors;
    EXPECT_TRUE(has(errors, "0 changed score, 0 saw different observations")) << errors;
    EXPECT_EQ(records_of(run), records_of(again)) << track;
    nlohmann::json manifest = nlohmann::json::parse(pwab::test::read_text(std::filesystem::path(again) / "manifest.json"));
    EXPECT_TRUE(manifest["config"].contains("rescored_from")) << manifest.dump();
  }
  // Three results per search instead of ten: the same actions, other observations, other scores.
  const std::string run = out("rs-single"), top3 = out("rs-single-top3");
  std::string summary, errors;
  ASSERT_EQ(run_pwab("rescore " + run + " --data " + data_ + " --out " + top3 + " --top-k 3", &summary, &errors), 0)
      << errors;
  EXPECT_FALSE(has(errors, "0 saw different observations")) << errors;
  auto before = records_of(run), after = records_of(top3);
  for (const auto& [key, r] : before) EXPECT_EQ(r["actions"][0]["arguments"], after[key]["actions"][0]["arguments"]);
  // The directory exists now: a second rescore into it is refused.
  EXPECT_EQ(run_pwab("rescore " + run + " --data " + data_ + " --out " + top3), 2);
}

}  // namespace
