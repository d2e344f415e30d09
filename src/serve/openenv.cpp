// OpenEnv's reset/step/state over EpisodeService, and its WebSocket session (openenv.h says what maps to what).
#include "serve/openenv.h"

#include <fmt/format.h>

#include <initializer_list>
#include <random>

#include "core/json_depth.h"
#include "core/json_writer.h"
#include "core/rng.h"
#include "core/version.h"
#include "env/tools.h"
#include "runner/results.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

OpenEnvFrontEnd::Invalid invalid(const std::string& message) {
  return OpenEnvFrontEnd::Invalid(422, "bad_request", message);
}

void refuse_unknown_fields(const Json& j, std::string_view what, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (ok) continue;
    std::string names;
    for (auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    throw invalid(fmt::format("{}: unknown field '{}' (known: {})", what, key, names));
  }
}

Json error_data(std::string_view message, std::string_view openenv_code, const RequestError* e) {
  Json data = {{"message", message}, {"code", openenv_code}};
  if (e) {
    data["pwab_code"] = e->code;
    data["status"] = e->status;
  }
  return data;
}

//! OpenEnv's WebSocket error code for a refusal of the service.
std::string_view ws_code(const RequestError& e) {
  if (e.code == "unknown_episode") return "SESSION_ERROR";
  if (e.status == 429) return "CAPACITY_REACHED";
  if (e.status >= 500 || e.status == 402) return "EXECUTION_ERROR";
  return "VALIDATION_ERROR";
}

Json ws_error(std::string_view message, std::string_view code, const RequestError* e = nullptr) {
  return {{"type", "error"}, {"data", error_data(message, code, e)}};
}

std::string dump(const Json& j) { return dump_compact(j); }

}  // namespace

OpenEnvFrontEnd::OpenEnvFrontEnd(EpisodeService& service, const data::Dataset& dataset, OpenEnvOptions options)
    : service_(service), dataset_(dataset), options_(options) {}

Json OpenEnvFrontEnd::start_request(const Json& reset) const {
  constexpr std::string_view kWhat = "reset";
  if (reset.is_null()) return start_request(Json::object());
  if (!reset.is_object()) throw invalid(fmt::format("reset: the body must be a JSON object, got {}", reset.type_name()));
  refuse_unknown_fields(reset, kWhat,
                        {"seed", "episode_id", "task", "split", "index", "track", "user_sim", "max_steps", "trial",
                         "history", "idle_timeout_s"});
  Json start = Json::object();
  for (const char* passed : {"track", "user_sim", "max_steps", "history", "episode_id", "idle_timeout_s"})
    if (reset.contains(passed) && !reset[passed].is_null()) start[passed] = reset[passed];
  if (reset.contains("seed") && !reset["seed"].is_null()) start["seed"] = reset["seed"];
  start["trial"] = reset.contains("trial") && !reset["trial"].is_null() ? reset["trial"] : Json("next");

  if (reset.contains("task") && !reset["task"].is_null()) {
    if (reset.contains("split") || reset.contains("index"))
      throw invalid("reset: give either 'task' (\"test/17\") or 'split' and 'index', not both");
    start["task"] = reset["task"];
    return start;
  }
  data::Split split = options_.default_split;
  if (reset.contains("split") && !reset["split"].is_null()) {
    const Json& s = reset["split"];
    auto parsed = s.is_string() ? data::parse_split(s.get<std::string>()) : std::nullopt;
    if (!parsed || (*parsed != data::Split::kTrain && *parsed != data::Split::kTest))
      throw invalid(fmt::format("reset: 'split' must be \"train\" or \"test\", got {}", s.dump()));
    split = *parsed;
  }
  const std::size_t n = dataset_.tasks(split).size();
  if (n == 0) throw invalid(fmt::format("reset: the {} split has no tasks", data::to_string(split)));
  std::size_t index = 0;
  if (reset.contains("index") && !reset["index"].is_null()) {
    const Json& i = reset["index"];
    if (!i.is_number_unsigned() && !(i.is_number_integer() && i.get<int64_t>() >= 0))
      throw invalid(fmt::format("reset: 'index' must be a non-negative integer, got {}", i.dump()));
    index = i.get<std::size_t>();  // past the end: the service names the split's size (404 unknown_task)
  } else if (start.contains("seed")) {
    // The same seed draws the same task, so a seeded reset replays.
    if (!start["seed"].is_number_unsigned() && !(start["seed"].is_number_integer() && start["seed"].get<int64_t>() >= 0))
      throw invalid(fmt::format("reset: 'seed' must be a non-negative integer, got {}", start["seed"].dump()));
    index = static_cast<std::size_t>(derive_seed(start["seed"].get<uint64_t>(), 0x7a5c) % n);
  } else {
    static thread_local std::mt19937_64 draw(std::random_device{}());
    index = static_cast<std::size_t>(draw() % n);
  }
  start["task"] = fmt::format("{}/{}", data::to_string(split), index);
  return start;
}

Json OpenEnvFrontEnd::reset_answer(Json started) const {
  Json observation = {{"text", std::move(started["observation"])},
                      {"episode_id", started["episode_id"]},
                      {"task", started["task"]},
                      {"trial", started["trial"]},
                      {"track", started["track"]},
                      {"user_sim", started["user_sim"]},
                      {"seed", started["seed"]},
                      {"steps", 0},
                      {"max_steps", started["max_steps"]},
                      {"finished", false},
                      {"tools", std::move(started["tools"])}};
  if (started.contains("history")) observation["history"] = std::move(started["history"]);
  return {{"observation", std::move(observation)}, {"reward", nullptr}, {"done", false}};
}

Json OpenEnvFrontEnd::reset(const Json& request) {
  Json started;
  try {
    started = service_.start(start_request(request));
  } catch (const Invalid&) {
    throw;
  } catch (const RequestError& e) {
    if (e.status == 400) throw Invalid(422, e.code, e.what());
    throw;
  }
  return reset_answer(std::move(started));
}

Json OpenEnvFrontEnd::step_episode(const std::string& episode_id, const Json& action) {
  Json call = action;
  if (call.is_object()) call.erase("metadata");  // OpenEnv's Action base field; nothing of pwab's
  Json r;
  try {
    r = service_.step(episode_id, call);
  } catch (const RequestError& e) {
    if (e.status == 400) throw Invalid(422, e.code, e.what());
    throw;
  }
  Json observation = {{"text", std::move(r["observation"])},
                      {"episode_id", episode_id},
                      {"steps", r["steps"]},
                      {"max_steps", r["max_steps"]},
                      {"finished", r["finished"]},
                      {"step_reward", std::move(r["reward"])},
                      {"scored", r["scored"]}};
  if (!r["finished"].get<bool>()) return {{"observation", std::move(observation)}, {"reward", 0.0}, {"done", false}};
  // Finished: the record is written (it was at this step) and the episode ended, so a rollout that never calls
  // again holds no session.
  metrics::TaskScore score = service_.finish(episode_id);
  observation["ending"] = r["ending"];
  observation["score"] = {{"function_acc", score.f}, {"result_acc", score.r}};
  return {{"observation", std::move(observation)}, {"reward", score.r}, {"done", true}};
}

Json OpenEnvFrontEnd::step(const Json& request) {
  constexpr std::string_view kWhat = "step";
  if (!request.is_object()) throw invalid(fmt::format("step: the body must be a JSON object, got {}", request.type_name()));
  refuse_unknown_fields(request, kWhat, {"action", "episode_id", "timeout_s", "request_id"});
  if (!request.contains("action")) throw invalid("step: 'action' is required: {\"name\": ..., \"arguments\": {...}}");
  auto id = request.find("episode_id");
  if (id == request.end() || !id->is_string())
    throw invalid("step: 'episode_id' is required over HTTP: the id /reset returned in its observation (the WebSocket "
                  "at /ws keeps it for you)");
  return step_episode(id->get<std::string>(), request["action"]);
}

Json OpenEnvFrontEnd::state(std::string_view episode_id) const {
  Json s = service_.state(episode_id);
  s["step_count"] = s["steps"];
  return s;
}

Json OpenEnvFrontEnd::metadata() const {
  return {{"name", "pwab"},
          {"description",
           "PersonalWAB: personalized web-agent episodes (search, recommend, review) for one user, with the "
           "benchmark's own reward"},
          {"readme_content", nullptr},
          {"version", kVersion},
          {"author", nullptr},
          {"documentation_url", "docs/rl-engines.md"}};
}

Json OpenEnvFrontEnd::schema() {
  Json tools = Json::parse(env::tools_json(/*include_product_details=*/true));
  Json variants = Json::array();
  for (const Json& tool : tools) {
    const Json& f = tool["function"];
    variants.push_back({{"type", "object"},
                        {"description", f["description"]},
                        {"properties", {{"name", {{"const", f["name"]}}}, {"arguments", f["parameters"]},
                                        {"metadata", {{"type", "object"}}}}},
                        {"required", {"name", "arguments"}},
                        {"additionalProperties", false}});
  }
  variants.push_back({{"type", "object"},
                      {"description", "Say something to the user (multi-turn: the user simulator answers)"},
                      {"properties",
                       {{"name", {{"const", "respond"}}},
                        {"arguments",
                         {{"type", "object"},
                          {"properties", {{"content", {{"type", "string"}}}}},
                          {"required", {"content"}}}},
                        {"metadata", {{"type", "object"}}}}},
                      {"required", {"name", "arguments"}},
                      {"additionalProperties", false}});
  variants.push_back({{"type", "object"},
                      {"description", "End the episode (multi-turn)"},
                      {"properties", {{"name", {{"const", "stop"}}}, {"arguments", {{"type", "object"}}},
                                      {"metadata", {{"type", "object"}}}}},
                      {"required", {"name"}},
                      {"additionalProperties", false}});
  Json number = {{"type", "number"}};
  Json reward = {{"type", "object"},
                 {"properties", {{"function_acc", number}, {"result_acc", number}}}};
  Json observation = {
      {"title", "PwabObservation"},
      {"type", "object"},
      {"properties",
       {{"text", {{"type", "string"}, {"description", "what the environment said: the instruction at reset, then the "
                                                       "tool's output or the user's reply"}}},
        {"episode_id", {{"type", "string"}}},
        {"task", {{"type", "string"}, {"description", "<split>/<index>, at reset"}}},
        {"trial", {{"type", "integer"}}},
        {"track", {{"enum", {"single", "multi"}}}},
        {"user_sim", {{"enum", {"none", "scripted", "llm"}}}},
        {"seed", {{"type", "integer"}}},
        {"steps", {{"type", "integer"}}},
        {"max_steps", {{"type", "integer"}}},
        {"finished", {{"type", "boolean"}}},
        {"tools", {{"type", "array"}, {"description", "the OpenAI tool schemas offered (at reset)"}}},
        {"history", {{"type", "array"}, {"description", "the user's visible behaviours (at reset)"}}},
        {"step_reward", reward},
        {"scored", {{"type", "boolean"}}},
        {"ending", {{"type", "string"}}},
        {"score", reward}}},
      {"required", {"text", "episode_id", "steps", "max_steps", "finished"}}};
  Json state = {{"title", "PwabState"},
                {"type", "object"},
                {"properties",
                 {{"episode_id", {{"type", "string"}}},
                  {"step_count", {{"type", "integer"}}},
                  {"task", {{"type", "string"}}},
                  {"track", {{"enum", {"single", "multi"}}}},
                  {"user_sim", {{"type", "string"}}},
                  {"seed", {{"type", "integer"}}},
                  {"max_steps", {{"type", "integer"}}},
                  {"steps", {{"type", "integer"}}},
                  {"finished", {{"type", "boolean"}}},
                  {"ending", {{"type", {"string", "null"}}}},
                  {"observation", {{"type", "string"}}},
                  {"actions", {{"type", "array"}}},
                  {"attempts", {{"type", "array"}}}}},
                {"required", {"episode_id", "step_count"}}};
  return {{"action", {{"title", "PwabAction"}, {"oneOf", std::move(variants)}}},
          {"observation", std::move(observation)},
          {"state", std::move(state)}};
}

// --- the WebSocket session --------------------------------------------------------------------------------

class OpenEnvFrontEnd::Session final : public WsSession {
 public:
  explicit Session(OpenEnvFrontEnd& front) : front_(front) {}

  std::optional<WsReply> on_open() override {
    const std::size_t active = ++front_.ws_sessions_;
    counted_ = true;
    if (active <= front_.options_.max_sessions) return std::nullopt;
    Json e = ws_error(fmt::format("Server at capacity: {}/{} sessions active. Cannot accept new connections.",
                                  active - 1, front_.options_.max_sessions),
                      "CAPACITY_REACHED");
    e["data"]["active_sessions"] = active - 1;
    e["data"]["max_sessions"] = front_.options_.max_sessions;
    return WsReply{dump(e), true};
  }

  bool blocks(std::string_view) const override { return !episode_.empty() && front_.may_block(episode_); }

  WsReply on_message(std::string_view text) override {
    Json message = parse_json_or_discarded(text);
    if (message.is_discarded() || !message.is_object())
      return reply(ws_error(json_nests_deeper_than(text) ? json_depth_message()
                                                         : "Invalid JSON: a message is a JSON object {\"type\", \"data\"}",
                            "INVALID_JSON"));
    auto type = message.find("type");
    const std::string kind = type != message.end() && type->is_string() ? type->get<std::string>() : "";
    try {
      for (const auto& [key, value] : message.items())
        if (key != "type" && key != "data")
          return reply(ws_error(fmt::format("Invalid message: unknown field '{}' (a message is {{\"type\", \"data\"}})", key),
                                "VALIDATION_ERROR"));
      const Json data = message.contains("data") ? message["data"] : Json();
      if (kind == "reset") return reply({{"type", "observation"}, {"data", reset(data)}});
      if (kind == "step") return reply({{"type", "observation"}, {"data", step(data)}});
      if (kind == "state") return reply({{"type", "state"}, {"data", state()}});
      if (kind == "close") {
        end_episode();
        return {"", true};
      }
      return reply(ws_error(fmt::format("Unknown message type: {}", kind), "UNKNOWN_TYPE"));
    } catch (const RequestError& e) {
      return reply(ws_error(e.what(), ws_code(e), &e));
    } catch (const std::exception& e) {
      return reply(ws_error(e.what(), "EXECUTION_ERROR"));
    }
  }

  void on_end() override {
    if (!episode_.empty()) front_.service_.drop(episode_);  // gone mid-episode: no record
    episode_.clear();
    if (counted_) --front_.ws_sessions_;
    counted_ = false;
  }

 private:
  static WsReply reply(const Json& message) { return {dump(message), false}; }

  Json reset(const Json& data) {
    end_episode();
    Json answer = front_.reset(data.is_null() ? Json::object() : data);
    episode_ = answer["observation"]["episode_id"].get<std::string>();
    last_state_ = nullptr;
    return answer;
  }

  Json step(const Json& data) {
    if (episode_.empty())
      throw RequestError(404, "unknown_episode",
                         last_state_.is_null() ? "no episode: send a reset first"
                                               : "the episode is over: send a reset for the next one");
    if (data.is_null()) throw invalid("step: 'data' is the action: {\"name\": ..., \"arguments\": {...}}");
    Json answer;
    try {
      answer = front_.step_episode(episode_, data);
    } catch (const RequestError& e) {
      if (e.code == "unknown_episode") episode_.clear();  // expired while idle
      throw;
    }
    if (answer["done"].get<bool>()) {
      last_state_ = {{"episode_id", episode_},
                     {"step_count", answer["observation"]["steps"]},
                     {"finished", true},
                     {"ending", answer["observation"]["ending"]},
                     {"score", answer["observation"]["score"]}};
      episode_.clear();
    }
    return answer;
  }

  Json state() const {
    if (!episode_.empty()) return front_.state(episode_);
    if (!last_state_.is_null()) return last_state_;
    return {{"episode_id", nullptr}, {"step_count", 0}};
  }

  //! A reset or close ends an unfinished episode as the client's choice: recorded with ending client_end.
  void end_episode() {
    if (episode_.empty()) return;
    std::string id = std::move(episode_);
    episode_.clear();
    try {
      front_.service_.finish(id);
    } catch (const RequestError&) {
      // expired meanwhile: nothing to end
    }
  }

  OpenEnvFrontEnd& front_;
  std::string episode_;   // the open episode, "" when none
  Json last_state_;       // the state of the last finished episode, for a `state` after it
  bool counted_ = false;
};

std::unique_ptr<WsSession> OpenEnvFrontEnd::open_session() { return std::make_unique<Session>(*this); }

}  // namespace pwab::serve
