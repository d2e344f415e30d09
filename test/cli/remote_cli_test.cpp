// `pwab run --agent remote` end to end: the real binary drives both tracks against the package's example agent,
// `python3 -m pwab.examples.remote_agent`, started here as a subprocess on a free loopback port. The records
// show the example's policy (keyword routing, the history as the recommendation sequence, one question first
// in multi-turn), and the manifest names the agent. The subprocess is killed when the suite ends, passed or not.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/loader.h"
#include "support/missing_tool.h"
#include "support/test_support.h"

namespace {

using pwab::test::TempDir;
using Json = nlohmann::json;

using pwab::test::run_pwab;

bool have_python3() { return std::system("command -v python3 > /dev/null 2>&1") == 0; }

//! The example agent as a child process: started on port 0, its URL read from its first line of stdout;
//! killed (and reaped) on destruction. The child also dies with this process (PR_SET_PDEATHSIG).
class AgentProcess {
 public:
  AgentProcess() {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      setenv("PYTHONPATH", PWAB_PYTHON_DIR, 1);
      execlp("python3", "python3", "-m", "pwab.examples.remote_agent", "--host", "127.0.0.1", "--port", "0",
             static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    if (FILE* f = fdopen(out[0], "r")) {
      char line[256] = {0};
      if (std::fgets(line, sizeof line, f)) url_ = line;
      while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
      std::fclose(f);  // the agent prints nothing more to stdout
    }
  }
  ~AgentProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  //! "http://127.0.0.1:<port>/", or "" when the agent did not start.
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  std::string url_;
};

std::vector<Json> read_records(const std::filesystem::path& run) {
  std::vector<Json> out;
  std::istringstream lines(pwab::test::read_text(run / "results.jsonl"));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) out.push_back(Json::parse(line));
  return out;
}

std::vector<std::string> action_names(const Json& record) {
  std::vector<std::string> names;
  for (const auto& a : record["actions"]) names.push_back(a["name"]);
  return names;
}

std::string task_function(const std::string& type) {
  if (type == "search") return "search_product_by_query";
  if (type == "recommend") return "get_recommendations_by_history";
  return "add_product_review";
}

//! The mini dataset with its index and a briefly trained recommender, and the example agent.
class RemoteCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_python3()) return;
    dir_ = new TempDir;
    data_ = (*dir_ / "mini").string();
    ASSERT_EQ(run_pwab("data synth --out " + data_ + " --scale mini --seed 3"), 0);
    ASSERT_EQ(run_pwab("rec train " + data_ + " --epochs 2 --eval-every 0"), 0);
    agent_ = new AgentProcess;
  }
  static void TearDownTestSuite() {
    delete agent_;  // kills the agent whether the tests passed or not
    agent_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!have_python3()) PWAB_SKIP_MISSING_TOOL("python3 is not installed");
    ASSERT_NE(agent_, nullptr);
    ASSERT_FALSE(agent_->url().empty()) << "the example agent did not print its URL";
  }
  static std::string out(const std::string& name) { return (*dir_ / name).string(); }
  static std::string run_args(const std::string& track, const std::string& run) {
    return "run --data " + data_ + " --track " + track + " --agent remote --agent-url " + agent_->url() +
           " --concurrency 4 --seed 5 --out " + out(run);
  }

  //! The visible history's ASINs of a task, oldest first, as the example sends them to the recommender.
  static std::vector<std::string> history_asins(const pwab::data::Dataset& ds, std::size_t task_index) {
    const pwab::data::Task& t = ds.tasks(pwab::data::Split::kTest).at(task_index);
    auto history = ds.visible_history(t);
    std::stable_sort(history.begin(), history.end(),
                     [](auto* a, auto* b) { return a->review.timestamp < b->review.timestamp; });
    std::vector<std::string> asins;
    for (const auto* b : history) asins.push_back(ds.product(b->product).parent_asin);
    if (asins.size() > 50) asins.erase(asins.begin(), asins.end() - 50);
    return asins;
  }

  static double overall_f_acc(const std::string& run) {
    std::string summary;
    EXPECT_EQ(run_pwab("score " + out(run) + " --format json", &summary), 0);
    return Json::parse(summary)["groups"]["overall"]["f_acc"]["value"].get<double>();
  }

  static TempDir* dir_;
  static std::string data_;
  static AgentProcess* agent_;
};
TempDir* RemoteCli::dir_ = nullptr;
std::string RemoteCli::data_;
AgentProcess* RemoteCli::agent_ = nullptr;

TEST_F(RemoteCli, SingleTurnRunsTheExampleAgentOnEveryTask) {
  std::string table, err;
  ASSERT_EQ(run_pwab(run_args("single", "st"), &table, &err), 0) << err;
  EXPECT_NE(table.find("remote"), std::string::npos) << table;
  auto ds = pwab::data::load_dataset(data_);
  auto records = read_records(out("st"));
  ASSERT_EQ(records.size(), ds.tasks(pwab::data::Split::kTest).size());
  int recommend_checked = 0;
  for (const auto& r : records) {
    ASSERT_EQ(r["error"], "") << r["task"];
    ASSERT_EQ(r["actions"].size(), 1u) << r;  // single-turn: the example calls its predicted function at once
    const Json& action = r["actions"][0];
    Json args = Json::parse(action["arguments"].get<std::string>());
    std::string name = action["name"];
    if (name == "search_product_by_query") {
      EXPECT_FALSE(args["query"].get<std::string>().empty()) << r;
    }
    if (name == "add_product_review") {
      EXPECT_GT(args["review"].get<std::string>().size(), 10u) << r;
    }
    if (name == "get_recommendations_by_history") {
      std::string key = r["task"];
      std::size_t index = std::stoul(key.substr(key.find('/') + 1));
      EXPECT_EQ(args["product_sequence"].get<std::vector<std::string>>(), history_asins(ds, index)) << key;
      ++recommend_checked;
    }
  }
  EXPECT_GT(recommend_checked, 0);
  EXPECT_GE(overall_f_acc("st"), 0.9);  // keyword routing is easy on the synthetic instructions

  auto manifest = Json::parse(pwab::test::read_text(std::filesystem::path(out("st")) / "manifest.json"));
  EXPECT_EQ(manifest["config"]["agent"], "remote");
  EXPECT_EQ(manifest["config"]["agent_config"]["protocol"], "pwab-agent/1");
  EXPECT_EQ(manifest["config"]["agent_config"]["name"], agent_->url());

  // With a name instead of the URL, a later session resumes from another address; another name is refused.
  ASSERT_EQ(run_pwab(run_args("single", "named") + " --tasks 0:4 --agent-opt name=example"), 0);
  ASSERT_EQ(run_pwab("run --data " + data_ + " --agent remote --agent-url http://127.0.0.1:1/ --seed 5 --tasks 0:4 "
                       "--agent-opt name=example --resume --out " + out("named"),
                       nullptr, &err),
            0)
      << err;
  EXPECT_NE(err.find("ran 0 tasks"), std::string::npos) << err;
  std::string named_table;
  ASSERT_EQ(run_pwab("score " + out("named"), &named_table), 0);
  EXPECT_NE(named_table.find("remote (example)"), std::string::npos) << named_table;  // the label names the row
  EXPECT_EQ(run_pwab(run_args("single", "named") + " --tasks 0:4 --agent-opt name=other --resume", nullptr, &err), 2);
  EXPECT_NE(err.find("config"), std::string::npos) << err;
}

TEST_F(RemoteCli, MultiTurnAsksOnceThenActsThenStops) {
  std::string table, err;
  ASSERT_EQ(run_pwab(run_args("multi", "mt") + " --tasks 0:30", &table, &err), 0) << err;
  EXPECT_NE(table.find("Avg. Steps"), std::string::npos) << table;
  auto records = read_records(out("mt"));
  ASSERT_EQ(records.size(), 30u);
  int asked = 0;
  for (const auto& r : records) {
    ASSERT_EQ(r["error"], "") << r["task"];
    EXPECT_EQ(r["ending"], "stop") << r;
    auto names = action_names(r);
    ASSERT_GE(names.size(), 2u) << r;
    EXPECT_EQ(names.back(), "stop") << r;
    std::string acted = names[names.size() - 2];
    if (names.size() == 3) {
      // Search and review: one clarifying question, answered by the scripted user, whose answer is used.
      EXPECT_EQ(names[0], "respond") << r;
      EXPECT_NE(acted, "get_recommendations_by_history") << r;
      EXPECT_FALSE(r["actions"][0]["observation"].get<std::string>().empty()) << r;
      ++asked;
    } else {
      EXPECT_EQ(names.size(), 2u) << r;
      EXPECT_EQ(acted, "get_recommendations_by_history") << r;
    }
    EXPECT_EQ(r["attempts"].size(), 1u) << r;
    if (acted == task_function(r["type"])) {
      EXPECT_EQ(r["attempts"][0][0], 1.0) << r;
    }
  }
  EXPECT_GT(asked, 0);
  EXPECT_GE(overall_f_acc("mt"), 0.9);
}

TEST_F(RemoteCli, UsageErrors) {
  std::string err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --agent remote --out " + out("u1"), nullptr, &err), 2);
  EXPECT_NE(err.find("--agent-url"), std::string::npos) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --agent heuristic --agent-url " + agent_->url() + " --out " + out("u2"),
                       nullptr, &err),
            2);
  EXPECT_NE(err.find("--agent remote"), std::string::npos) << err;
  EXPECT_EQ(run_pwab("run --data " + data_ + " --agent remote --agent-url localhost:80 --out " + out("u3"), nullptr,
                       &err),
            2);
  EXPECT_NE(err.find("http://"), std::string::npos) << err;
}

TEST_F(RemoteCli, AgentsListsRemote) {
  std::string list;
  ASSERT_EQ(run_pwab("agents", &list), 0);
  EXPECT_NE(list.find("remote"), std::string::npos) << list;
  EXPECT_NE(list.find("--agent-url"), std::string::npos) << list;
}

}  // namespace
