// The worker pool: every task recorded once at any concurrency, resume after a cancelled run, errored tasks
// re-run, shards that merge to the unsharded run, task selection and progress text.
#include "runner/run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "data/synth.h"
#include "embed/embedder.h"
#include "env/tools.h"
#include "runner/read_run.h"
#include "report/summaries.h"
#include "sim/scripted_user.h"
#include "support/test_support.h"

namespace pwab::runner {
namespace {

//! Reviews with the instruction as text, or searches with it as query; then (multi-turn) asks once and stops.
class EchoAgent final : public Agent {
 public:
  void begin(const data::Task& task, const std::string&, data::Track track) override {
    task_ = &task;
    track_ = track;
  }
  AgentStep next(const std::string&) override {
    ++calls_;
    if (calls_ == 2 && track_ == data::Track::kMultiTurn) return {{std::string(env::kRespond), R"({"content": "Better?"})"}, 3, 1};
    if (calls_ >= 3) return {{std::string(env::kStop), "{}"}, 1, 1};
    std::string text = task_->instruction.substr(0, 60);
    for (char& c : text)
      if (c == '"' || c == '\\') c = ' ';
    if (task_->type == data::TaskType::kReview)
      return {{std::string(env::kAddReview), R"({"review": ")" + text + "\"}"}, 10, 5};
    return {{std::string(env::kSearch), R"({"query": ")" + text + "\"}"}, 10, 5};
  }

 private:
  const data::Task* task_ = nullptr;
  data::Track track_ = data::Track::kSingleTurn;
  int calls_ = 0;
};

//! Throws pwab::Error for the tasks listed (an infrastructure failure), else behaves as EchoAgent.
class FlakyAgent final : public Agent {
 public:
  explicit FlakyAgent(bool fail) : fail_(fail) {}
  void begin(const data::Task& t, const std::string& o, data::Track tr) override { inner_.begin(t, o, tr); }
  AgentStep next(const std::string& obs) override {
    if (fail_) throw Error("model service: 503 after 6 attempts");
    return inner_.next(obs);
  }

 private:
  bool fail_;
  EchoAgent inner_;
};

struct Fixture {
  data::Dataset ds = data::synthesize({data::SynthScale::kMini, 3});
  embed::HashingEmbedder embedder;
  env::Environment environment{ds, nullptr, nullptr, embedder};

  RunManifest manifest(int shard = 0, int shards = 1) const {
    RunManifest m;
    m.config_json = R"({"agent":"echo"})";
    m.seed = 5;
    m.dataset_fingerprint = "feedfacefeedface";
    m.pwab_version = "test";
    m.shard_index = shard;
    m.shard_count = shards;
    return m;
  }
};

AgentMaker echo_maker() {
  return [](const data::Task&, int) { return std::make_unique<EchoAgent>(); };
}

std::vector<std::string> sorted_keys(std::vector<TaskRecord> records) {
  sort_by_task(records);
  std::vector<std::string> keys;
  for (const auto& r : records) keys.push_back(r.task_key);
  return keys;
}

TEST(Run, TaskRangeAndShardParsing) {
  EXPECT_EQ(TaskRange::parse("0:100").begin, 0u);
  EXPECT_EQ(*TaskRange::parse("0:100").end, 100u);
  EXPECT_FALSE(TaskRange::parse("5:").end.has_value());
  EXPECT_EQ(TaskRange::parse(":7").to_string(), "0:7");
  for (const char* bad : {"5", "a:b", "9:3", "-1:4", ""}) EXPECT_THROW(TaskRange::parse(bad), UsageError) << bad;
  EXPECT_EQ(parse_shard("3/8"), std::make_pair(3, 8));
  for (const char* bad : {"8/8", "1", "x/2", "0/0", "1/-2"}) EXPECT_THROW(parse_shard(bad), UsageError) << bad;
}

TEST(Run, SelectTasksCutsRangeThenShard) {
  Fixture f;
  const auto& test_tasks = f.ds.tasks(data::Split::kTest);
  ASSERT_GE(test_tasks.size(), 20u);
  auto all = select_tasks(f.ds, "test", TaskRange{});
  EXPECT_EQ(all.size(), test_tasks.size());
  auto some = select_tasks(f.ds, "test", TaskRange::parse("4:14"));
  ASSERT_EQ(some.size(), 10u);
  EXPECT_EQ(some.front()->index, 4u);
  std::set<uint32_t> seen;
  for (int k = 0; k < 3; ++k)
    for (const auto* t : select_tasks(f.ds, "test", TaskRange::parse("4:14"), k, 3)) {
      EXPECT_EQ(static_cast<int>(t->index % 3), k);
      EXPECT_TRUE(seen.insert(t->index).second);
    }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(select_tasks(f.ds, "train", TaskRange::parse("0:")).size(), f.ds.tasks(data::Split::kTrain).size());
  EXPECT_THROW(select_tasks(f.ds, "history", TaskRange{}), UsageError);
  EXPECT_THROW(select_tasks(f.ds, "dev", TaskRange{}), UsageError);
}

TEST(Run, EveryTaskRecordedOnceAtAnyConcurrency) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange{});
  std::string reference;
  for (int concurrency : {1, 4}) {
    test::TempDir tmp;
    RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
    std::size_t calls = 0;
    RunOptions options;
    options.episode = {data::Track::kMultiTurn, 10};
    options.concurrency = concurrency;
    options.on_progress = [&](const RunProgress&) { ++calls; };
    RunReport report = run_tasks(f.environment, tasks, dir, echo_maker(), nullptr, options);
    EXPECT_FALSE(report.cancelled);
    EXPECT_EQ(report.progress.finished, tasks.size());
    EXPECT_EQ(report.progress.errored, 0u);
    EXPECT_EQ(report.progress.prompt_tokens, static_cast<int64_t>(tasks.size()) * (10 + 3 + 1));
    EXPECT_EQ(calls, tasks.size() + 1);
    auto records = read_records(tmp / "run");
    ASSERT_EQ(records.size(), tasks.size());
    sort_by_task(records);
    std::string all;
    for (const auto& r : records) {
      EXPECT_EQ(r.ending, "stop");
      EXPECT_EQ(r.steps, 3);
      all += r.task_key + ":" + std::to_string(r.attempts.size()) + ";";
    }
    if (reference.empty()) reference = all;
    EXPECT_EQ(all, reference) << "concurrency " << concurrency;
  }
}

TEST(Run, CancelledRunResumesWithNothingLostOrTwice) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange{});
  test::TempDir tmp;
  std::atomic<bool> cancel{false};
  {
    RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
    RunOptions options;
    options.concurrency = 2;
    options.cancel = &cancel;
    options.on_progress = [&](const RunProgress& p) {
      if (p.finished >= 7) cancel = true;
    };
    RunReport report = run_tasks(f.environment, tasks, dir, echo_maker(), nullptr, options);
    EXPECT_TRUE(report.cancelled);
    EXPECT_GE(report.progress.finished, 7u);
    EXPECT_LT(report.progress.finished, tasks.size());
  }
  std::size_t first = read_records(tmp / "run").size();
  RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), true);
  RunReport report = run_tasks(f.environment, tasks, dir, echo_maker(), nullptr, RunOptions{});
  EXPECT_EQ(report.progress.skipped, first);
  EXPECT_EQ(report.progress.finished, tasks.size() - first);
  auto records = read_records(tmp / "run");
  EXPECT_EQ(records.size(), tasks.size());
  auto keys = sorted_keys(records);
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), tasks.size());
  // The file has exactly one line per task: nothing was written twice.
  std::string text = test::read_text(tmp / "run" / kResultsFile);
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), tasks.size());
}

TEST(Run, InfrastructureErrorsAreRecordedAndRerunOnResume) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange::parse("0:12"));
  test::TempDir tmp;
  {
    RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
    AgentMaker flaky = [](const data::Task& t, int) { return std::make_unique<FlakyAgent>(t.index % 4 == 1); };
    RunReport report = run_tasks(f.environment, tasks, dir, flaky, nullptr, RunOptions{});
    EXPECT_EQ(report.progress.errored, 3u);
  }
  auto records = read_records(tmp / "run");
  std::size_t errored = 0;
  for (const auto& r : records)
    if (!r.error.empty()) {
      ++errored;
      EXPECT_NE(r.error.find("503"), std::string::npos);
    }
  EXPECT_EQ(errored, 3u);
  EXPECT_EQ(scored_outcomes(records).size(), 9u);

  RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), true);
  RunReport report = run_tasks(f.environment, tasks, dir, echo_maker(), nullptr, RunOptions{});
  EXPECT_EQ(report.progress.finished, 3u);
  records = read_records(tmp / "run");
  ASSERT_EQ(records.size(), 12u);
  for (const auto& r : records) EXPECT_TRUE(r.error.empty()) << r.task_key;
}

TEST(Run, UsageErrorsStopTheRun) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange::parse("0:5"));
  test::TempDir tmp;
  RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
  RunOptions options;
  options.episode = {data::Track::kSingleTurn, 10};
  // A user simulator in the single-turn track is a usage error of the whole run, not a task failure.
  UserMaker user = [&](const data::Task& t, int) { return std::make_unique<sim::ScriptedUser>(f.ds, t, 1); };
  EXPECT_THROW(run_tasks(f.environment, tasks, dir, echo_maker(), user, options), UsageError);
}

//! A user that says one line and reports how many replies it gave (env::UserChannel::record_json).
class CountingUser final : public env::UserChannel {
 public:
  std::string reply(const std::string&) override {
    ++replies_;
    return "Something cheaper, please.";
  }
  std::string record_json() const override { return R"({"replies": )" + std::to_string(replies_) + "}"; }

 private:
  int replies_ = 0;
};

TEST(Run, WhatTheUserReportsIsRecordedAsItsUserObject) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange::parse("0:4"));
  RunOptions options;
  options.episode = {data::Track::kMultiTurn, 10};
  test::TempDir tmp;
  {
    RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
    UserMaker counting = [](const data::Task&, int) { return std::make_unique<CountingUser>(); };
    run_tasks(f.environment, tasks, dir, echo_maker(), counting, options);
  }
  // EchoAgent responds once per multi-turn episode: the user was asked once, after which it was asked for its report.
  const std::string text = test::read_text(tmp / "run" / kResultsFile);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  std::size_t n = 0;
  for (std::size_t pos = 0; (pos = text.find(R"("user":{"replies":1})", pos)) != std::string::npos; ++pos) ++n;
  EXPECT_EQ(n, 4u) << text;
  for (const auto& r : read_records(tmp / "run")) EXPECT_EQ(r.user_json, R"({"replies":1})");
  // A user that reports nothing (the scripted one) leaves no "user" object.
  test::TempDir tmp2;
  RunDirectory dir = RunDirectory::open(tmp2 / "run", f.manifest(), false);
  UserMaker scripted = [&](const data::Task& t, int) { return std::make_unique<sim::ScriptedUser>(f.ds, t, 1); };
  run_tasks(f.environment, tasks, dir, echo_maker(), scripted, options);
  EXPECT_EQ(test::read_text(tmp2 / "run" / kResultsFile).find("\"user\""), std::string::npos);
  for (const auto& r : read_records(tmp2 / "run")) EXPECT_EQ(r.user_json, "");
}

TEST(Run, ShardsMergeToTheUnshardedRun) {
  Fixture f;
  test::TempDir tmp;
  RunOptions options;
  options.episode = {data::Track::kMultiTurn, 10};
  UserMaker user = [&](const data::Task& t, int) { return std::make_unique<sim::ScriptedUser>(f.ds, t, 5); };
  {
    RunDirectory whole = RunDirectory::open(tmp / "whole", f.manifest(), false);
    run_tasks(f.environment, select_tasks(f.ds, "test", TaskRange{}), whole, echo_maker(), user, options);
  }
  std::vector<std::filesystem::path> shards;
  for (int k = 0; k < 3; ++k) {
    shards.push_back(tmp / ("shard" + std::to_string(k)));
    RunDirectory dir = RunDirectory::open(shards.back(), f.manifest(k, 3), false);
    options.concurrency = 1 + k;
    run_tasks(f.environment, select_tasks(f.ds, "test", TaskRange{}, k, 3), dir, echo_maker(), user, options);
  }
  merge_runs(shards, tmp / "merged");
  auto whole = read_records(tmp / "whole");
  auto merged = read_records(tmp / "merged");
  sort_by_task(whole);
  ASSERT_EQ(whole.size(), merged.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    // Timings differ between runs; everything the agent and the user did must not.
    whole[i].seconds_env = merged[i].seconds_env = 0;
    whole[i].seconds_agent = merged[i].seconds_agent = 0;
    EXPECT_EQ(whole[i].to_json_line(), merged[i].to_json_line());
  }
  metrics::BootstrapOptions bo{300, 0.95, 2};
  EXPECT_EQ(metrics::format_json(metrics::summarize(scored_outcomes(whole), bo)),
            metrics::format_json(metrics::summarize(scored_outcomes(merged), bo)));
}

// --- trials ----------------------------------------------------------------------------------------------

TEST(Run, TrialSeedsKeepTrialZeroAndDifferPerTrial) {
  EXPECT_EQ(trial_seed(42, 0), 42u);  // a single-trial run draws what it drew before trials existed
  std::set<uint64_t> seeds;
  for (int t = 0; t < 50; ++t) seeds.insert(trial_seed(42, t));
  EXPECT_EQ(seeds.size(), 50u);
  EXPECT_EQ(trial_seed(42, 3), trial_seed(42, 3));  // reproducible
  EXPECT_NE(trial_seed(42, 1), trial_seed(43, 1));
}

TEST(Run, PendingUnitsGoTrialByTrial) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange::parse("0:3"));
  auto units = pending_units(tasks, 2, {{task_key(*tasks[1]), 0}});
  ASSERT_EQ(units.size(), 5u);
  std::vector<std::pair<uint32_t, int>> order;
  for (const Unit& u : units) order.emplace_back(u.task->index, u.trial);
  EXPECT_EQ(order, (std::vector<std::pair<uint32_t, int>>{{0, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}}));
  EXPECT_THROW(pending_units(tasks, 0, {}), UsageError);
}

//! Records which (task, trial) units the makers were asked for.
struct UnitLog {
  std::mutex mu;
  std::multiset<std::pair<std::string, int>> agents, users;
};

TEST(Run, KilledTrialRunResumesExactlyTheMissingUnits) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange::parse("0:8"));
  constexpr int kTrials = 3;
  test::TempDir tmp;
  UnitLog log;
  AgentMaker agent = [&](const data::Task& t, int trial) {
    std::lock_guard lock(log.mu);
    log.agents.emplace(task_key(t), trial);
    return std::make_unique<EchoAgent>();
  };
  UserMaker user = [&](const data::Task& t, int trial) {
    std::lock_guard lock(log.mu);
    log.users.emplace(task_key(t), trial);
    return std::make_unique<sim::ScriptedUser>(f.ds, t, trial_seed(5, trial));
  };
  std::atomic<bool> cancel{false};
  RunOptions options;
  options.episode = {data::Track::kMultiTurn, 10};
  options.trials = kTrials;
  options.concurrency = 2;
  options.cancel = &cancel;
  options.on_progress = [&](const RunProgress& p) {
    if (p.finished >= 10) cancel = true;
  };
  std::size_t first = 0;
  {
    RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
    RunReport report = run_tasks(f.environment, tasks, dir, agent, user, options);
    EXPECT_TRUE(report.cancelled);
    EXPECT_EQ(report.progress.total, tasks.size() * kTrials);
    first = report.progress.finished;
    EXPECT_GE(first, 10u);
    EXPECT_LT(first, tasks.size() * kTrials);
  }
  // A kill mid-write leaves half a line; the resumed run drops it and runs every missing unit once.
  std::string half = TaskRecord{}.to_json_line();
  test::write_text(tmp / "run" / kResultsFile, test::read_text(tmp / "run" / kResultsFile) + half.substr(0, 20));
  log.agents.clear();
  log.users.clear();
  cancel = false;
  options.on_progress = nullptr;
  RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), true);
  EXPECT_EQ(dir.n_truncated(), 1u);
  auto done_before = dir.done();
  RunReport report = run_tasks(f.environment, tasks, dir, agent, user, options);
  EXPECT_FALSE(report.cancelled);
  EXPECT_EQ(report.progress.skipped, first);
  EXPECT_EQ(report.progress.finished, tasks.size() * kTrials - first);
  // Exactly the missing units were run: none of the done ones, none twice.
  EXPECT_EQ(log.agents.size(), tasks.size() * kTrials - first);
  for (const auto& [key, trial] : log.agents) {
    EXPECT_EQ(log.agents.count({key, trial}), 1u) << key << " trial " << trial;
    EXPECT_EQ(done_before.count({key, trial}), 0u) << key << " trial " << trial;
  }
  EXPECT_EQ(log.users, log.agents);

  std::string text = test::read_text(tmp / "run" / kResultsFile);
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), tasks.size() * kTrials);
  auto records = read_records(tmp / "run");
  ASSERT_EQ(records.size(), tasks.size() * kTrials);
  sort_by_task(records);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].id(), (RecordId{task_key(*tasks[i / kTrials]), static_cast<int>(i % kTrials)}));
    EXPECT_TRUE(records[i].error.empty());
  }
}

TEST(Run, TrialZeroIsTheSingleTrialRun) {
  // The same tasks run once and three times: trial 0 of the second run is the first run, record for record.
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange::parse("0:9"));
  UserMaker user = [&](const data::Task& t, int trial) {
    return std::make_unique<sim::ScriptedUser>(f.ds, t, trial_seed(5, trial));
  };
  RunOptions options;
  options.episode = {data::Track::kMultiTurn, 10};
  test::TempDir tmp;
  {
    RunDirectory once = RunDirectory::open(tmp / "once", f.manifest(), false);
    run_tasks(f.environment, tasks, once, echo_maker(), user, options);
    options.trials = 3;
    RunDirectory thrice = RunDirectory::open(tmp / "thrice", f.manifest(), false);
    run_tasks(f.environment, tasks, thrice, echo_maker(), user, options);
  }
  auto zero_timings = [](std::vector<TaskRecord> records) {
    sort_by_task(records);
    for (auto& r : records) r.seconds_env = r.seconds_agent = 0;
    return records;
  };
  auto once = zero_timings(read_records(tmp / "once"));
  auto thrice = zero_timings(read_records(tmp / "thrice"));
  ASSERT_EQ(thrice.size(), 3 * once.size());
  std::size_t user_text_differs = 0;
  for (std::size_t i = 0; i < once.size(); ++i) {
    EXPECT_EQ(thrice[3 * i].to_json_line(), once[i].to_json_line());
    // Later trials get other seeds: the scripted user's wording may change, the task does not.
    EXPECT_EQ(thrice[3 * i + 1].task_key, once[i].task_key);
    EXPECT_EQ(thrice[3 * i + 1].trial, 1);
    for (int t : {1, 2})
      if (thrice[3 * i + t].actions.size() > 1 && once[i].actions.size() > 1 &&
          thrice[3 * i + t].actions[1].observation != once[i].actions[1].observation)
        ++user_text_differs;
  }
  EXPECT_GT(user_text_differs, 0u) << "no trial's user reply differed from trial 0's";
}

//! Every field of two records, numbers bit for bit.
void expect_same_record(const TaskRecord& a, const TaskRecord& b) {
  auto bits = [](double x) {
    uint64_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    return u;
  };
  SCOPED_TRACE(a.id().to_string());
  EXPECT_EQ(a.task_key, b.task_key);
  EXPECT_EQ(a.trial, b.trial);
  EXPECT_EQ(a.user_id, b.user_id);
  EXPECT_EQ(a.instruction, b.instruction);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.target_asin, b.target_asin);
  EXPECT_EQ(a.first_observation, b.first_observation);
  ASSERT_EQ(a.actions.size(), b.actions.size());
  for (std::size_t i = 0; i < a.actions.size(); ++i) {
    const auto &x = a.actions[i], &y = b.actions[i];
    EXPECT_EQ(x.action.name, y.action.name);
    EXPECT_EQ(x.action.arguments_json, y.action.arguments_json);
    EXPECT_EQ(x.observation, y.observation);
    EXPECT_EQ(bits(x.reward.function_acc), bits(y.reward.function_acc));
    EXPECT_EQ(bits(x.reward.result_acc), bits(y.reward.result_acc));
    EXPECT_EQ(x.done, y.done);
    EXPECT_EQ(x.scored, y.scored);
  }
  ASSERT_EQ(a.attempts.size(), b.attempts.size());
  for (std::size_t i = 0; i < a.attempts.size(); ++i) {
    EXPECT_EQ(bits(a.attempts[i].function_acc), bits(b.attempts[i].function_acc));
    EXPECT_EQ(bits(a.attempts[i].result_acc), bits(b.attempts[i].result_acc));
  }
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.ending, b.ending);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.completion_tokens, b.completion_tokens);
  EXPECT_EQ(bits(a.seconds_env), bits(b.seconds_env));
  EXPECT_EQ(bits(a.seconds_agent), bits(b.seconds_agent));
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.usage_json, b.usage_json);
  EXPECT_EQ(a.user_json, b.user_json);
}

//! Writes invalid UTF-8 into its search query (recorded replaced by U+FFFD), then stops.
class BadBytesAgent final : public Agent {
 public:
  void begin(const data::Task&, const std::string&, data::Track) override {}
  AgentStep next(const std::string&) override {
    if (++calls_ > 1) return {{std::string(env::kStop), "{}"}, 0, 0};
    return {{std::string(env::kSearch), "{\"query\": \"caf\xe9 \xff\"}"}, 0, 0};
  }

 private:
  int calls_ = 0;
};

// `pwab run` summarizes a fresh run from the records it kept in memory instead of reading results.jsonl back:
// they must be what reading back gives, field for field, and the summaries written from them the same bytes.
TEST(Run, KeptRecordsAreWhatReadingTheRunBackGives) {
  Fixture f;
  auto tasks = select_tasks(f.ds, "test", TaskRange{});
  test::TempDir tmp;
  RunDirectory dir = RunDirectory::open(tmp / "run", f.manifest(), false);
  RunOptions options;
  options.episode = {data::Track::kMultiTurn, 10};
  options.trials = 2;
  options.concurrency = 3;
  options.keep_records = true;
  AgentMaker agent = [](const data::Task& t, int trial) -> std::unique_ptr<Agent> {
    return std::make_unique<FlakyAgent>(trial == 1 && t.index % 5 == 0);  // some errored records too
  };
  UserMaker user = [&](const data::Task& t, int trial) {
    return std::make_unique<sim::ScriptedUser>(f.ds, t, trial_seed(5, trial));
  };
  RunReport report = run_tasks(f.environment, tasks, dir, agent, user, options);
  EXPECT_TRUE(report.records_exact);
  ASSERT_EQ(report.records.size(), tasks.size() * 2);
  auto kept = report.records;
  auto read = read_records(tmp / "run");
  sort_by_task(kept);
  sort_by_task(read);
  ASSERT_EQ(kept.size(), read.size());
  std::size_t errored = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    expect_same_record(kept[i], read[i]);
    errored += !kept[i].error.empty();
  }
  EXPECT_GT(errored, 0u);

  // The summaries `pwab run` writes from them, diagnosis included, are those `pwab score --data` reads back.
  const metrics::BootstrapOptions bootstrap{200, 0.95, 1};
  std::string from_memory =
      report::write_summaries(runner::make_run(tmp / "run", read_manifest(tmp / "run"), report.records), bootstrap, &f.ds);
  std::map<std::string, std::string> files;
  for (const char* name : {"summary.md", "summary.csv", "summary.json"}) files[name] = test::read_text(tmp / "run" / name);
  EXPECT_EQ(report::write_summaries(tmp / "run", bootstrap, &f.ds), from_memory);
  for (const auto& [name, text] : files) EXPECT_EQ(test::read_text(tmp / "run" / name), text) << name;
  EXPECT_NE(files["summary.json"].find("\"diagnosis\""), std::string::npos);

  // What a line does not carry back as it is makes the kept records inexact: invalid UTF-8 (written replaced),
  // a usage object (read back re-serialized).
  for (int which : {0, 1}) {
    test::TempDir other;
    RunDirectory d = RunDirectory::open(other / "run", f.manifest(), false);
    RunOptions o;
    o.keep_records = true;
    AgentMaker maker = [which](const data::Task&, int) -> std::unique_ptr<Agent> {
      if (which == 0) return std::make_unique<BadBytesAgent>();
      return std::make_unique<EchoAgent>();
    };
    if (which == 1) o.on_record = [](TaskRecord& r) { r.usage_json = R"({"total": {"calls": 1}})"; };
    RunReport r = run_tasks(f.environment, {tasks[0], tasks[1]}, d, maker, nullptr, o);
    EXPECT_FALSE(r.records_exact) << which;
    EXPECT_EQ(r.records.size(), 2u);
    EXPECT_EQ(read_records(other / "run").size(), 2u);
  }
  // Without keep_records nothing is kept.
  test::TempDir none;
  RunDirectory d = RunDirectory::open(none / "run", f.manifest(), false);
  EXPECT_TRUE(run_tasks(f.environment, {tasks[0]}, d, echo_maker(), nullptr, RunOptions{}).records.empty());
}

TEST(Run, ProgressLine) {
  RunProgress p;
  p.total = 200;
  p.finished = 50;
  p.errored = 2;
  p.seconds = 10;
  p.score_sum = 24;
  p.prompt_tokens = 12000;
  std::string line = format_progress(p);
  EXPECT_NE(line.find("tasks 50/200 (2 errored)"), std::string::npos) << line;
  EXPECT_NE(line.find("5.0/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0:30"), std::string::npos) << line;
  EXPECT_NE(line.find("R 0.500"), std::string::npos) << line;
  EXPECT_NE(line.find("12.0k tok"), std::string::npos) << line;
}

}  // namespace
}  // namespace pwab::runner
