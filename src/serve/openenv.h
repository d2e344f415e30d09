// src/serve/openenv.h: Meta's OpenEnv contract over the episode service: `POST /reset`, `POST /step`, `GET /state`,
// `GET /schema`, `GET /metadata`, `GET /health`, and the persistent WebSocket session at `/ws`.
//
// OpenEnv (meta-pytorch/OpenEnv, src/openenv/core/env_server/types.py and http_server.py) is how TRL, SkyRL and
// other RL engines drive remote environments: a rollout worker resets an episode, steps it with actions, and
// reads back {observation, reward, done}. Here an OpenEnv episode is an episode of EpisodeService (same rules,
// same records with --out), and:
//   - reset's fields are OpenEnv's (seed, episode_id) plus pwab's: task ("test/17"; or split and index; or none,
//     then a task of the split, train by default, drawn from the seed), track, user_sim, max_steps, trial
//     ("next" by default: every rollout of a task with --out is a trial of its own), history;
//   - an action is {"name", "arguments"} (or an OpenAI tool call), as the service takes it;
//   - the observation is a JSON object whose "text" is what the environment said (the tool's output, the user's
//     reply); reward is 0 until the episode finishes, then the benchmark's score of the episode (result
//     accuracy of its best attempt with the right function, metrics::score_task), and done says it finished.
//     A finished episode is ended at once (its record is written then); the observation carries its score;
//   - over HTTP the episode is named by the episode_id that reset returned (a field of /step's body, a query
//     parameter of /state); over the WebSocket, one connection is one session playing one episode at a time:
//     a reset ends the session's open episode (recorded as ended by the client), `close` does the same, and a
//     connection that drops drops its unfinished episode without a record.
// Refusals keep OpenEnv's shapes: over HTTP a 4xx with {"detail": message, "error": {code, message}} (422 for an
// invalid request, as FastAPI answers); over the WebSocket {"type": "error", "data": {"message", "code"}} with
// OpenEnv's codes (INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR, EXECUTION_ERROR, CAPACITY_REACHED,
// SESSION_ERROR) plus pwab's own code and HTTP status.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "serve/episode_service.h"
#include "serve/net_server.h"

namespace pwab::serve {

struct OpenEnvOptions {
  //! WebSocket sessions open at once; one more gets CAPACITY_REACHED and is closed (OpenEnv's
  //! max_concurrent_envs).
  std::size_t max_sessions = 1000;
  //! The split a reset without a task draws from.
  data::Split default_split = data::Split::kTrain;
};

class OpenEnvFrontEnd {
 public:
  //! `service` (and its environment) must outlive this.
  OpenEnvFrontEnd(EpisodeService& service, const data::Dataset& dataset, OpenEnvOptions options);

  //! POST /reset: a ResetRequest -> {"observation", "reward": null, "done": false}.
  nlohmann::json reset(const nlohmann::json& request);
  //! POST /step: {"action", "episode_id", "timeout_s"?, "request_id"?} -> {"observation", "reward", "done"}.
  nlohmann::json step(const nlohmann::json& request);
  //! GET /state?episode_id=: OpenEnv's State (episode_id, step_count) with the episode's fields.
  nlohmann::json state(std::string_view episode_id) const;
  //! GET /schema: JSON Schemas of the action, the observation and the state.
  static nlohmann::json schema();
  //! GET /metadata: OpenEnv's EnvironmentMetadata.
  nlohmann::json metadata() const;
  //! Whether a /step (or a WebSocket step) on this episode may wait (EpisodeService::may_block).
  bool may_block(std::string_view episode_id) const { return service_.may_block(episode_id); }

  //! A WebSocket session (one per connection); over the cap its first message is CAPACITY_REACHED.
  std::unique_ptr<WsSession> open_session();
  std::size_t n_ws_sessions() const { return ws_sessions_; }

  //! Thrown for an invalid request (a 422 over HTTP, VALIDATION_ERROR over the WebSocket).
  struct Invalid : RequestError {
    using RequestError::RequestError;
  };

 private:
  class Session;
  //! The service's start request for a ResetRequest.
  nlohmann::json start_request(const nlohmann::json& reset) const;
  //! {"observation", "reward", "done"} for a start answer.
  nlohmann::json reset_answer(nlohmann::json started) const;
  //! One step of an open episode; ends it when it finishes.
  nlohmann::json step_episode(const std::string& episode_id, const nlohmann::json& action);

  EpisodeService& service_;
  const data::Dataset& dataset_;
  OpenEnvOptions options_;
  std::atomic<std::size_t> ws_sessions_{0};
  std::atomic<uint64_t> draws_{0};
};

}  // namespace pwab::serve
