// libFuzzer target: OpenEnv's messages as `pwab serve` takes them (src/serve/openenv.h): each line of the input is
// one WebSocket message of one session ({"type": "reset" | "step" | "state" | "close", "data"}), then the session
// ends as a dropped connection does; the first line is also tried as the body of the HTTP /reset and /step
// routes. Every message must be answered with one JSON message (an observation, a state, or an error with one of
// OpenEnv's codes), every HTTP body answered or refused with a RequestError, and nothing may be left open.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/json_depth.h"
#include "serve/openenv.h"
#include "serve_world.h"

namespace {

using Json = nlohmann::json;

void check_message(const std::string& text) {
  Json m = Json::parse(text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || !m.contains("type") || !m.contains("data")) std::abort();
  const std::string type = m["type"].get<std::string>();
  if (type == "error") {
    static const std::set<std::string> codes = {"INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR",
                                                "CAPACITY_REACHED", "SESSION_ERROR"};
    if (!codes.contains(m["data"]["code"].get<std::string>())) std::abort();
  } else if (type != "observation" && type != "state") {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto service = pwab::fuzz::fresh_service();
  pwab::serve::OpenEnvFrontEnd front(*service, pwab::fuzz::serve_world().ds, {});
  auto lines = pwab::fuzz::lines_of(input);
  {
    pwab::serve::HttpRequest upgrade;  // a plain /ws upgrade (no session_id)
    upgrade.method = "GET";
    upgrade.target = upgrade.path = "/ws";
    auto session = front.open_session(upgrade);
    if (session->on_open()) std::abort();  // one session is under the cap
    for (std::string_view line : lines) {
      pwab::serve::WsReply reply = session->on_message(line);
      if (reply.close) break;
      check_message(reply.text);
    }
    session->on_end();
  }
  if (!lines.empty()) {
    Json body = pwab::parse_json_or_discarded(lines[0]);
    if (!body.is_discarded()) {
      for (int route = 0; route < 2; ++route) {
        try {
          Json answer = route == 0 ? front.reset(body) : front.step(body);
          (void)answer.dump(-1, ' ', false, Json::error_handler_t::replace);
        } catch (const pwab::serve::RequestError& e) {
          if (e.status < 400 || e.status > 499) std::abort();
        }
      }
    }
  }
  // HTTP resets leave their episodes open (a client steps or abandons them); a dropped WebSocket leaves none.
  if (front.n_ws_sessions() != 0) std::abort();
  return 0;
}
