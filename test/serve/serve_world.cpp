// The shared serve test world (serve_world.h).
#include "serve/serve_world.h"

#include <nlohmann/json.hpp>

#include "data/synth.h"
#include "env/tools.h"
#include "sim/scripted_user.h"

namespace pwab::serve::test {

using Json = nlohmann::json;

std::vector<std::string> IndexBackend::search(std::string_view query, int k) const {
  std::vector<std::string> asins;
  for (auto& hit : index_.search(query, k)) asins.push_back(std::move(hit.asin));
  return asins;
}

World::World() : ds(data::synthesize({data::SynthScale::kMini, 3})) {
  search::Index::build(ds, dir / "index");
  index = search::Index::open(dir / "index");
  search = std::make_unique<IndexBackend>(*index);
  env = std::make_unique<env::Environment>(ds, search.get(), nullptr, embedder);
}

World& world() {
  static World w;
  return w;
}

void ProbingAgent::begin(const data::Task& task, const std::string&, data::Track track) {
  type_ = task.type;
  track_ = track;
  instruction_ = task.instruction;
}

runner::AgentStep ProbingAgent::task_function(const std::string& text) const {
  std::string words = text.substr(0, 160);
  Json args;
  switch (type_) {
    case data::TaskType::kSearch: args = {{"query", words}}; break;
    case data::TaskType::kRecommend: args = {{"product_sequence", Json::array({"B000000000"})}}; break;
    case data::TaskType::kReview: args = {{"review", "In short: " + words}}; break;
  }
  return {{std::string(env::task_function(type_)), args.dump()}};
}

runner::AgentStep ProbingAgent::next(const std::string& observation) {
  std::size_t n = decisions.size();
  runner::AgentStep step;
  if (track_ == data::Track::kSingleTurn) {
    step = task_function(instruction_);
  } else if (n == 0 || n == 2) {
    step = {{std::string(env::kRespond), Json{{"content", n == 0 ? "What matters most to you here?" : "Is that it?"}}.dump()}};
  } else if (n == 1 || n == 3) {
    step = task_function(observation + " " + instruction_);
  } else {
    step = {{std::string(env::kStop), "{}"}};
  }
  step.prompt_tokens = static_cast<int>(observation.size()) + 7;
  step.completion_tokens = static_cast<int>(n) + 1;
  decisions.push_back(step);
  return step;
}

InProcessEpisode run_in_process(const data::Task& task, data::Track track, uint64_t seed, int max_steps) {
  World& w = world();
  ProbingAgent agent;
  std::unique_ptr<env::UserChannel> user;
  if (track == data::Track::kMultiTurn) user = std::make_unique<sim::ScriptedUser>(w.ds, task, seed);
  runner::EpisodeResult result = runner::run_episode(*w.env, task, agent, user.get(), {track, max_steps});
  return {runner::make_record(w.ds, task, result), agent.decisions};
}

std::string without_timing(const std::string& record_json) {
  Json j = Json::parse(record_json);
  j.erase("seconds_env");
  j.erase("seconds_agent");
  return j.dump();
}

std::string as_served(const std::string& record_json) {
  Json j = Json::parse(without_timing(record_json));
  j.erase("type");
  j.erase("target_asin");
  return j.dump();
}

}  // namespace pwab::serve::test
