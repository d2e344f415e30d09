// src/agents/remote_agent.h: the `remote` agent: pwab drives the episode and asks an external agent over HTTP
// for each next action (protocol "pwab-agent/1", docs/agents/remote.md).
//
// Each step is one self-contained POST: the episode id, the task, the track, the tools offered, the first
// observation, the user's visible history and the whole conversation so far. The reply names the next action
// ({"name", "arguments", optional "usage"}). Requests carry everything, so an agent can be stateless and a
// retried request is harmless. Transport is llm::Endpoint: timeouts, connection failures, 429 and 5xx are
// retried with backoff, and so are replies that break the protocol (not JSON, no name, non-object arguments);
// when the retries run out the episode throws pwab::Error and the runner records the task as errored (resume
// retries it). A well-formed reply with a bad tool call is not an error: it goes to the environment, which
// answers with an Error observation, as for every agent.
#pragma once
#include <memory>
#include <string>

#include "agents/agent.h"
#include "llm/endpoint.h"

namespace pwab::agents {

//! The protocol name and version every request carries.
inline constexpr const char* kRemoteProtocol = "pwab-agent/1";

//! Everything that configures the remote agent.
struct RemoteOptions {
  std::string url;  //!< where requests are POSTed (`--agent-url`, or `--agent-opt url=URL`): http:// or https://
  //! The agent's identity in the run manifest (`--agent-opt name=LABEL`); "" = the URL. `--resume` refuses a
  //! different name, so with a name the URL may change between sessions (a new port) and the run still resumes.
  std::string name;
  //! Sent as "Authorization: Bearer TOKEN" (`--agent-token` or PWAB_AGENT_TOKEN); never in the manifest or logs.
  std::string token;
  bool product_details = false;  //!< also offer get_product_details_by_asin (as RecMind gets it)
  double timeout_s = 300;        //!< per request attempt: the agent may call a model of its own
  int max_attempts = 4;          //!< HTTP attempts per step, the first included
  double retry_delay_s = 0.5;    //!< the first backoff (doubling, capped at 30 s, jittered)
  int max_in_flight = 64;        //!< requests in flight at once (all episodes of the run)
  int max_steps = 10;            //!< sent as the step budget (the run's cap; the runner enforces it)
};

//! Reads AgentOptions: no memory options (the agent gets the whole visible history and chooses itself); the extra
//! keys `url` (required), `name`, `token`, `product_details` (true|false), `timeout` (seconds), `retries` (attempts ≥ 1),
//! `retry_delay` (seconds), `max_in_flight`, `max_steps` (default `run_max_steps`, the run's cap). UsageError for
//! anything else, a missing or non-HTTP URL.
RemoteOptions parse_remote_options(const AgentOptions& options, int run_max_steps = 10);

class RemoteAgentFactory final : public AgentFactory {
 public:
  //! UsageError without a dataset in the context.
  RemoteAgentFactory(RemoteOptions options, const AgentContext& context);

  std::string name() const override { return "remote"; }
  //! {"protocol", "name", "product_details"}: the agent's identity and what it is offered. The URL is left out
  //! unless it is the name (see RemoteOptions::name); transport settings (timeouts, retries) change no result.
  std::string config_json() const override;
  std::unique_ptr<env::Agent> make(const data::Task& task) const override;

  const RemoteOptions& options() const { return options_; }

 private:
  RemoteOptions options_;
  const data::Dataset* ds_;
  std::string tools_json_;  // the OpenAI schemas offered, as a JSON array text
  std::shared_ptr<const llm::Endpoint> endpoint_;
};

}  // namespace pwab::agents
