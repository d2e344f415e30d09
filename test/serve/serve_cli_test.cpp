// `pwab serve` as the real binary: --port 0 prints the URL, an episode played over HTTP lands in OUT/<track>
// where `pwab score` reads it, SIGTERM stops the server cleanly, and a restart on the same OUT appends.
#include <gtest/gtest.h>
#include <thread>
#include <sstream>
#include <set>
#include <functional>
#include <atomic>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

extern char** environ;

namespace {

using Json = nlohmann::json;
using pwab::test::TempDir;

int run_binary(const std::string& args, std::string* output = nullptr, const std::string& prefix = "") {
  TempDir out_dir;
  std::string cmd = prefix + std::string(PWAB_BINARY) + " " + args + " > " + (out_dir / "out").string() + " 2> " +
                    (out_dir / "err").string();
  int status = std::system(cmd.c_str());
  if (output) *output = pwab::test::read_text(out_dir / "out");
  return WEXITSTATUS(status);
}

//! `pwab serve ...` in a child process; reads the URL from the first line of its stdout.
class ServeProcess : public pwab::test::PwabProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args, const std::string& stderr_file = "")
      : PwabProcess(with_command(std::move(args)), stderr_file) {}

 private:
  static std::vector<std::string> with_command(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    return args;
  }
};

//! One mini dataset with its briefly trained recommender, shared by the tests of this file.
class ServeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_binary("data synth --out " + data_ + " --scale mini --seed 2"), 0);
    ASSERT_EQ(run_binary("rec train " + data_ + " --epochs 1 --eval-every 0"), 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
  static std::string data_;
};
TempDir* ServeCli::dir_ = nullptr;
std::string ServeCli::data_;

TEST_F(ServeCli, ServesRecordsAndStopsOnSigterm) {
  TempDir dir;
  const std::string& data = data_;
  std::string out = (dir / "served").string();

  for (int round = 0; round < 2; ++round) {
    ServeProcess serve({"--data", data, "--port", "0", "--embedder", "hashing", "--out", out});
    ASSERT_EQ(serve.url().rfind("http://127.0.0.1:", 0), 0u) << serve.url();
    httplib::Client c(serve.url());
    auto r = c.Post("/v1/episodes", R"({"task": "test/)" + std::to_string(round) + R"("})", "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
    std::string id = Json::parse(r->body)["episode_id"];
    r = c.Post("/v1/episodes/" + id + "/step", R"({"name": "search_product_by_query", "arguments": {"query": "usb cable"}})",
               "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(Json::parse(r->body)["ending"], "task_function") << r->body;
    EXPECT_EQ(serve.stop(), 0);
  }
  // Both rounds are in the single-turn run directory, which `pwab score` reads like any run.
  std::string records = pwab::test::read_text(std::filesystem::path(out) / "single" / "results.jsonl");
  EXPECT_EQ(std::count(records.begin(), records.end(), '\n'), 2) << records;
  std::string table;
  ASSERT_EQ(run_binary("score " + out + "/single --format json", &table), 0);
  EXPECT_EQ(Json::parse(table)["groups"]["overall"]["n_tasks"], 2) << table;
}

// Killed with SIGKILL amid 200 concurrent episodes, `pwab serve --out` leaves only whole records; restarted on the
// same directory, it refuses the (task, trial)s already recorded and records the rest, each exactly once (issue 19).
TEST_F(ServeCli, KilledAmidConcurrentEpisodesLosesNothingAndCountsNothingTwice) {
  TempDir dir;
  const std::string out = (dir / "served").string();
  constexpr int kEpisodes = 200;
  auto play_all = [&](ServeProcess& serve, std::atomic<int>& recorded, std::atomic<int>& refused,
                      std::function<void()> midway) {
    std::vector<std::thread> clients;
    std::atomic<int> answered{0};
    for (int i = 0; i < kEpisodes; ++i)
      clients.emplace_back([&, i] {
        httplib::Client c(serve.url());
        c.set_read_timeout(60, 0);
        Json start = {{"task", "test/" + std::to_string(i % 20)}, {"trial", i / 20}, {"track", "multi"}};
        auto r = c.Post("/v1/episodes", start.dump(), "application/json");
        if (r && r->status == 409) ++refused;
        if (!r || r->status != 201) return;
        std::string path = "/v1/episodes/" + Json::parse(r->body)["episode_id"].get<std::string>();
        // a conversation of several turns, so that a kill finds episodes at every stage
        for (int turn = 0; turn < 6; ++turn)
          if (!c.Post(path + "/step", R"({"name": "respond", "arguments": {"content": "Tell me more?"}})",
                      "application/json"))
            return;
        c.Post(path + "/step", R"({"name": "search_product_by_query", "arguments": {"query": "usb cable"}})",
               "application/json");
        auto s = c.Post(path + "/step", R"({"name": "stop"})", "application/json");
        if (s && s->status == 200 && Json::parse(s->body).value("finished", false)) ++recorded;
        ++answered;
      });
    if (midway) {
      while (answered < kEpisodes / 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      midway();
    }
    for (auto& t : clients) t.join();
  };
  std::atomic<int> first{0}, first_refused{0};
  {
    ServeProcess serve({"--data", data_, "--port", "0", "--embedder", "hashing", "--out", out});
    play_all(serve, first, first_refused, [&] { serve.kill_hard(); });
  }
  const std::filesystem::path file = std::filesystem::path(out) / "multi" / "results.jsonl";
  std::string text = pwab::test::read_text(file);
  std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_GE(lines, static_cast<std::size_t>(kEpisodes / 4));
  EXPECT_LT(lines, static_cast<std::size_t>(kEpisodes));  // killed before the end
  // Every whole line is a record. A kill can cut the last write short (Linux stops a write to a regular file at
  // a fatal signal), leaving an unterminated tail: the restart cuts it off before it appends.
  std::istringstream in(text.substr(0, text.rfind('\n') + 1));
  for (std::string line; std::getline(in, line);)
    EXPECT_FALSE(Json::parse(line, nullptr, false).is_discarded()) << line.substr(0, 200);

  std::atomic<int> second{0}, refused{0};
  {
    ServeProcess serve({"--data", data_, "--port", "0", "--embedder", "hashing", "--out", out});
    play_all(serve, second, refused, nullptr);
    EXPECT_EQ(serve.stop(), 0);
  }
  EXPECT_EQ(static_cast<std::size_t>(refused.load()), lines);  // every recorded one refused, none replayed
  EXPECT_EQ(static_cast<std::size_t>(second.load()) + lines, static_cast<std::size_t>(kEpisodes));
  text = pwab::test::read_text(file);
  std::set<std::pair<std::string, int>> seen;
  std::istringstream all(text);
  for (std::string line; std::getline(all, line);) {
    Json j = Json::parse(line);
    EXPECT_TRUE(seen.emplace(j["task"], j["trial"]).second) << "twice: " << j["task"] << " trial " << j["trial"];
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kEpisodes));
  std::string table;
  ASSERT_EQ(run_binary("score " + out + "/multi --format json", &table), 0);
  EXPECT_EQ(Json::parse(table)["groups"]["overall"]["n_tasks"], 20) << table;
}

// A full disk under `pwab serve --out` (a 64 KiB tmpfs, mounted as root): the client whose episode could not be
// recorded gets a 500 saying so, the server's log says it too, every line of the file is whole, and the (task,
// trial) is free again: once there is room, it is played and recorded (issue 19).
TEST_F(ServeCli, AFullDiskGivesTheClientAndTheLogAClearErrorAndNoTornLine) {
  TempDir dir;
  const std::filesystem::path disk = dir / "disk";
  std::filesystem::create_directories(disk);
  if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (it needs root): " << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{disk.string()};
  const std::string out = (disk / "served").string();
  const std::string log = (dir / "serve.log").string();
  ServeProcess serve({"--data", data_, "--port", "0", "--embedder", "hashing", "--out", out}, log);
  httplib::Client c(serve.url());
  c.set_read_timeout(60, 0);
  // Plays one single-turn search episode; returns the finishing step's answer.
  auto play = [&](const Json& start) -> httplib::Result {
    auto r = c.Post("/v1/episodes", start.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    if (!r || r->status != 201) return r;
    std::string id = Json::parse(r->body)["episode_id"];
    return c.Post("/v1/episodes/" + id + "/step",
                  R"({"name": "search_product_by_query", "arguments": {"query": "usb cable charger"}})", "application/json");
  };
  int recorded = 0;
  Json failed_start;
  std::string failure;
  for (int i = 0; i < 300 && failed_start.is_null(); ++i) {
    Json start = {{"task", "test/" + std::to_string(i % 10)}, {"trial", i / 10}};
    auto r = play(start);
    ASSERT_TRUE(r);
    if (r->status == 200) {
      ++recorded;
      continue;
    }
    EXPECT_EQ(r->status, 500) << r->body;
    failed_start = start;
    failure = Json::parse(r->body)["error"]["message"];
  }
  ASSERT_FALSE(failed_start.is_null()) << "the disk never filled";
  EXPECT_GT(recorded, 0);
  EXPECT_NE(failure.find("No space left on device"), std::string::npos) << failure;
  EXPECT_NE(failure.find("the record was not written"), std::string::npos) << failure;
  const std::filesystem::path file = std::filesystem::path(out) / "single" / "results.jsonl";
  std::string text = pwab::test::read_text(file);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), recorded);
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "a torn last line";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    EXPECT_FALSE(Json::parse(line, nullptr, false).is_discarded()) << line.substr(0, 200);

  // Room again: the (task, trial) that failed is played and recorded, after the others.
  ASSERT_EQ(::mount("tmpfs", disk.c_str(), "tmpfs", MS_REMOUNT, "size=4m"), 0) << std::strerror(errno);
  auto r = play(failed_start);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(serve.stop(), 0);
  text = pwab::test::read_text(file);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), recorded + 1);
  std::string logged = pwab::test::read_text(log);
  EXPECT_NE(logged.find("was not recorded"), std::string::npos) << logged;
  EXPECT_NE(logged.find("No space left on device"), std::string::npos) << logged;
  EXPECT_NE(logged.find(failed_start["task"].get<std::string>()), std::string::npos) << logged;
}

// Off loopback without a token the API would be open to every machine that
// reaches it: refused at start. With PWAB_SERVE_TOKEN it serves, and only
// requests with the token get through.
TEST_F(ServeCli, AnyAddressNeedsATokenAndTheTokenIsEnforced) {
  std::string out;
  EXPECT_EQ(run_binary("serve --data " + data_ +
                           " --embedder hashing --host 0.0.0.0 --port 0",
                       nullptr, "timeout 60 "),
            2);
  setenv("PWAB_SERVE_TOKEN", "cli-token-42", 1);
  {
    ServeProcess serve({"--data", data_, "--port", "0", "--embedder", "hashing",
                        "--host", "0.0.0.0"});
    ASSERT_EQ(serve.url().rfind("http://0.0.0.0:", 0), 0u) << serve.url();
    httplib::Client c(
        "127.0.0.1", std::stoi(serve.url().substr(serve.url().rfind(':') + 1)));
    auto refused = c.Get("/v1/tasks");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401);
    c.set_bearer_token_auth("cli-token-42");
    auto ok = c.Get("/v1/tasks");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(serve.stop(), 0);
  }
  unsetenv("PWAB_SERVE_TOKEN");
}

// The leak guard is the LLM user's: without a user model, or below 0, it is a usage error before anything loads.
TEST_F(ServeCli, UserGuardNeedsTheLlmUser) {
  EXPECT_EQ(run_binary("serve --data " + data_ + " --embedder hashing --port 0 --user-guard 2", nullptr, "timeout 60 "),
            2);
  EXPECT_EQ(run_binary("serve --data " + data_ + " --embedder hashing --port 0 --user-model m --user-guard -1", nullptr,
                       "timeout 60 "),
            2);
}

TEST_F(ServeCli, RefusesAPortInUse) {
  httplib::Server holder;
  int port = holder.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  // (`timeout`: were the port shared instead, the server would run until killed.)
  EXPECT_EQ(run_binary("serve --data " + data_ + " --embedder hashing --port " + std::to_string(port), nullptr,
                       "timeout 60 "),
            1);
}

}  // namespace
