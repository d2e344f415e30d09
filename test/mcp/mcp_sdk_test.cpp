// pwab's MCP server driven by the official MCP TypeScript SDK client (test/mcp/client, installed by
// scripts/install-deps.sh): over streamable HTTP on a real `pwab serve` and over stdio through `pwab mcp`, both on
// the mini dataset with the real search index and SASRec. The client plays the same episodes on each transport,
// and every observation, reward and score must equal what the server's own HTTP JSON API (/v1) answers for the
// same actions. Skips, saying why, when Node.js or the client's node_modules is missing.
#include <gtest/gtest.h>
#include <httplib.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "data/loader.h"
#include "env/tools.h"
#include "support/missing_tool.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using pwab::test::TempDir;
namespace fs = std::filesystem;

const fs::path kClientDir = PWAB_MCP_CLIENT_DIR;

int run_command(const std::string& command, std::string* output = nullptr, std::string* errors = nullptr) {
  TempDir io;
  const std::string cmd = command + " > " + (io / "out").string() + " 2> " + (io / "err").string();
  const int status = std::system(cmd.c_str());
  if (output) *output = pwab::test::read_text(io / "out");
  if (errors) *errors = pwab::test::read_text(io / "err");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

//! Why the SDK test cannot run here, or "" when it can.
std::string missing_prerequisite() {
  std::string version;
  if (run_command("node --version", &version) != 0)
    return "node is not installed (scripts/install-deps.sh installs Debian's nodejs and the MCP SDK client)";
  if (std::atoi(version.c_str() + (version.rfind('v', 0) == 0 ? 1 : 0)) < 18)
    return "node " + version + " is older than 18, which the MCP SDK needs";
  if (!fs::exists(kClientDir / "node_modules/@modelcontextprotocol/sdk/package.json"))
    return "the MCP SDK client is not installed in " + kClientDir.string() + " (run scripts/install-deps.sh)";
  return {};
}

//! `pwab serve` as a child process on a free loopback port, stopped with SIGTERM.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, const fs::path& log) {
    std::vector<char*> argv;  // built before fork: the child only makes system calls until exec
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
    // The server logs "http://127.0.0.1:PORT" once it listens; the port is the system's choice (--port 0).
    const std::regex url(R"(http://127\.0\.0\.1:([0-9]+))");
    for (int i = 0; i < 2400 && port_ == 0; ++i) {
      std::smatch m;
      std::string text = fs::exists(log) ? pwab::test::read_text(log) : "";
      if (std::regex_search(text, m, url)) port_ = std::stoi(m[1]);
      if (port_ == 0 && waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;  // it exited: the log says why
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

class McpSdk : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = missing_prerequisite();
    if (!skip_reason_.empty()) return;
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_command(std::string(PWAB_BINARY) + " data synth --out " + data_ + " --scale mini --seed 3"), 0);
    ASSERT_EQ(run_command(std::string(PWAB_BINARY) + " rec train " + data_ + " --epochs 2 --eval-every 0"), 0);
    ds_ = new pwab::data::Dataset(pwab::data::load_dataset(data_));
    server_ = new ServeProcess({PWAB_BINARY, "serve", "--data", data_, "--embedder", "hashing", "--host",
                                "127.0.0.1", "--port", "0"},
                               *dir_ / "serve.log");
  }
  static void TearDownTestSuite() {
    delete server_;
    delete ds_;
    delete dir_;
  }
  void SetUp() override {
    if (!skip_reason_.empty()) PWAB_SKIP_MISSING_TOOL(skip_reason_);
    ASSERT_TRUE(server_ != nullptr && server_->port() > 0)
        << "pwab serve did not start:\n" << pwab::test::read_text(*dir_ / "serve.log");
  }

  static std::string task_key(pwab::data::TaskType type, std::size_t skip = 0) {
    const auto& tasks = ds_->tasks(pwab::data::Split::kTest);
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].type == type && skip-- == 0) return "test/" + std::to_string(i);
    throw std::runtime_error("no such test task");
  }
  static const pwab::data::Task& task_of(const std::string& key) {
    return ds_->tasks(pwab::data::Split::kTest)[std::stoul(key.substr(5))];
  }

  //! Episodes that touch every function and both tracks: a single-turn search by the target's title, a
  //! single-turn recommendation from the visible history, a single-turn review after a details lookup, and a
  //! multi-turn search: respond (the scripted user answers), search, stop.
  static json plan() {
    const std::string search = task_key(pwab::data::TaskType::kSearch);
    const std::string recommend = task_key(pwab::data::TaskType::kRecommend);
    const std::string review = task_key(pwab::data::TaskType::kReview);
    const std::string multi = task_key(pwab::data::TaskType::kSearch, 1);
    json sequence = json::array();
    for (const auto* b : ds_->visible_history(task_of(recommend))) sequence.push_back(ds_->product(b->product).parent_asin);
    const auto& review_target = ds_->product(task_of(review).target_product);
    auto call = [](std::string_view name, json arguments) {
      return json{{"name", std::string(name)}, {"arguments", std::move(arguments)}};
    };
    json episodes = json::array();
    episodes.push_back({{"start", {{"task", search}, {"track", "single"}}},
                        {"calls", {call(pwab::env::kSearch, {{"query", ds_->product(task_of(search).target_product).title}})}}});
    episodes.push_back({{"start", {{"task", recommend}, {"track", "single"}, {"history", false}}},
                        {"calls", {call(pwab::env::kRecommend, {{"product_sequence", sequence}})}}});
    episodes.push_back({{"start", {{"task", review}, {"track", "single"}}},
                        {"calls", {call(pwab::env::kProductDetails, {{"product_asin", review_target.parent_asin}}),
                                   call(pwab::env::kAddReview, {{"review", "Works as described and feels solid."}})}}});
    episodes.push_back({{"start", {{"task", multi}, {"track", "multi"}, {"user_sim", "scripted"}, {"seed", 5}}},
                        {"calls", {call(pwab::env::kRespond, {{"content", "Which product are you after?"}}),
                                   call(pwab::env::kSearch, {{"query", ds_->product(task_of(multi).target_product).title}}),
                                   call(pwab::env::kStop, json::object())}}});
    return {{"list_tasks", {{"split", "test"}, {"limit", 5}}}, {"episodes", episodes}};
  }

  //! Runs the SDK client with `transport` added to the plan; its summary.
  static json run_client(const json& transport) {
    json p = plan();
    p["transport"] = transport;
    TempDir tmp;
    pwab::test::write_text(tmp / "plan.json", p.dump());
    std::string out, err;
    int rc = run_command("node " + (kClientDir / "episode_client.mjs").string() + " " + (tmp / "plan.json").string(),
                         &out, &err);
    EXPECT_EQ(rc, 0) << err;
    if (rc != 0) return json();
    return json::parse(out);
  }

  //! The same episodes played on the server's own HTTP JSON API: per episode, its start, steps and end.
  static json play_json_api() {
    httplib::Client http("127.0.0.1", server_->port());
    auto post = [&](const std::string& path, const json& body) {
      auto res = http.Post(path.c_str(), body.dump(), "application/json");
      EXPECT_TRUE(res && res->status / 100 == 2) << path << ": " << (res ? res->body : "no answer");
      return res ? json::parse(res->body) : json();
    };
    json episodes = json::array();
    const json p = plan();
    for (const auto& episode : p["episodes"]) {
      json played = {{"start", post("/v1/episodes", episode["start"])}, {"steps", json::array()}};
      const std::string id = played["start"]["episode_id"];
      for (const auto& c : episode["calls"]) played["steps"].push_back(post("/v1/episodes/" + id + "/step", c));
      played["end"] = post("/v1/episodes/" + id + "/end", json::object());
      episodes.push_back(played);
    }
    return episodes;
  }

  //! Checks an SDK summary against the JSON API's results for the same plan.
  static void expect_same_episodes(json summary, json expected) {  // by value: [] on a missing key is null
    ASSERT_EQ(summary["episodes"].size(), expected.size());
    for (std::size_t e = 0; e < expected.size(); ++e) {
      SCOPED_TRACE("episode " + std::to_string(e));
      json& got = summary["episodes"][e];
      json& want = expected[e];
      EXPECT_FALSE(got["start"]["isError"].get<bool>());
      EXPECT_EQ(got["start"]["structured"]["observation"], want["start"]["observation"]);
      EXPECT_EQ(got["start"]["structured"].value("history", json()), want["start"].value("history", json()));
      ASSERT_EQ(got["steps"].size(), want["steps"].size());
      for (std::size_t s = 0; s < want["steps"].size(); ++s) {
        SCOPED_TRACE("step " + std::to_string(s));
        EXPECT_FALSE(got["steps"][s]["isError"].get<bool>());
        EXPECT_EQ(got["steps"][s]["texts"][0], want["steps"][s]["observation"]);
        EXPECT_EQ(got["steps"][s]["structured"], want["steps"][s]);
      }
      EXPECT_EQ(got["state"]["structured"]["steps"], want["steps"].size());
      EXPECT_EQ(got["end"]["structured"]["score"], want["end"]["score"]);
      EXPECT_EQ(got["end"]["structured"]["record"]["actions"], want["end"]["record"]["actions"]);
      EXPECT_EQ(got["end"]["structured"]["record"]["ending"], want["end"]["record"]["ending"]);
    }
  }

  //! What both transports must show besides the episodes.
  static void expect_common(json summary) {
    EXPECT_EQ(summary["server"]["name"], "pwab");
    EXPECT_TRUE(summary["capabilities"].contains("tools"));
    EXPECT_EQ(summary["ping"], json::object());
    std::set<std::string> names;
    for (const auto& t : summary["tools"]) names.insert(t["name"]);
    for (const auto& spec : pwab::env::tool_specs()) EXPECT_TRUE(names.count(std::string(spec.name))) << spec.name;
    for (const char* name : {"respond", "list_tasks", "start_episode", "end_episode", "episode_state", "environment_info"})
      EXPECT_TRUE(names.count(name)) << name;
    EXPECT_EQ(summary["tasks"]["structured"]["tasks"].size(), 5u);
    EXPECT_EQ(summary["tasks"]["structured"]["tasks"][0]["task"], "test/0");
    EXPECT_TRUE(summary["unknown_episode"]["isError"].get<bool>());
    EXPECT_NE(summary["unknown_episode"]["texts"][0].get<std::string>().find("no-such-episode"), std::string::npos);
    EXPECT_EQ(summary["unknown_tool"]["code"], -32602);
    // The episodes scored as expected: a title search finds its target, the review is the right function.
    json& episodes = summary["episodes"];
    EXPECT_EQ(episodes[0]["steps"][0]["structured"]["reward"]["function_acc"], 1.0);
    EXPECT_EQ(episodes[0]["steps"][0]["structured"]["reward"]["result_acc"], 1.0);
    EXPECT_EQ(episodes[2]["end"]["structured"]["score"]["f"], 1.0);
    EXPECT_EQ(episodes[3]["end"]["structured"]["record"]["ending"], "stop");
    const std::string user_reply = episodes[3]["steps"][0]["texts"][0];
    EXPECT_FALSE(user_reply.empty());
    EXPECT_NE(user_reply.rfind("Error", 0), 0u) << user_reply;
  }

  static std::string skip_reason_;
  static TempDir* dir_;
  static std::string data_;
  static pwab::data::Dataset* ds_;
  static ServeProcess* server_;
};
std::string McpSdk::skip_reason_;
TempDir* McpSdk::dir_ = nullptr;
std::string McpSdk::data_;
pwab::data::Dataset* McpSdk::ds_ = nullptr;
ServeProcess* McpSdk::server_ = nullptr;

TEST_F(McpSdk, StreamableHttpMatchesTheJsonApi) {
  const std::string url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/mcp";
  json summary = run_client({{"url", url}});
  ASSERT_FALSE(summary.is_null());
  expect_common(summary);
  EXPECT_TRUE(summary["session_id"].is_string());      // issued on initialize
  EXPECT_TRUE(summary["session_after_delete"].is_null());  // DELETE ended it
  EXPECT_EQ(summary["protocol_version"], "2025-11-25");  // the pinned SDK's newest, which pwab speaks
  expect_same_episodes(summary, play_json_api());
}

// What the SDK does not show: the transport's answers on `pwab serve` itself, beside the JSON API's routes.
TEST_F(McpSdk, ServeAnswersMcpTransportRequests) {
  httplib::Client http("127.0.0.1", server_->port());
  auto get = http.Get("/mcp", {{"Accept", "text/event-stream"}});
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  auto init = http.Post("/mcp", {{"Accept", "application/json, text/event-stream"}},
                        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
                        "application/json");
  ASSERT_TRUE(init);
  ASSERT_EQ(init->status, 200) << init->body;
  const std::string session = init->get_header_value("Mcp-Session-Id");
  // A handshake-era request without its session is refused; one with no MCP header at all is OpenEnv's plain
  // JSON-RPC, answered 200 (docs/serve.md).
  EXPECT_EQ(http.Post("/mcp", {{"MCP-Protocol-Version", "2025-06-18"}}, R"({"jsonrpc":"2.0","id":2,"method":"ping"})",
                      "application/json")->status,
            400);
  auto plain = http.Post("/mcp", R"({"jsonrpc":"2.0","id":2,"method":"ping"})", "application/json");
  EXPECT_EQ(plain->status, 200);
  EXPECT_EQ(json::parse(plain->body)["result"], json::object());
  EXPECT_EQ(http.Delete("/mcp", {{"Mcp-Session-Id", session}})->status, 204);
  EXPECT_EQ(http.Delete("/mcp", {{"Mcp-Session-Id", session}})->status, 404);
  EXPECT_EQ(http.Get("/health")->status, 200);  // the JSON API is unaffected
}

TEST_F(McpSdk, StdioMatchesTheJsonApi) {
  json summary = run_client({{"command", PWAB_BINARY}, {"args", {"mcp", "--data", data_, "--embedder", "hashing"}}});
  ASSERT_FALSE(summary.is_null());
  expect_common(summary);
  expect_same_episodes(summary, play_json_api());
}

}  // namespace
