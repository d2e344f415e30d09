// The episode service: request validation, the session table, and the hand-over to runner::Episode.
#include "serve/episode_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <nlohmann/json.hpp>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/version.h"
#include "data/task_key.h"
#include "env/tools.h"
#include "metrics/metrics.h"
#include "sim/scripted_user.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

RequestError bad_request(const std::string& message) { return RequestError(400, "bad_request", message); }

//! The tools every episode offers, parsed once.
const Json& offered_tools() {
  static const Json tools = Json::parse(env::tools_json(/*include_product_details=*/false));
  return tools;
}

RequestError budget_spent(std::string_view what) {
  return RequestError(402, "budget_reached",
                      fmt::format("{} would call the LLM user simulator, and the server's --budget-usd is spent; "
                                  "episodes without it (user_sim scripted or none) go on",
                                  what));
}

// --- reading request fields: every wrong type is a 400 naming the field -----------------------------------

void require_object(const Json& j, std::string_view what) {
  if (!j.is_object()) throw bad_request(fmt::format("{} must be a JSON object, got {}", what, j.type_name()));
}

//! Unknown fields are refused, so a misspelt option does not silently fall back to its default.
void check_fields(const Json& j, std::string_view what, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (!ok) {
      std::string names;
      for (auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      throw bad_request(fmt::format("{}: unknown field '{}' (known: {})", what, key, names));
    }
  }
}

std::optional<std::string> opt_string(const Json& j, const char* key, std::string_view what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw bad_request(fmt::format("{}: '{}' must be a string, got {}", what, key, it->type_name()));
  return it->get<std::string>();
}

std::optional<int64_t> opt_int(const Json& j, const char* key, std::string_view what, int64_t lo, int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer())
    throw bad_request(fmt::format("{}: '{}' must be an integer, got {}", what, key, it->type_name()));
  // Unsigned values above INT64_MAX are out of every range here.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw bad_request(fmt::format("{}: '{}' must be between {} and {}", what, key, lo, hi));
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) throw bad_request(fmt::format("{}: '{}' must be between {} and {}", what, key, lo, hi));
  return v;
}

std::optional<bool> opt_bool(const Json& j, const char* key, std::string_view what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw bad_request(fmt::format("{}: '{}' must be true or false, got {}", what, key, it->type_name()));
  return it->get<bool>();
}

std::optional<uint64_t> opt_seed(const Json& j, std::string_view what) {
  auto it = j.find("seed");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    throw bad_request(fmt::format("{}: 'seed' must be a non-negative integer, got {}", what, it->dump()));
  return it->get<uint64_t>();
}

// --- tasks ---------------------------------------------------------------------------------------------

data::Split task_split(std::string_view name) {
  auto split = data::parse_split(name);
  if (!split || (*split != data::Split::kTrain && *split != data::Split::kTest))
    throw bad_request(fmt::format("split must be test or train, got '{}'", name));
  return *split;
}

}  // namespace

const data::Task& find_task(const data::Dataset& ds, std::string_view key) {
  const std::optional<data::TaskKey> parsed = data::parse_task_key(key);
  if (!parsed)
    throw bad_request(fmt::format(
        "task must be '<split>/<index>' with split test or train and a decimal index, such as 'test/17'; got '{}'",
        key));
  const auto& tasks = ds.tasks(parsed->split);
  if (parsed->index >= tasks.size())
    throw RequestError(404, "unknown_task", fmt::format("no task '{}': the {} split has {} tasks", key,
                                                        data::to_string(parsed->split), tasks.size()));
  return tasks[parsed->index];
}

namespace {

Json scalar_json(const py::Scalar& s) {
  switch (s.kind) {
    case py::Scalar::Kind::kInt: return s.i;
    case py::Scalar::Kind::kFloat: return s.f;
    case py::Scalar::Kind::kStr: return s.s;
    case py::Scalar::Kind::kNone: break;
  }
  return nullptr;
}

//! The behaviours an agent's memory may use (what the in-process agents read from Dataset::visible_history).
Json history_json(const data::Dataset& ds, const data::Task& task) {
  Json out = Json::array();
  for (const data::Behaviour* b : ds.visible_history(task)) {
    const data::Product& p = ds.product(b->product);
    out.push_back({{"asin", p.parent_asin},
                   {"title", p.title},
                   {"rating", scalar_json(b->review.rating)},
                   {"review_title", b->review.title},
                   {"review_text", b->review.text},
                   {"timestamp", b->review.timestamp}});
  }
  return out;
}

std::string_view track_name(data::Track t) { return data::to_string(t); }

Json reward_json(const env::Reward& r) { return {{"function_acc", r.function_acc}, {"result_acc", r.result_acc}}; }

//! The action of a step request: {"name", "arguments"} or an OpenAI tool call {"function": {...}}.
runner::AgentStep parse_action(const Json& request) {
  constexpr std::string_view kWhat = "step";
  require_object(request, kWhat);
  check_fields(request, kWhat, {"name", "arguments", "usage", "function", "type", "id"});
  const Json* call = &request;
  if (auto f = request.find("function"); f != request.end()) {
    require_object(*f, "step 'function'");
    call = &*f;
  }
  runner::AgentStep step;
  auto name = opt_string(*call, "name", kWhat);
  if (!name || name->empty())
    throw bad_request("step: 'name' is required: a tool name, \"respond\" (arguments {\"content\": ...}) or \"stop\"");
  step.action.name = *name;
  if (auto a = call->find("arguments"); a != call->end() && !a->is_null()) {
    // A string is passed on verbatim, as an LLM's tool call arguments are: malformed JSON in it becomes an
    // Error observation, exactly as in-process, rather than a refused request.
    if (a->is_string()) step.action.arguments_json = a->get<std::string>();
    else if (a->is_object()) step.action.arguments_json = a->dump();
    else throw bad_request(fmt::format("step: 'arguments' must be an object or a JSON text, got {}", a->type_name()));
  }
  if (auto u = request.find("usage"); u != request.end() && !u->is_null()) {
    require_object(*u, "step 'usage'");
    step.prompt_tokens = static_cast<int>(opt_int(*u, "prompt_tokens", "step usage", 0, 1'000'000'000).value_or(0));
    step.completion_tokens =
        static_cast<int>(opt_int(*u, "completion_tokens", "step usage", 0, 1'000'000'000).value_or(0));
  }
  return step;
}

RequestError unknown_episode(std::string_view episode_id, double idle_timeout_s) {
  return RequestError(404, "unknown_episode",
                      fmt::format("no open episode '{}' (it may have ended, or expired after {} s idle)", episode_id,
                                  idle_timeout_s));
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

//! One open episode. `mu` serialises the requests on it; `last_used` is read by expire_idle without the lock.
struct EpisodeService::Slot {
  std::mutex mu;
  std::string id;
  const data::Task* task = nullptr;
  std::string user_sim;
  uint64_t seed = 0;
  std::unique_ptr<env::UserChannel> user;
  std::unique_ptr<runner::Episode> episode;
  std::atomic<double> last_used{0};
  double last_answer = 0;  // when the last observation went out: the agent's thinking time starts there
  bool closed = false;     // ended or expired; a request that found the slot just before then gets a 404
  std::optional<runner::TaskRecord> record;  // set once the episode finished (and was recorded)
  int trial = 0;
  double idle_timeout_s = 0;  // this episode's: the server's, or shorter when the start asked
  std::size_t bytes = 0;  // of actions and observations so far (ServiceOptions::max_episode_bytes)
  runner::RunDirectory* claimed_in = nullptr;  // the run directory whose (task, trial) this episode holds
};

EpisodeService::EpisodeService(const env::Environment& env, ServiceOptions options, runner::RunDirectory* out)
    : EpisodeService(env, std::move(options), RecordSinks{out, out}) {}

EpisodeService::EpisodeService(const env::Environment& env, ServiceOptions options, RecordSinks sinks)
    : env_(env), options_(std::move(options)), sinks_(sinks) {
  if (!options_.clock) options_.clock = steady_seconds;
}

EpisodeService::~EpisodeService() = default;

double EpisodeService::now() const { return options_.clock(); }

// 128 bits from the kernel's random source: an id says nothing about the ids handed out before or after it, so
// holding one episode gives no way to reach another.
std::string EpisodeService::new_episode_id() {
  // 128 bits of the kernel's random source a time, drawn 4 KiB ahead per thread (one getrandom for 256 ids: the
  // same bits, a thousandth of the system calls when rollouts reset thousands of times a second).
  thread_local std::array<uint64_t, 512> pool;
  thread_local std::size_t used = pool.size();
  if (used + 2 > pool.size()) {
    auto* bytes = reinterpret_cast<unsigned char*>(pool.data());
    std::size_t got = 0;
    while (got < sizeof pool) {
      ssize_t n = getrandom(bytes + got, sizeof pool - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(std::string("episode id: getrandom failed: ") + std::strerror(errno));
      got += static_cast<std::size_t>(n);
    }
    used = 0;
  }
  const uint64_t a = pool[used], b = pool[used + 1];
  pool[used] = pool[used + 1] = 0;  // an id's bits are not kept once given out
  used += 2;
  return fmt::format("ep_{:016x}{:016x}", a, b);
}

void EpisodeService::check_episode_id(std::string_view id) {
  const bool ok = !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (!ok)
    throw bad_request(fmt::format("start: 'episode_id' must be 1 to 128 letters, digits, '_' or '-', got '{}'",
                                  id.substr(0, 200)));
}

// A recorded run counts each (task, trial) once: an episode may start only when its run directory has no clean
// record of it and no other open episode holds it, so no replay can replace a finished record. With `next_trial`
// the episode takes the lowest trial of the task that is neither recorded nor being played (RL rollouts play a
// task many times, each a trial of its own).
void EpisodeService::claim(Slot& slot, runner::RunDirectory* dir, const std::string& key, bool next_trial) {
  if (!dir) return;
  std::lock_guard lock(claims_mu_);
  if (next_trial) {
    int& hint = next_trial_hint_[{dir, key}];  // every trial below it is taken
    int t = hint;
    while (dir->is_done(runner::RecordId{key, t}) || claims_.contains({dir, key, t})) ++t;
    if (t > kMaxTrial)
      throw RequestError(409, "already_recorded", fmt::format("task {} has every trial up to {} recorded", key, kMaxTrial));
    if (t == hint) ++hint;
    slot.trial = t;
  }
  if (dir->is_done(runner::RecordId{key, slot.trial}))
    throw RequestError(409, "already_recorded",
                       fmt::format("task {} trial {} already has a record in {}; a recorded run counts each task "
                                   "once per trial (start it with \"trial\": N for another trial, or \"next\")",
                                   key, slot.trial, dir->path().string()));
  if (!claims_.emplace(dir, key, slot.trial).second)
    throw RequestError(409, "in_progress",
                       fmt::format("task {} trial {} is being played in another open episode", key, slot.trial));
  slot.claimed_in = dir;
}

void EpisodeService::release(Slot& slot) {
  if (!slot.claimed_in) return;
  std::lock_guard lock(claims_mu_);
  const std::string key = runner::task_key(*slot.task);
  claims_.erase({slot.claimed_in, key, slot.trial});
  // A trial given back (dropped unrecorded) may be taken again by the next "next".
  if (auto it = next_trial_hint_.find({slot.claimed_in, key}); it != next_trial_hint_.end() && slot.trial < it->second)
    it->second = slot.trial;
  slot.claimed_in = nullptr;
}

runner::RunDirectory* EpisodeService::sink(data::Track track) const {
  return track == data::Track::kSingleTurn ? sinks_.single_turn : sinks_.multi_turn;
}

std::size_t EpisodeService::n_sessions() const {
  std::shared_lock lock(mu_);
  return slots_.size();
}

Json EpisodeService::info() const {
  const data::Dataset& ds = env_.dataset();
  return {{"name", "pwab"},
          {"version", kVersion},
          {"dataset",
           {{"users", ds.users().size()},
            {"products", ds.products().size()},
            {"tasks", {{"train", ds.tasks(data::Split::kTrain).size()}, {"test", ds.tasks(data::Split::kTest).size()}}}}},
          {"tools", Json::parse(env::tools_json(/*include_product_details=*/true))},
          {"actions", {"respond", "stop"}},
          {"tracks", {"single", "multi"}},
          {"user_sims", options_.llm_user ? Json{"none", "scripted", "llm"} : Json{"none", "scripted"}},
          {"limits",
           {{"max_sessions", options_.max_sessions},
            {"idle_timeout_s", options_.idle_timeout_s},
            {"max_steps_limit", options_.max_steps_limit},
            {"default_max_steps", {{"single", options_.default_max_steps_single}, {"multi", options_.default_max_steps_multi}}},
            {"max_list_limit", options_.max_list_limit}}},
          {"sessions", n_sessions()}};
}

Json EpisodeService::list_tasks(const Json& query) const {
  constexpr std::string_view kWhat = "task list";
  require_object(query, kWhat);
  check_fields(query, kWhat, {"split", "offset", "limit", "history"});
  data::Split split = task_split(opt_string(query, "split", kWhat).value_or("test"));
  const bool with_history = opt_bool(query, "history", kWhat).value_or(false);
  const auto& tasks = env_.dataset().tasks(split);
  auto offset = static_cast<std::size_t>(opt_int(query, "offset", kWhat, 0, INT64_MAX).value_or(0));
  auto limit = static_cast<std::size_t>(
      opt_int(query, "limit", kWhat, 0, static_cast<int64_t>(options_.max_list_limit)).value_or(100));
  Json list = Json::array();
  for (std::size_t i = offset; i < tasks.size() && i - offset < limit; ++i) {
    list.push_back({{"task", runner::task_key(tasks[i])},
                    {"user_id", env_.dataset().user(tasks[i].user).id},
                    {"instruction", tasks[i].instruction}});
    if (with_history) list.back()["history"] = history_json(env_.dataset(), tasks[i]);
  }
  return {{"split", data::to_string(split)}, {"offset", offset}, {"total", tasks.size()}, {"tasks", std::move(list)}};
}

Json EpisodeService::start(const Json& request) {
  constexpr std::string_view kWhat = "start";
  require_object(request, kWhat);
  check_fields(request, kWhat,
               {"task", "track", "user_sim", "max_steps", "seed", "history", "trial", "episode_id", "idle_timeout_s"});
  auto key = opt_string(request, "task", kWhat);
  if (!key) throw bad_request("start: 'task' is required, e.g. \"test/17\" (GET /v1/tasks lists them)");
  const data::Task& task = find_task(env_.dataset(), *key);

  std::string track_text = opt_string(request, "track", kWhat).value_or("single");
  const std::optional<data::Track> parsed_track = data::parse_track(track_text);
  if (!parsed_track)
    throw bad_request(fmt::format("start: 'track' must be \"single\" or \"multi\", got '{}'", track_text));
  const data::Track track = *parsed_track;
  std::string user_sim = opt_string(request, "user_sim", kWhat).value_or(track == data::Track::kSingleTurn ? "none" : "scripted");
  if (user_sim != "none" && user_sim != "scripted" && user_sim != "llm")
    throw bad_request(fmt::format("start: 'user_sim' must be \"none\", \"scripted\" or \"llm\", got '{}'", user_sim));
  if (track == data::Track::kSingleTurn && user_sim != "none")
    throw bad_request("start: the single-turn track has no user simulator (use \"track\": \"multi\")");
  if (user_sim == "llm" && !options_.llm_user)
    throw bad_request("start: this server has no LLM user simulator (start `pwab serve` with --user-model)");
  if (user_sim == "llm" && options_.budget_reached && options_.budget_reached()) throw budget_spent("start");
  int default_steps = track == data::Track::kSingleTurn ? options_.default_max_steps_single : options_.default_max_steps_multi;
  int max_steps = static_cast<int>(opt_int(request, "max_steps", kWhat, 1, options_.max_steps_limit).value_or(default_steps));
  uint64_t seed = opt_seed(request, kWhat).value_or(options_.seed);
  bool with_history = opt_bool(request, "history", kWhat).value_or(true);
  const bool next_trial = request.contains("trial") && request["trial"] == "next";
  const int trial = next_trial ? 0 : static_cast<int>(opt_int(request, "trial", kWhat, 0, kMaxTrial).value_or(0));
  double idle_timeout_s = options_.idle_timeout_s;
  if (auto it = request.find("idle_timeout_s"); it != request.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() < 1 || it->get<double>() > options_.idle_timeout_s)
      throw bad_request(fmt::format("start: 'idle_timeout_s' must be a number of seconds from 1 to the server's {} "
                                    "(--idle-timeout)", options_.idle_timeout_s));
    idle_timeout_s = it->get<double>();
  }
  std::optional<std::string> chosen_id = opt_string(request, "episode_id", kWhat);
  if (chosen_id) check_episode_id(*chosen_id);

  auto slot = std::make_shared<Slot>();
  slot->id = chosen_id ? *chosen_id : new_episode_id();
  slot->task = &task;
  slot->trial = trial;
  slot->idle_timeout_s = idle_timeout_s;
  claim(*slot, sink(track), *key, next_trial);
  struct Unclaim {  // gives the (task, trial) back when the start fails after this point
    EpisodeService* service;
    Slot* slot;
    ~Unclaim() {
      if (slot) service->release(*slot);
    }
  } unclaim{this, slot.get()};
  slot->user_sim = user_sim;
  slot->seed = seed;
  // The same user `pwab run` gives this task: the scripted user is seeded with the run seed (it mixes in the
  // task's split and index itself), so a served episode replays an in-process one exactly.
  if (user_sim == "scripted") slot->user = std::make_unique<sim::ScriptedUser>(env_.dataset(), task, seed);
  if (user_sim == "llm") slot->user = options_.llm_user(task, seed, slot->id);
  slot->episode = std::make_unique<runner::Episode>(env_, task, slot->user.get(), runner::EpisodeOptions{track, max_steps});
  std::string observation = slot->episode->reset();
  slot->bytes = observation.size();
  slot->last_answer = now();
  slot->last_used = slot->last_answer;

  {
    std::unique_lock lock(mu_);
    if (slots_.size() >= options_.max_sessions) {
      lock.unlock();
      expire_idle();
      lock.lock();
    }
    if (slots_.size() >= options_.max_sessions)
      throw RequestError(429, "too_many_sessions",
                         fmt::format("{} episodes are open, the most this server allows; end finished ones "
                                     "(POST /v1/episodes/ID/end) or wait for idle ones to expire",
                                     options_.max_sessions));
    if (!slots_.emplace(slot->id, slot).second)
      throw RequestError(409, "episode_exists", fmt::format("an episode '{}' is open already", slot->id));
  }
  unclaim.slot = nullptr;
  Json out = {{"episode_id", slot->id},
              {"task", *key},
              {"trial", slot->trial},
              {"track", track_text},
              {"user_sim", user_sim},
              {"seed", seed},
              {"max_steps", max_steps},
              {"observation", std::move(observation)},
              {"tools", offered_tools()}};
  if (with_history) out["history"] = history_json(env_.dataset(), task);
  return out;
}

std::shared_ptr<EpisodeService::Slot> EpisodeService::find(std::string_view episode_id) const {
  std::shared_lock lock(mu_);
  auto it = slots_.find(episode_id);
  if (it == slots_.end()) throw unknown_episode(episode_id, options_.idle_timeout_s);
  return it->second;
}

namespace {

// The record as a client may see it: without the task's type and target, which would tell it how to replay the
// task (the run directory's copy keeps them for `pwab score`).
Json client_view(const runner::TaskRecord& record) {
  Json j = Json::parse(record.to_json_line());
  j.erase("type");
  j.erase("target_asin");
  return j;
}

RequestError gone(std::string_view episode_id) {
  return RequestError(404, "unknown_episode", fmt::format("episode '{}' has just ended or expired", episode_id));
}

}  // namespace

void EpisodeService::record(Slot& slot, runner::TaskRecord record) {
  record.trial = slot.trial;
  if (slot.user_sim == "llm" && options_.usage_json) record.usage_json = options_.usage_json(slot.id);
  if (slot.user) record.user_json = slot.user->record_json();  // e.g. the LLM user's leak guard counts
  if (auto* dir = sink(slot.episode->options().track)) {
    try {
      dir->append(record);
    } catch (const std::exception& e) {
      if (options_.log)
        options_.log(fmt::format("episode {} of {} (trial {}) finished but was not recorded: {}", slot.id,
                                 record.task_key, record.trial, e.what()));
      release(slot);  // nothing was recorded (a full disk): the (task, trial) may be played again
      throw;
    }
  }
  release(slot);  // the run directory's record holds the (task, trial) from now on
  slot.record = std::move(record);
}

Json EpisodeService::step(std::string_view episode_id, const Json& action) {
  runner::AgentStep decision = parse_action(action);  // a malformed request changes nothing
  auto slot = find(episode_id);
  std::lock_guard lock(slot->mu);
  if (slot->closed) throw gone(episode_id);
  runner::Episode& episode = *slot->episode;
  if (episode.finished())
    throw RequestError(409, "episode_finished",
                       fmt::format("episode '{}' has finished ({}); POST /v1/episodes/{}/end returns its record",
                                   episode_id, slot->record ? slot->record->ending : "", episode_id));
  // A respond to the LLM user is a paid call: none once the budget is spent (the agent may still act or stop).
  if (slot->user_sim == "llm" && decision.action.name == env::kRespond && options_.budget_reached &&
      options_.budget_reached())
    throw budget_spent("this respond step");
  const std::size_t incoming = decision.action.name.size() + decision.action.arguments_json.size();
  if (slot->bytes + incoming > options_.max_episode_bytes)
    throw RequestError(413, "episode_too_large",
                       fmt::format("episode '{}' holds {} bytes of actions and observations, and this action of {} "
                                   "bytes would take it over the limit of {} (--max-episode-bytes); end it",
                                   episode_id, slot->bytes, incoming, options_.max_episode_bytes));
  double t = now();
  slot->last_used = t;
  episode.add_agent_seconds(std::max(0.0, t - slot->last_answer));
  runner::EpisodeStep step = episode.step(decision);
  slot->bytes += incoming + step.result.observation.size();

  Json out = {{"observation", std::move(step.result.observation)},  // the episode keeps its own copy
              {"reward", reward_json(step.result.reward)},
              {"done", step.result.done},
              {"scored", step.result.scored},
              {"steps", episode.steps()},
              {"max_steps", episode.options().max_steps},
              {"finished", step.finished}};
  if (step.finished) {
    runner::EpisodeResult result = episode.result();
    record(*slot, runner::make_record(env_.dataset(), *slot->task, result));
    out["ending"] = result.ending;
  }
  slot->last_answer = now();
  slot->last_used = slot->last_answer;
  return out;
}

Json EpisodeService::end(std::string_view episode_id) {
  runner::TaskRecord record;
  metrics::TaskScore score = finish(episode_id, &record);
  return {{"record", client_view(record)}, {"score", {{"f", score.f}, {"r", score.r}}}};
}

metrics::TaskScore EpisodeService::finish(std::string_view episode_id, runner::TaskRecord* record_out) {
  std::shared_ptr<Slot> slot;
  {
    std::unique_lock lock(mu_);
    auto it = slots_.find(episode_id);
    if (it == slots_.end()) throw unknown_episode(episode_id, options_.idle_timeout_s);
    slot = it->second;
    slots_.erase(it);
  }
  std::lock_guard lock(slot->mu);
  if (slot->closed) throw gone(episode_id);
  slot->closed = true;
  if (!slot->record) {
    // Ended by the agent before the rules ended it: recorded as it stands, like any other episode.
    runner::EpisodeResult result = slot->episode->result();
    result.ending = "client_end";
    record(*slot, runner::make_record(env_.dataset(), *slot->task, result));
  }
  metrics::TaskScore score = metrics::score_task(slot->record->outcome());
  if (record_out) *record_out = std::move(*slot->record);
  return score;
}

Json EpisodeService::state(std::string_view episode_id) const {
  auto slot = find(episode_id);
  std::lock_guard lock(slot->mu);
  if (slot->closed) throw gone(episode_id);
  slot->last_used = now();
  const runner::Episode& episode = *slot->episode;
  runner::EpisodeResult r = episode.result();
  Json actions = Json::array();
  for (const auto& a : r.actions)
    actions.push_back({{"name", a.action.name},
                       {"arguments", a.action.arguments_json},
                       {"observation", a.observation},
                       {"reward", reward_json(a.reward)},
                       {"done", a.done},
                       {"scored", a.scored}});
  Json attempts = Json::array();
  for (const auto& a : r.attempts) attempts.push_back(reward_json({a.function_acc, a.result_acc}));
  return {{"episode_id", slot->id},
          {"task", runner::task_key(*slot->task)},
          {"track", track_name(episode.options().track)},
          {"user_sim", slot->user_sim},
          {"seed", slot->seed},
          {"max_steps", episode.options().max_steps},
          {"steps", r.steps},
          {"finished", episode.finished()},
          {"ending", episode.finished() ? Json(r.ending) : Json(nullptr)},
          {"observation", r.first_observation},
          {"actions", std::move(actions)},
          {"attempts", std::move(attempts)}};
}

bool EpisodeService::may_block(std::string_view episode_id) const {
  std::shared_lock lock(mu_);
  auto it = slots_.find(episode_id);
  if (it == slots_.end()) return false;  // answered at once: 404
  const Slot& slot = *it->second;
  return slot.user_sim == "llm" || sink(slot.episode->options().track) != nullptr;
}

bool EpisodeService::drop(std::string_view episode_id) {
  std::shared_ptr<Slot> slot;
  {
    std::unique_lock lock(mu_);
    auto it = slots_.find(episode_id);
    if (it == slots_.end()) return false;
    slot = std::move(it->second);
    slots_.erase(it);
  }
  std::lock_guard lock(slot->mu);  // waits for a request on it to finish
  if (slot->closed) return false;
  slot->closed = true;
  release(*slot);  // unfinished: no record, and its (task, trial) may be played again
  return true;
}

std::size_t EpisodeService::expire_idle() {
  const double clock = now();
  std::vector<std::shared_ptr<Slot>> dropped;
  {
    std::unique_lock lock(mu_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      Slot& slot = *it->second;
      // A slot whose lock is held is in the middle of a request: not idle, whatever its timestamp says.
      if (slot.last_used.load() <= clock - slot.idle_timeout_s && slot.mu.try_lock()) {
        slot.closed = true;
        release(slot);  // dropped without a record: its (task, trial) may be played again
        slot.mu.unlock();
        dropped.push_back(std::move(it->second));
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return dropped.size();  // the slots (and their user simulators) are freed here, outside the table's lock
}

}  // namespace pwab::serve
