// libFuzzer target: HTTP request bodies through the episode service, as `pwab serve` hands them on. The input's
// lines are bodies: the first starts an episode (POST /v1/episodes), each next one is an action (POST .../step);
// then the episode's state is read and it is ended. Every body must either work or be refused with a
// RequestError (a 4xx), and every answer must be JSON that dumps.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/json_depth.h"
#include "serve/episode_service.h"
#include "serve_world.h"

namespace {

using Json = nlohmann::json;

// What http_server.cpp's parse_body does: an empty body is {}, a deep one is refused before parsing.
Json body_of(std::string_view text) {
  if (text.find_first_not_of(" \t\r") == std::string_view::npos) return Json::object();
  if (pwab::json_nests_deeper_than(text)) throw pwab::serve::RequestError(400, "json_too_deep", "too deep");
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw pwab::serve::RequestError(400, "malformed_json", "not JSON");
  return j;
}

void check_answer(const Json& answer) {
  (void)answer.dump(-1, ' ', false, Json::error_handler_t::replace);  // what the server sends
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto owned = pwab::fuzz::fresh_service();
  pwab::serve::EpisodeService& service = *owned;
  auto lines = pwab::fuzz::lines_of(input);
  if (lines.empty()) return 0;
  std::string id;
  try {
    Json started = service.start(body_of(lines[0]));
    check_answer(started);
    if (!started.contains("episode_id") || !started["episode_id"].is_string()) std::abort();  // a start must name it
    id = started["episode_id"].get<std::string>();
  } catch (const pwab::serve::RequestError& e) {
    if (e.status < 400 || e.status > 499) std::abort();  // the client's fault is a 4xx
    return 0;
  }
  for (std::size_t i = 1; i < lines.size() && i < 64; ++i) {
    try {
      check_answer(service.step(id, body_of(lines[i])));
    } catch (const pwab::serve::RequestError& e) {
      if (e.status < 400 || e.status > 499) std::abort();
    }
  }
  try {
    check_answer(service.state(id));
    check_answer(service.end(id));
  } catch (const pwab::serve::RequestError& e) {
    if (e.status < 400 || e.status > 499) std::abort();
  }
  if (service.n_sessions() != 0) std::abort();  // end always lets the episode go
  return 0;
}
