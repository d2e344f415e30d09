#include "agents/remote_agent.h"
#include "agents/agent_options.h"
#include "agents/remote_reply.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "core/json_depth.h"
#include "core/error.h"
#include "core/text.h"
#include "env/tools.h"
#include "llm/chat.h"
#include "env/agent.h"

namespace pwab::agents {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kWho = "remote agent";

bool is_http_url(const std::string& url) {
  std::string lower = ascii_lower(url);
  for (std::string_view scheme : {"http://", "https://"})
    if (lower.starts_with(scheme) && lower.size() > scheme.size()) return true;
  return false;
}

// A catalogue number as JSON: the value when it is (or spells) a number, else null.
Json number_or_null(const py::Scalar& s) {
  if (auto x = s.number()) return *x;
  return nullptr;
}

// The user's visible history (what the agent's memory may draw on), oldest first: the product's identity and
// the user's own review of it. Stable on equal timestamps, so the stored order breaks ties.
Json history_json(const data::Dataset& ds, const data::Task& task) {
  std::vector<const data::Behaviour*> history = ds.visible_history(task);
  std::stable_sort(history.begin(), history.end(), [](const data::Behaviour* a, const data::Behaviour* b) {
    return a->review.timestamp < b->review.timestamp;
  });
  Json out = Json::array();
  for (const data::Behaviour* b : history) {
    const data::Product& p = ds.product(b->product);
    out.push_back({{"asin", p.parent_asin},
                   {"title", p.title},
                   {"category", p.main_category},
                   {"price", number_or_null(p.price)},
                   {"rating", number_or_null(b->review.rating)},
                   {"review_title", b->review.title},
                   {"review", b->review.text},
                   {"timestamp", b->review.timestamp}});
  }
  return out;
}

// A fresh episode id: the task key (readable in the agent's logs) and 64 random bits (unique across runs and
// resumed sessions, so an agent that keeps state per episode never mixes two episodes of one task).
std::string new_episode_id(const data::Task& task) {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  uint64_t bits;
  {
    std::lock_guard lock(mu);
    bits = gen();
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return data::task_key(task) + "-" + hex;
}

class RemoteAgent final : public env::Agent {
 public:
  RemoteAgent(const data::Dataset& ds, const RemoteOptions& options, const std::string& tools_json,
              const llm::Endpoint& endpoint)
      : ds_(ds), options_(options), tools_json_(tools_json), endpoint_(endpoint) {}

  void begin(const data::Task& task, const std::string& first_observation, data::Track track) override {
    request_ = {{"protocol", kRemoteProtocol},
                {"episode_id", new_episode_id(task)},
                {"task", {{"key", data::task_key(task)}, {"user_id", ds_.user(task.user).id}}},
                {"track", data::to_string(track)},
                {"max_steps", options_.max_steps},
                {"tools", Json::parse(tools_json_)},
                {"first_observation", first_observation},
                {"history", history_json(ds_, task)},
                {"conversation", Json::array()}};
    pending_.reset();
  }

  env::AgentStep next(const std::string& observation) override {
    // The previous action's observation completes its turn of the conversation.
    if (pending_) {
      Json arguments = Json::parse(pending_->arguments_json, nullptr, false);
      request_["conversation"].push_back(
          {{"action", {{"name", pending_->name}, {"arguments", arguments}}}, {"observation", observation}});
    }
    request_["step"] = request_["conversation"].size() + 1;
    llm::PostResult reply;
    try {
      reply = endpoint_.post_json("", request_.dump(), remote_reply_problem);
    } catch (const llm::InfraError& e) {
      throw llm::InfraError(std::string(kWho) + ": " + e.what(), e.http_status(), e.attempts());  // say who failed
    }
    env::AgentStep step = parse_remote_reply(reply.body);
    pending_ = step.action;
    return step;
  }

 private:
  const data::Dataset& ds_;
  const RemoteOptions& options_;
  const std::string& tools_json_;
  const llm::Endpoint& endpoint_;
  Json request_;
  std::optional<env::Action> pending_;  // the action whose observation the next call brings
};

}  // namespace

RemoteOptions parse_remote_options(const AgentOptions& options, int run_max_steps) {
  OptionReader r("remote", options);
  r.no_memory("it receives the whole visible history");
  RemoteOptions o;
  o.url = std::string(trim(r.text("url").value_or("")));
  o.name = r.text("name").value_or(o.name);
  o.token = r.text("token").value_or(o.token);
  o.product_details = r.flag("product_details", o.product_details);
  o.timeout_s = r.number("timeout", o.timeout_s, 0.001, 86400);
  o.max_attempts = r.integer("retries", o.max_attempts, 1, 100);
  o.retry_delay_s = r.number("retry_delay", o.retry_delay_s, 0, 600);
  o.max_in_flight = r.integer("max_in_flight", o.max_in_flight, 1, 4096);
  o.max_steps = r.integer("max_steps", run_max_steps, 1, 1000);
  r.finish();
  if (o.url.empty()) throw UsageError(std::string(kWho) + " needs the agent's URL: --agent-url URL");
  if (!is_http_url(o.url))
    throw UsageError(std::string(kWho) + ": --agent-url '" + llm::redact_url(o.url) +
                     "' is not an http:// or https:// URL");
  return o;
}

RemoteAgentFactory::RemoteAgentFactory(RemoteOptions options, const AgentContext& context)
    : options_(std::move(options)), ds_(context.ds), tools_json_(env::tools_json(options_.product_details)) {
  if (!ds_) throw UsageError(std::string(kWho) + ": no dataset");
  llm::EndpointConfig c;
  c.base_url = options_.url;  // requests go to the URL itself (path "")
  c.api_key = llm::ApiKey(options_.token);  // the bearer token, redacted wherever the endpoint logs
  c.timeout_s = options_.timeout_s;
  c.connect_timeout_s = std::min(10.0, options_.timeout_s);
  c.max_in_flight = options_.max_in_flight;
  c.retry.max_attempts = options_.max_attempts;
  c.retry.base_delay_s = options_.retry_delay_s;
  c.retry.max_delay_s = 30;
  c.log = context.log;
  endpoint_ = std::make_shared<llm::Endpoint>(std::move(c));
}

std::string RemoteAgentFactory::config_json() const {
  Json j = {{"protocol", kRemoteProtocol},
            {"name", options_.name.empty() ? llm::redact_url(options_.url) : options_.name},
            {"product_details", options_.product_details}};
  return j.dump();
}

std::unique_ptr<env::Agent> RemoteAgentFactory::make(const data::Task& task) const {
  (void)task;
  return std::make_unique<RemoteAgent>(*ds_, options_, tools_json_, *endpoint_);
}

}  // namespace pwab::agents
