// test/agents/fc_test_util.h: what the memory and fc agent tests share: a hand-made dataset whose visible
// histories are known item by item, an embedder with known similarities, fixed search and recommendation
// backends, a fixed user, and the real HTTP client on the loopback OpenAI server behind a metered LlmAccess.
#pragma once
#include <cmath>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent.h"
#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "llm/http_chat_model.h"
#include "llm/ledger.h"
#include "runner/episode.h"
#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace pwab::agents::fctest {

inline data::Product product(std::string asin, std::string title, std::string category, py::Scalar price,
                             std::optional<std::string> store, std::string description) {
  data::Product p;
  p.parent_asin = std::move(asin);
  p.title = std::move(title);
  p.main_category = std::move(category);
  p.price = price;
  p.store = std::move(store);
  p.average_rating = py::Scalar::of_float(4.5);
  p.rating_number = py::Scalar::of_int(12);
  p.features = {"Quiet motor"};
  p.description = {std::move(description)};
  p.categories = {"Home"};
  p.details_json = R"({"Color": "Red"})";
  return p;
}

inline data::Behaviour behaviour(data::ProductId id, std::string asin, double rating, std::string text, int64_t ts) {
  data::Behaviour b;
  b.product = id;
  b.review.rating = py::Scalar::of_float(rating);
  b.review.title = "Title";
  b.review.text = std::move(text);
  b.review.parent_asin = std::move(asin);
  b.review.timestamp = ts;
  return b;
}

//! Products 0..4: two kettles, a shirt, a mug, socks. User AUSER bought them in the stored order below (times
//! 300, 100, 500, 200, 500, and a mug at 2000 that no task sees); user BNEW has nothing before its task.
//! Test tasks (all at time 1000): 0 search (AUSER, target kettle 1), 1 recommend (AUSER, target socks),
//! 2 review (AUSER, target kettle 2), 3 search (BNEW, target kettle 1).
inline data::Dataset tiny() {
  data::Dataset ds;
  ds.add_product(product("B0KETTLE01", "Red Electric Kettle", "Amazon Home", py::Scalar::of_float(29.99), "Voltrix", "Boils water."));
  ds.add_product(product("B0SHIRT001", "Blue Cotton Shirt", "AMAZON FASHION", py::Scalar::none(), std::nullopt, "Soft cotton."));
  ds.add_product(product("B0KETTLE02", "Steel Electric Kettle", "Amazon Home", py::Scalar::of_int(40), "Isple", "Stainless."));
  ds.add_product(product("B0MUG00001", "Ceramic Mug", "Amazon Home", py::Scalar::of_float(9.5), "Cuply", "Holds tea."));
  ds.add_product(product("B0SOCKS001", "Wool Socks", "AMAZON FASHION", py::Scalar::of_float(12.0), "Knitz", "Warm."));
  data::User a;
  a.id = "AUSER";
  a.behaviours = {behaviour(0, "B0KETTLE01", 5.0, "Boils fast, love this kettle.", 300),
                  behaviour(1, "B0SHIRT001", 3.0, "The shirt shrank.", 100),
                  behaviour(2, "B0KETTLE02", 4.0, "Solid kettle, a bit loud.", 500),
                  behaviour(3, "B0MUG00001", 5.0, "Lovely mug.", 200),
                  behaviour(4, "B0SOCKS001", 2.0, "Itchy socks.", 500),
                  behaviour(3, "B0MUG00001", 4.0, "Second mug.", 2000)};
  ds.add_user(std::move(a));
  data::User b;
  b.id = "BNEW";
  b.behaviours = {behaviour(3, "B0MUG00001", 4.0, "Later mug.", 5000)};
  ds.add_user(std::move(b));
  auto task = [&](data::UserId user, std::string instruction, data::TaskType type, data::ProductId target,
                  std::string review) {
    data::Task t;
    t.split = data::Split::kTest;
    t.index = static_cast<uint32_t>(ds.tasks(data::Split::kTest).size());
    t.user = user;
    t.instruction = std::move(instruction);
    t.type = type;
    t.timestamp = 1000;
    t.target_product = target;
    t.target_review = behaviour(target, ds.product(target).parent_asin, 5.0, std::move(review), 1000).review;
    ds.add_task(t);
  };
  task(0, "I need a new electric kettle", data::TaskType::kSearch, 0, "");
  task(0, "Recommend me something to go with my shirt", data::TaskType::kRecommend, 4, "");
  task(0, "Please write a review of this kettle for me", data::TaskType::kReview, 2, "Great kettle, boils fast.");
  task(1, "Find me a kettle", data::TaskType::kSearch, 0, "");
  return ds;
}

//! Embeds by keyword counts, so similarities are known: texts with "ettle" point one way, "hirt" another,
//! anything else is the zero vector (similarity 0 with everything).
class KeywordEmbedder final : public embed::Embedder {
 public:
  std::string name() const override { return "keywords"; }
  std::size_t dim() const override { return 2; }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const override {
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) {
      float k = t.find("ettle") != std::string::npos ? 1.0f : 0.0f;
      float s = t.find("hirt") != std::string::npos ? 1.0f : 0.0f;
      float n = std::sqrt(k * k + s * s);
      out.push_back(n > 0 ? std::vector<float>{k / n, s / n} : std::vector<float>{0, 0});
    }
    return out;
  }
};

//! Always the same ranked ASINs.
class FixedSearch final : public env::SearchBackend {
 public:
  explicit FixedSearch(std::vector<std::string> asins) : asins_(std::move(asins)) {}
  std::vector<std::string> search(std::string_view, int) const override { return asins_; }

 private:
  std::vector<std::string> asins_;
};

class FixedRecommend final : public env::RecommendBackend {
 public:
  explicit FixedRecommend(std::vector<std::string> asins) : asins_(std::move(asins)) {}
  std::vector<std::string> recommend(const std::vector<std::string>&, int) const override { return asins_; }

 private:
  std::vector<std::string> asins_;
};

//! A user that answers with fixed lines, in order, and records what it was told.
class FixedUser final : public env::UserChannel {
 public:
  explicit FixedUser(std::vector<std::string> replies) : replies_(replies.begin(), replies.end()) {}
  std::string reply(const std::string& agent_message) override {
    heard.push_back(agent_message);
    if (replies_.empty()) return "No more to say.";
    std::string r = replies_.front();
    replies_.pop_front();
    return r;
  }
  std::vector<std::string> heard;

 private:
  std::deque<std::string> replies_;
};

//! An agent context without an LLM (set `llm` to add one).
inline AgentContext context_of(const data::Dataset* ds, const embed::Embedder* embedder, std::filesystem::path cache,
                               uint64_t seed) {
  AgentContext c;
  c.ds = ds;
  c.embedder = embedder;
  c.cache_dir = std::move(cache);
  c.seed = seed;
  return c;
}

//! The real client on the loopback server (tiny retry delays, 3 attempts), metered into a ledger: what
//! `pwab run` hands an LLM agent.
struct ServerLlm {
  pwab::test::OpenAITestServer server;
  std::shared_ptr<llm::HttpChatModel> http;
  llm::Ledger ledger{llm::PriceTable::builtin()};

  ServerLlm() {
    llm::EndpointConfig c;
    c.base_url = server.base_url();
    c.api_key = llm::ApiKey("sk-test-fc");
    c.timeout_s = 10;
    c.connect_timeout_s = 2;
    c.retry.max_attempts = 3;
    c.retry.base_delay_s = 0.001;
    c.retry.max_delay_s = 0.01;
    http = std::make_shared<llm::HttpChatModel>(std::make_shared<llm::Endpoint>(std::move(c)));
  }

  LlmAccess access(std::string model = "gpt-4o-mini") {
    LlmAccess a;
    a.model = std::move(model);
    a.open = [this](const std::string& task_key, llm::Role role) -> std::unique_ptr<llm::ChatModel> {
      return std::make_unique<llm::MeteredChatModel>(*http, ledger, role, task_key);
    };
    return a;
  }
};

//! tiny(), built once.
inline const data::Dataset& tiny_dataset() {
  static const data::Dataset d = tiny();
  return d;
}
inline const data::Task& tiny_task(uint32_t i) { return tiny_dataset().tasks(data::Split::kTest)[i]; }

//! What every LLM agent test runs in: an environment whose search always answers kettle 2 then kettle 1 (task 0's
//! target ranks 2 of 2: R = 0.5) and whose recommender answers the socks first (task 1's target), the loopback
//! LLM behind a metered LlmAccess, and a cache directory.
struct AgentWorld {
  explicit AgentWorld(const data::Dataset& ds = tiny_dataset()) : dataset(ds) {}

  const data::Dataset& dataset;
  KeywordEmbedder embedder;
  FixedSearch search{{"B0KETTLE02", "B0KETTLE01"}};
  FixedRecommend recommend{{"B0SOCKS001", "B0MUG00001"}};
  env::Environment env{dataset, &search, &recommend, embedder};
  ServerLlm llm;
  pwab::test::TempDir cache;

  //! The agent context `pwab run` would build: this world's dataset, embedder and cache, seed 7, the LLM.
  AgentContext context(std::string model = "gpt-4o-mini") {
    AgentContext c = context_of(&dataset, &embedder, cache.path(), 7);
    c.llm = llm.access(std::move(model));
    return c;
  }
  //! One episode of `t` with a fresh agent of `f`.
  runner::EpisodeResult run(const AgentFactory& f, const data::Task& t, data::Track track = data::Track::kSingleTurn,
                            env::UserChannel* user = nullptr, int max_steps = 10) {
    auto agent = f.make(t);
    return runner::run_episode(env, t, *agent, user, {track, max_steps});
  }
  //! The body of the i-th request the server received.
  nlohmann::json body(std::size_t i) const { return nlohmann::json::parse(llm.server.requests().at(i).body); }
};

}  // namespace pwab::agents::fctest
