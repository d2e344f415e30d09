// libFuzzer target: request bodies of `POST /v1/reward` (src/serve/reward.h): one rollout, a batch, or OpenRLHF's
// {query, prompts, labels}. Every body must be answered with JSON or refused with a RequestError (a 4xx), and a
// batch's answer must have one entry per rollout. Rollouts are scored by a stand-in with the real shape (the
// scoring itself is puma's, fuzzed through its inputs elsewhere); completions are read by puma::parse_completion.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "puma/scoring.h"
#include "serve/reward.h"
#include "serve_world.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  nlohmann::json body = pwab::parse_json_or_discarded(input);
  if (body.is_discarded()) return 0;  // the HTTP layer refuses it before the endpoint sees it
  pwab::serve::RewardFunctions f;
  f.score = [](const pwab::data::Task&, std::string_view function, std::string_view parameter) {
    return pwab::serve::RolloutScore{std::string(function), std::string(parameter), 0, 0};
  };
  f.score_completion = [](const pwab::data::Task&, std::string_view completion) {
    auto [function, parameter] = pwab::puma::parse_completion(completion);
    return pwab::serve::RolloutScore{function, parameter, 0, 0};
  };
  pwab::serve::RewardEndpoint endpoint(pwab::fuzz::serve_world().ds, f);
  try {
    nlohmann::json answer = endpoint.answer(body);
    (void)answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (body.is_array() && (!answer.is_array() || answer.size() != body.size())) std::abort();
  } catch (const pwab::serve::RequestError& e) {
    if (e.status < 400 || e.status > 499) std::abort();
  }
  return 0;
}
