#include "puma/dialogue_data.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "env/tools.h"
#include "runner/episode.h"
#include "sim/scripted_user.h"

namespace pwab::puma {

std::optional<std::string> puma_text_of_action(const env::Action& action, data::TaskType type, int recommend_length,
                                               const std::vector<std::string>& references) {
  if (action.name == env::kStop) return std::string("stop");
  nlohmann::json args = nlohmann::json::parse(action.arguments_json, nullptr, /*allow_exceptions=*/false);
  if (!args.is_object()) return std::nullopt;
  auto text_of = [&](const char* key) -> std::optional<std::string> {
    auto it = args.find(key);
    if (it == args.end() || !it->is_string()) return std::nullopt;
    std::string s(trim(it->get<std::string>()));
    if (s.empty()) return std::nullopt;
    return s;
  };
  if (action.name == env::kRespond) {
    auto content = text_of("content");
    // one line: the prompt shows each turn on one line, and a newline would end the parameter's first line
    if (!content || content->find('\n') != std::string::npos) return std::nullopt;
    return "Say: " + *content;
  }
  if (action.name != env::task_function(type)) return std::nullopt;
  switch (type) {
    case data::TaskType::kSearch: return text_of("query");
    case data::TaskType::kReview: return text_of("review");
    case data::TaskType::kRecommend: {
      auto it = args.find("product_sequence");
      if (it == args.end() || !it->is_array() || it->empty()) return std::nullopt;
      std::vector<std::string> asins;
      for (const auto& a : *it) {
        if (!a.is_string()) return std::nullopt;
        asins.push_back(a.get<std::string>());
      }
      // the newest items are last, where the recommender looks most; the label keeps those (recommend_label)
      const std::size_t n = std::min(asins.size(), static_cast<std::size_t>(std::max(1, recommend_length)));
      std::string out;
      for (std::size_t i = asins.size() - n; i < asins.size(); ++i) {
        if (!out.empty()) out += ", ";
        auto at = std::find(references.begin(), references.end(), asins[i]);
        out += at == references.end() ? asins[i] : std::to_string(at - references.begin() + 1);
      }
      return out;
    }
  }
  return std::nullopt;
}

std::vector<Example> dialogue_examples(const env::Environment& env, const agents::AgentFactory& teacher,
                                       const std::vector<const data::Task*>& tasks, const embed::Embedder& embedder,
                                       const agents::TokenCounter& counter, const PrepareOptions& prepare,
                                       const DialogueOptions& options, DialogueReport* report) {
  if (options.max_steps < 2) throw UsageError("multi-turn data: the step cap must allow at least 2 steps");
  DialogueReport local;
  DialogueReport& rep = report ? *report : local;
  const data::Dataset& ds = env.dataset();
  std::vector<Example> out;
  runner::EpisodeOptions eo;
  eo.track = data::Track::kMultiTurn;
  eo.max_steps = options.max_steps;
  for (const data::Task* task : tasks) {
    sim::ScriptedUser user(ds, *task, options.seed);
    std::unique_ptr<env::Agent> agent = teacher.make(*task);
    runner::EpisodeResult episode = runner::run_episode(env, *task, *agent, &user, eo);
    ++rep.episodes;
    rep.teacher_steps += episode.steps;
    // The teacher's actions as PUMA would write them; an episode with an action PUMA cannot write is left out.
    std::vector<std::string> texts;
    const std::vector<std::string> references = agents::puma_references(ds, *task, task->type);
    const bool numbered = prepare.memory.recommend_layout == agents::RecommendLayout::kNumbered;
    for (const env::ActionRecord& a : episode.actions) {
      auto text = puma_text_of_action(a.action, task->type, prepare.recommend_length,
                                      numbered ? references : std::vector<std::string>{});
      if (!text) break;
      texts.push_back(std::move(*text));
    }
    if (texts.size() != episode.actions.size() || texts.size() < 2) {
      rep.skipped += texts.size() != episode.actions.size();
      continue;
    }
    const std::string function(env::task_function(task->type));
    const std::string memory = agents::puma_memory(ds, *task, task->type, embedder, prepare.memory, counter);
    const std::string instruction = agents::puma_instruction_text(ds, *task, task->type);
    agents::PumaDialogue dialogue(function, references);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (i > 0) {
        dialogue.stops_after(episode.actions[i - 1].observation);
        Example e;
        e.task = data::task_key(*task);
        e.instruction = task->instruction;
        e.type = task->type;
        e.memory = memory;
        e.prompt = agents::puma_param_prompt(instruction + agents::puma_dialogue_text(dialogue.turns()), memory, function);
        e.target = texts[i];
        rep.stops += texts[i] == "stop";
        rep.responds += texts[i].starts_with("Say: ");
        rep.calls += texts[i] != "stop" && !texts[i].starts_with("Say: ");
        out.push_back(std::move(e));
      }
      dialogue.act(texts[i]);
    }
  }
  rep.examples = static_cast<int>(out.size());
  return out;
}

}  // namespace pwab::puma
