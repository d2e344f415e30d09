// Run directories: manifest checks on resume, JSONL round trips, recovery from a kill mid-write, errored
// records being re-run, shards and their merge, and metrics recomputed from records alone.
#include "runner/results.h"

#include <gtest/gtest.h>
#include <filesystem>
#include <csignal>
#include <sys/resource.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/loader.h"
#include "embed/embedder.h"
#include "env/tools.h"
#include "metrics/metrics.h"
#include "support/test_support.h"

namespace pwab::runner {
namespace {

RunManifest manifest(std::string config = R"({"agent": "fc", "max_steps": 10, "model": "m"})", uint64_t seed = 7) {
  RunManifest m;
  m.config_json = std::move(config);
  m.seed = seed;
  m.dataset_fingerprint = "00112233aabbccdd";
  m.pwab_version = "0.1.0";
  return m;
}

TaskRecord fake(std::string key, int steps = 2, std::vector<metrics::Attempt> attempts = {{1, 0.5}}) {
  TaskRecord r;
  r.task_key = std::move(key);
  r.user_id = "U1";
  r.instruction = "find a thing";
  r.type = data::TaskType::kSearch;
  r.target_asin = "B000";
  r.attempts = std::move(attempts);
  r.steps = steps;
  r.ending = "task_function";
  return r;
}

std::vector<std::string> keys_of(const std::vector<TaskRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.task_key);
  return out;
}

//! Every line ends with '\n' and parses.
void expect_valid_jsonl(const std::filesystem::path& dir) {
  std::string text = test::read_text(dir / kResultsFile);
  ASSERT_TRUE(text.empty() || text.back() == '\n');
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    EXPECT_NO_THROW(TaskRecord::from_json(std::string_view(text).substr(pos, nl - pos)));
    pos = nl + 1;
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Results, ManifestIsCreatedAndReopened) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  {
    RunDirectory run = RunDirectory::open(dir, manifest(), false);
    EXPECT_TRUE(run.done().empty());
  }
  RunManifest stored = read_manifest(dir);
  EXPECT_EQ(stored.config_json, R"({"agent":"fc","max_steps":10,"model":"m"})");  // canonical
  EXPECT_EQ(stored.seed, 7u);
  EXPECT_EQ(stored.dataset_fingerprint, "00112233aabbccdd");
  EXPECT_EQ(stored.pwab_version, "0.1.0");
  EXPECT_FALSE(stored.created_utc.empty());
  EXPECT_EQ(stored.shard_index, 0);
  EXPECT_EQ(stored.shard_count, 1);
  // Key order and whitespace do not matter; the stored manifest stays in force.
  RunDirectory again = RunDirectory::open(dir, manifest(R"({ "model":"m","max_steps":10,"agent":"fc" })"), true);
  EXPECT_EQ(again.manifest().created_utc, stored.created_utc);
}

TEST(Results, ResumeRefusesADifferentRun) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  RunDirectory::open(dir, manifest(), false).append(fake("test/0"));
  std::string msg = error_of([&] { RunDirectory::open(dir, manifest(R"({"agent": "fc", "max_steps": 5, "model": "m"})"), true); });
  EXPECT_NE(msg.find("config"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_steps"), std::string::npos) << msg;
  msg = error_of([&] { RunDirectory::open(dir, manifest(R"({"agent": "fc", "max_steps": 10, "model": "m"})", 8), true); });
  EXPECT_NE(msg.find("seed"), std::string::npos) << msg;
  RunManifest other_data = manifest();
  other_data.dataset_fingerprint = "ffff";
  msg = error_of([&] { RunDirectory::open(dir, other_data, true); });
  EXPECT_NE(msg.find("dataset_fingerprint"), std::string::npos) << msg;
  RunManifest other_shard = manifest();
  other_shard.shard_count = 2;
  msg = error_of([&] { RunDirectory::open(dir, other_shard, true); });
  EXPECT_NE(msg.find("shard_count"), std::string::npos) << msg;
  EXPECT_THROW(RunDirectory::open(dir, other_shard, true), UsageError);
  // Without resume, existing results are never overwritten.
  EXPECT_THROW(RunDirectory::open(dir, manifest(), false), UsageError);
  EXPECT_EQ(read_records(dir).size(), 1u);
}

TEST(Results, RecordsRoundTripTrickyStrings) {
  test::TempDir tmp;
  TaskRecord r = fake("test/3", 4, {{0, 0.25}, {1, 0.1}, {1, 1.0 / 3}});
  r.instruction = "line one\nline \"two\"\ttab \\ backslash";
  r.type = data::TaskType::kReview;
  r.first_observation = "Hello — café 日本語 🎉";
  r.actions.push_back({{"respond", R"({"content": "a\nb \"q\""})"}, "user says:\n\"ok\"\r\n", {0, 0}, false, false});
  r.actions.push_back({{"add_product_review", "{not json"}, "{'review': 'naïve'}", {1, 0.87654321}, true, true});
  r.actions.push_back({{"odd\u0001name", ""}, std::string("nul\0inside", 10), {0, 0}, true, false});
  r.prompt_tokens = 1234;
  r.completion_tokens = 56;
  r.seconds_env = 0.125;
  r.seconds_agent = 3.0000001;
  std::string line = r.to_json_line();
  EXPECT_EQ(line.find('\n'), std::string::npos);

  RunDirectory run = RunDirectory::open(tmp / "run", manifest(), false);
  run.append(r);
  auto back = read_records(tmp / "run");
  ASSERT_EQ(back.size(), 1u);
  const TaskRecord& b = back[0];
  EXPECT_EQ(b.to_json_line(), line);
  EXPECT_EQ(b.instruction, r.instruction);
  EXPECT_EQ(b.type, data::TaskType::kReview);
  EXPECT_EQ(b.first_observation, r.first_observation);
  ASSERT_EQ(b.actions.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.actions[i].action.name, r.actions[i].action.name);
    EXPECT_EQ(b.actions[i].action.arguments_json, r.actions[i].action.arguments_json);
    EXPECT_EQ(b.actions[i].observation, r.actions[i].observation);
    EXPECT_EQ(b.actions[i].reward, r.actions[i].reward);
    EXPECT_EQ(b.actions[i].done, r.actions[i].done);
    EXPECT_EQ(b.actions[i].scored, r.actions[i].scored);
  }
  ASSERT_EQ(b.attempts.size(), 3u);
  EXPECT_EQ(b.attempts[2].result_acc, 1.0 / 3);  // exact: doubles round-trip
  EXPECT_EQ(b.seconds_agent, 3.0000001);
  EXPECT_EQ(b.prompt_tokens, 1234);
  EXPECT_EQ(b.completion_tokens, 56);
  EXPECT_EQ(b.steps, 4);
}

TEST(Results, UserObjectRoundTripsAndIsLeftOutWhenEmpty) {
  TaskRecord r = fake("test/5");
  EXPECT_EQ(r.to_json_line().find("\"user\""), std::string::npos);  // records without it are unchanged
  EXPECT_EQ(TaskRecord::from_json(r.to_json_line()).user_json, "");
  r.user_json = R"({"leak_guard": 2, "rewrites": 1, "guard_fallbacks": 0, "leaky_drafts": 1})";
  r.usage_json = R"({"user": {"calls": 3}})";
  const std::string line = r.to_json_line();
  EXPECT_NE(line.find(R"("user":{"guard_fallbacks":0,"leak_guard":2,"leaky_drafts":1,"rewrites":1})"),
            std::string::npos)
      << line;
  TaskRecord back = TaskRecord::from_json(line);
  EXPECT_EQ(back.user_json, R"({"guard_fallbacks":0,"leak_guard":2,"leaky_drafts":1,"rewrites":1})");
  EXPECT_EQ(back.usage_json, R"({"user":{"calls":3}})");
  EXPECT_EQ(back.to_json_line(), line);
  const std::string user_object = R"("user":{"guard_fallbacks":0,"leak_guard":2,"leaky_drafts":1,"rewrites":1})";
  std::string bad = line;
  bad.replace(bad.find(user_object), user_object.size(), R"("user":[1])");
  EXPECT_THROW(TaskRecord::from_json(bad), DataError);
}

TEST(Results, BadRecordsAreDataErrorsNamingTheProblem) {
  EXPECT_THROW(TaskRecord::from_json("{"), DataError);
  std::string msg = error_of([] { TaskRecord::from_json(R"({"task": "test/1"})"); });
  EXPECT_NE(msg.find("user_id"), std::string::npos) << msg;
  test::TempDir tmp;
  auto dir = tmp / "run";
  RunDirectory::open(dir, manifest(), false).append(fake("test/0"));
  test::write_text(dir / kResultsFile, test::read_text(dir / kResultsFile) + "garbage\n" + fake("test/1").to_json_line() + "\n");
  msg = error_of([&] { read_records(dir); });
  EXPECT_NE(msg.find(":2:"), std::string::npos) << msg;
  EXPECT_THROW(RunDirectory::open(dir, manifest(), true), DataError);
}

TEST(Results, KillMidWriteIsRecoveredOnResume) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  {
    RunDirectory run = RunDirectory::open(dir, manifest(), false);
    run.append(fake("test/0"));
    run.append(fake("test/1"));
  }
  std::string line = fake("test/2").to_json_line();
  test::write_text(dir / kResultsFile, test::read_text(dir / kResultsFile) + line.substr(0, line.size() / 2));
  std::size_t truncated = 0;
  EXPECT_EQ(read_records(dir, &truncated).size(), 2u);
  EXPECT_EQ(truncated, 1u);

  RunDirectory run = RunDirectory::open(dir, manifest(), true);
  EXPECT_EQ(run.n_truncated(), 1u);
  EXPECT_EQ(run.done(), (std::set<RecordId>{{"test/0", 0}, {"test/1", 0}}));
  run.append(fake("test/2"));
  expect_valid_jsonl(dir);
  auto records = read_records(dir, &truncated);
  EXPECT_EQ(truncated, 0u);
  EXPECT_EQ(keys_of(records), (std::vector<std::string>{"test/0", "test/1", "test/2"}));
}

// A full disk takes part of a line and refuses the rest (simulated with a file-size limit, which fails a write the
// same way without mounting anything): the append fails with a clear error and leaves no torn line, so the next
// append, once there is room, starts on a clean line (issue 19).
TEST(Results, AFullDiskLeavesNoTornLine) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  RunDirectory run = RunDirectory::open(dir, manifest(), false);
  run.append(fake("test/0"));
  const auto size = std::filesystem::file_size(dir / kResultsFile);
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead of killing the process
  struct rlimit small = old;
  small.rlim_cur = size + 40;  // room for 40 bytes of the next line only
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    run.append(fake("test/1"));
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find("results.jsonl"), std::string::npos) << message;
  EXPECT_NE(message.find("the record was not written"), std::string::npos) << message;
  EXPECT_EQ(std::filesystem::file_size(dir / kResultsFile), size);  // the 40 bytes were cut off again
  run.append(fake("test/2"));
  expect_valid_jsonl(dir);
  std::size_t truncated = 0;
  EXPECT_EQ(keys_of(read_records(dir, &truncated)), (std::vector<std::string>{"test/0", "test/2"}));
  EXPECT_EQ(truncated, 0u);
}

TEST(Results, ErroredRecordsAreRerunAndSuperseded) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  {
    RunDirectory run = RunDirectory::open(dir, manifest(), false);
    TaskRecord bad = fake("test/4");
    bad.error = "LLM endpoint timed out";
    run.append(fake("test/3"));
    run.append(bad);
    EXPECT_EQ(run.done(), (std::set<RecordId>{{"test/3", 0}}));
  }
  auto records = read_records(dir);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[1].error.empty());
  EXPECT_EQ(scored_outcomes(records).size(), 1u);

  RunDirectory run = RunDirectory::open(dir, manifest(), true);
  EXPECT_EQ(run.done(), (std::set<RecordId>{{"test/3", 0}}));  // the errored task runs again
  run.append(fake("test/4", 5));
  EXPECT_EQ(run.done(), (std::set<RecordId>{{"test/3", 0}, {"test/4", 0}}));
  records = read_records(dir);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].task_key, "test/4");
  EXPECT_TRUE(records[1].error.empty());
  EXPECT_EQ(records[1].steps, 5);
}

//! A pretend run over `n` tasks that skips done ones and is "killed" (stops, leaving a half line) after
//! `kill_after` appends; returns how many tasks it ran.
int pretend_run(const std::filesystem::path& dir, int n, int kill_after, bool resume, int shard = 0, int shards = 1) {
  RunManifest m = manifest();
  m.shard_index = shard;
  m.shard_count = shards;
  RunDirectory run = RunDirectory::open(dir, m, resume);
  auto done = run.done();
  int ran = 0;
  for (int i = 0; i < n; ++i) {
    if (!in_shard(static_cast<std::size_t>(i), shard, shards)) continue;
    std::string key = "test/" + std::to_string(i);
    if (done.count({key, 0})) continue;
    if (ran == kill_after) {
      std::string line = fake(key, i + 1).to_json_line();
      test::write_text(dir / kResultsFile, test::read_text(dir / kResultsFile) + line.substr(0, 10));
      return ran;
    }
    run.append(fake(key, i + 1, {{1, i / 10.0}}));
    ++ran;
  }
  return ran;
}

TEST(Results, NothingLostOrCountedTwiceAcrossResumes) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  EXPECT_EQ(pretend_run(dir, 10, 4, false), 4);
  EXPECT_EQ(pretend_run(dir, 10, 3, true), 3);
  EXPECT_EQ(pretend_run(dir, 10, 100, true), 3);
  EXPECT_EQ(pretend_run(dir, 10, 100, true), 0);
  expect_valid_jsonl(dir);
  std::string text = test::read_text(dir / kResultsFile);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10);  // every task exactly once in the file
  auto records = read_records(dir);
  ASSERT_EQ(records.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(records[static_cast<std::size_t>(i)].task_key, "test/" + std::to_string(i));
    EXPECT_EQ(records[static_cast<std::size_t>(i)].steps, i + 1);
  }
}

TEST(Results, InShardPartitionsEveryIndexOnce) {
  for (int shards = 1; shards <= 5; ++shards)
    for (std::size_t i = 0; i < 37; ++i) {
      int owners = 0;
      for (int k = 0; k < shards; ++k) owners += in_shard(i, k, shards) ? 1 : 0;
      EXPECT_EQ(owners, 1) << i << " of " << shards;
    }
  EXPECT_THROW(in_shard(0, 0, 0), UsageError);
  EXPECT_THROW(in_shard(0, 3, 3), UsageError);
  EXPECT_THROW(in_shard(0, -1, 3), UsageError);
}

TEST(Results, MergedShardsEqualTheUnshardedRun) {
  test::TempDir tmp;
  pretend_run(tmp / "whole", 10, 100, false);
  std::vector<std::filesystem::path> shard_dirs;
  for (int k = 0; k < 3; ++k) {
    auto d = tmp / ("shard" + std::to_string(k));
    pretend_run(d, 10, 1, false, k, 3);  // killed after one task...
    pretend_run(d, 10, 100, true, k, 3);  // ...and resumed
    shard_dirs.push_back(d);
  }
  std::reverse(shard_dirs.begin(), shard_dirs.end());  // order of the arguments does not matter
  merge_runs(shard_dirs, tmp / "merged");
  RunManifest m = read_manifest(tmp / "merged");
  EXPECT_EQ(m.shard_index, 0);
  EXPECT_EQ(m.shard_count, 1);
  EXPECT_EQ(m.config_json, read_manifest(tmp / "whole").config_json);
  // Sorted numerically by index, so the merged file equals the unsharded one line for line.
  EXPECT_EQ(test::read_text(tmp / "merged" / kResultsFile), test::read_text(tmp / "whole" / kResultsFile));
  // The merged directory is a normal run: it resumes with shard 0 of 1 and has nothing left to do.
  EXPECT_EQ(pretend_run(tmp / "merged", 10, 100, true), 0);
}

TEST(Results, MergeRejectsDuplicatesAndMismatches) {
  test::TempDir tmp;
  std::vector<std::filesystem::path> dirs;
  for (int k = 0; k < 2; ++k) {
    dirs.push_back(tmp / ("s" + std::to_string(k)));
    pretend_run(dirs.back(), 6, 100, false, k, 2);
  }
  // A task present in two shards.
  RunManifest m1 = read_manifest(dirs[1]);
  RunDirectory(RunDirectory::open(dirs[1], m1, true)).append(fake("test/0"));
  std::string msg = error_of([&] { merge_runs(dirs, tmp / "out"); });
  EXPECT_NE(msg.find("test/0"), std::string::npos) << msg;
  EXPECT_THROW(merge_runs(dirs, tmp / "out2"), DataError);
  // A missing shard, and the same shard twice.
  EXPECT_THROW(merge_runs({dirs[0]}, tmp / "out3"), UsageError);
  EXPECT_THROW(merge_runs({dirs[0], dirs[0]}, tmp / "out4"), UsageError);
  // A shard of another run.
  auto other = tmp / "other";
  RunManifest m = manifest(R"({"agent": "react"})");
  m.shard_index = 1;
  m.shard_count = 2;
  RunDirectory::open(other, m, false);
  msg = error_of([&] { merge_runs({dirs[0], other}, tmp / "out5"); });
  EXPECT_NE(msg.find("config"), std::string::npos) << msg;
}

// --- trials ----------------------------------------------------------------------------------------------

TaskRecord fake_trial(std::string key, int trial, double r = 0.5) {
  TaskRecord rec = fake(std::move(key), 2, {{1, r}});
  rec.trial = trial;
  return rec;
}

TEST(Results, RecordsCarryTheirTrialAndOldRecordsReadAsTrialZero) {
  TaskRecord r = fake_trial("test/3", 2);
  std::string line = r.to_json_line();
  EXPECT_NE(line.find(R"("trial":2)"), std::string::npos) << line;
  EXPECT_EQ(TaskRecord::from_json(line).trial, 2);
  EXPECT_EQ(TaskRecord::from_json(line).id(), (RecordId{"test/3", 2}));
  EXPECT_EQ(TaskRecord::from_json(line).outcome().trial, 2);
  // Every record says its trial, trial 0 included.
  EXPECT_NE(fake("test/3").to_json_line().find(R"("trial":0)"), std::string::npos);
  // A record written before trials existed has no "trial": it is trial 0.
  std::string old = fake("test/3").to_json_line();
  old.erase(old.find(R"("trial":0,)"), std::string(R"("trial":0,)").size());
  ASSERT_EQ(old.find("trial"), std::string::npos) << old;
  EXPECT_EQ(TaskRecord::from_json(old).trial, 0);
  // A bad trial names the field.
  std::string bad = line;
  bad.replace(bad.find(R"("trial":2)"), 9, R"("trial":"2")");
  EXPECT_NE(error_of([&] { TaskRecord::from_json(bad); }).find("'trial'"), std::string::npos);
  bad = line;
  bad.replace(bad.find(R"("trial":2)"), 9, R"("trial":-1)");
  EXPECT_THROW(TaskRecord::from_json(bad), DataError);
  // The text form: the task key alone for trial 0, so single-trial runs book and print as before.
  EXPECT_EQ((RecordId{"test/3", 0}).to_string(), "test/3");
  EXPECT_EQ((RecordId{"test/3", 2}).to_string(), "test/3 trial 2");
}

TEST(Results, LatestRecordAndDonePerTaskAndTrial) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  {
    RunDirectory run = RunDirectory::open(dir, manifest(), false);
    run.append(fake_trial("test/0", 0, 0.1));
    run.append(fake_trial("test/0", 1, 0.2));
    TaskRecord failed = fake_trial("test/0", 2);
    failed.error = "timeout";
    run.append(failed);
    run.append(fake_trial("test/1", 0, 0.3));
    EXPECT_EQ(run.done(), (std::set<RecordId>{{"test/0", 0}, {"test/0", 1}, {"test/1", 0}}));
  }
  // An old-style line (no "trial") of test/1 written later supersedes trial 0 of test/1 only.
  std::string old = fake("test/1", 7).to_json_line();
  old.erase(old.find(R"("trial":0,)"), std::string(R"("trial":0,)").size());
  test::write_text(dir / kResultsFile, test::read_text(dir / kResultsFile) + old + "\n");
  auto records = read_records(dir);
  ASSERT_EQ(records.size(), 4u);
  sort_by_task(records);
  std::vector<RecordId> ids;
  for (const auto& r : records) ids.push_back(r.id());
  EXPECT_EQ(ids, (std::vector<RecordId>{{"test/0", 0}, {"test/0", 1}, {"test/0", 2}, {"test/1", 0}}));
  EXPECT_EQ(records[3].steps, 7);
  EXPECT_EQ(scored_outcomes(records).size(), 3u);  // the errored trial is not scored

  RunDirectory run = RunDirectory::open(dir, manifest(), true);
  EXPECT_EQ(run.done().count({"test/0", 2}), 0u);  // the errored trial runs again
  run.append(fake_trial("test/0", 2, 0.9));
  EXPECT_EQ(run.done().size(), 4u);
}

std::string with_trials(int trials) {
  return R"({"agent": "fc", "max_steps": 10, "model": "m", "trials": )" + std::to_string(trials) + "}";
}

TEST(Results, ResumeMayRaiseTrialsButNotLowerThem) {
  test::TempDir tmp;
  auto dir = tmp / "run";
  RunDirectory::open(dir, manifest(with_trials(2)), false).append(fake_trial("test/0", 1));
  EXPECT_EQ(manifest_trials(read_manifest(dir)), 2);
  // Fewer trials: refused, naming the stored count.
  std::string msg = error_of([&] { RunDirectory::open(dir, manifest(with_trials(1)), true); });
  EXPECT_NE(msg.find("2 trials"), std::string::npos) << msg;
  // More: the stored manifest says so from now on; the other config keys must still match.
  EXPECT_THROW(RunDirectory::open(dir, manifest(R"({"agent": "fc", "max_steps": 5, "model": "m", "trials": 4})"), true),
               UsageError);
  {
    RunDirectory run = RunDirectory::open(dir, manifest(with_trials(4)), true);
    EXPECT_EQ(manifest_trials(run.manifest()), 4);
    EXPECT_EQ(run.done(), (std::set<RecordId>{{"test/0", 1}}));
  }
  EXPECT_EQ(manifest_trials(read_manifest(dir)), 4);
  EXPECT_NO_THROW(RunDirectory::open(dir, manifest(with_trials(4)), true));

  // A run directory from before trials (no "trials" in its config) resumes as one trial, and may be raised.
  auto old_dir = tmp / "old";
  RunDirectory::open(old_dir, manifest(), false).append(fake("test/0"));
  EXPECT_EQ(manifest_trials(read_manifest(old_dir)), 1);
  EXPECT_NO_THROW(RunDirectory::open(old_dir, manifest(with_trials(1)), true));
  EXPECT_NO_THROW(RunDirectory::open(old_dir, manifest(with_trials(3)), true));
  EXPECT_EQ(manifest_trials(read_manifest(old_dir)), 3);
  RunManifest bad = manifest(R"({"trials": 0})");
  EXPECT_THROW(manifest_trials(bad), DataError);
}

TEST(Results, MergeKeysShardsByTaskAndTrial) {
  test::TempDir tmp;
  std::vector<std::filesystem::path> dirs;
  for (int k = 0; k < 2; ++k) {
    dirs.push_back(tmp / ("s" + std::to_string(k)));
    RunManifest m = manifest(with_trials(2));
    m.shard_index = k;
    m.shard_count = 2;
    RunDirectory run = RunDirectory::open(dirs.back(), m, false);
    for (int trial : {1, 0})
      for (int i = k; i < 6; i += 2) run.append(fake_trial("test/" + std::to_string(i), trial));
  }
  merge_runs(dirs, tmp / "out");
  auto merged = read_records(tmp / "out");
  ASSERT_EQ(merged.size(), 12u);
  for (std::size_t i = 0; i < merged.size(); ++i)  // task order, then trial
    EXPECT_EQ(merged[i].id(), (RecordId{"test/" + std::to_string(i / 2), static_cast<int>(i % 2)}));
  EXPECT_EQ(manifest_trials(read_manifest(tmp / "out")), 2);

  // The same (task, trial) in two shards is an error naming it; the same task with another trial is not.
  RunDirectory(RunDirectory::open(dirs[1], read_manifest(dirs[1]), true)).append(fake_trial("test/0", 1));
  std::string msg = error_of([&] { merge_runs(dirs, tmp / "out2"); });
  EXPECT_NE(msg.find("test/0 trial 1"), std::string::npos) << msg;
}

TEST(Results, DatasetFingerprintFollowsNamesAndBytes) {
  test::TempDir tmp;
  test::copy_dir(test::fixture("data/original"), tmp / "a");
  std::string fp = dataset_fingerprint(tmp / "a");
  EXPECT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp, dataset_fingerprint(test::fixture("data/original")));
  // pwab's caches inside the data directory (hidden folders) do not change the dataset's identity.
  std::filesystem::create_directories(tmp / "a" / ".pwab-index" / "x");
  test::write_text(tmp / "a" / ".pwab-index" / "x" / "meta.json", "{}");
  test::write_text(tmp / "a" / ".hidden", "x");
  EXPECT_EQ(dataset_fingerprint(tmp / "a"), fp);
  test::write_text(tmp / "a" / "user_profiles.json", test::read_text(tmp / "a" / "user_profiles.json") + " ");
  EXPECT_NE(dataset_fingerprint(tmp / "a"), fp);
  EXPECT_THROW(dataset_fingerprint(tmp / "missing"), Error);
}

// --- records from real episodes ------------------------------------------------------------------------

class ReplayAgent final : public Agent {
 public:
  explicit ReplayAgent(std::vector<AgentStep> steps) : steps_(std::move(steps)) {}
  void begin(const data::Task&, const std::string&, data::Track) override {}
  AgentStep next(const std::string&) override { return steps_[std::min(i_++, steps_.size() - 1)]; }

 private:
  std::vector<AgentStep> steps_;
  std::size_t i_ = 0;
};

TEST(Results, SummaryFromRecordsEqualsSummaryFromEpisodes) {
  data::Dataset ds = data::load_dataset(test::fixture("data/original"));
  embed::HashingEmbedder embedder;
  env::Environment environment(ds, nullptr, nullptr, embedder);
  const std::vector<std::vector<AgentStep>> scripts = {
      {{{std::string(env::kAddReview), R"({"review": "Looks great in my kitchen."})"}, 120, 9}},
      {{{std::string(env::kRespond), R"({"content": "Which one?\nSay \"more\"."})"}, 10, 3},
       {{std::string(env::kAddReview), R"({"review": "Terrible battery, returned it."})"}, 50, 4},
       {{std::string(env::kStop), "{}"}, 1, 1}},
      {{{std::string(env::kStop), "{}"}, 5, 1}},
  };
  test::TempDir tmp;
  RunManifest m = manifest();
  m.dataset_fingerprint = dataset_fingerprint(test::fixture("data/original"));
  RunDirectory run = RunDirectory::open(tmp / "run", m, false);
  std::vector<metrics::TaskOutcome> direct;
  std::size_t n = 0;
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const data::Task& task : ds.tasks(split)) {
      ReplayAgent agent(scripts[n++ % scripts.size()]);
      EpisodeResult r = run_episode(environment, task, agent, nullptr, {data::Track::kMultiTurn, 4});
      direct.push_back(r.outcome(task_key(task)));
      TaskRecord rec = make_record(ds, task, r);
      EXPECT_EQ(rec.user_id, ds.user(task.user).id);
      EXPECT_EQ(rec.target_asin, ds.product(task.target_product).parent_asin);
      run.append(rec);
    }
  ASSERT_GE(n, 3u);
  auto records = read_records(tmp / "run");
  ASSERT_EQ(records.size(), n);
  metrics::BootstrapOptions bo{200, 0.9, 3};
  EXPECT_EQ(metrics::format_json(metrics::summarize(scored_outcomes(records), bo)),
            metrics::format_json(metrics::summarize(direct, bo)));
  double some_r = 0;
  for (const auto& o : direct) some_r += metrics::score_task(o).r;
  EXPECT_NE(some_r, 0.0);  // the comparison is not between two all-zero runs
}

}  // namespace
}  // namespace pwab::runner
