// The benchmark's tasks as RL episodes (rl_tasks.h).
#include "puma/rl_tasks.h"

#include <optional>

#include "agents/puma_agent.h"
#include "core/error.h"
#include "core/text.h"
#include "env/tools.h"
#include "metrics/metrics.h"
#include "puma/scoring.h"
#include "runner/episode.h"
#include "runner/results.h"
#include "sim/scripted_user.h"

namespace pwab::puma {
namespace {

class SingleTurnEpisode final : public RlEpisode {
 public:
  SingleTurnEpisode(const env::Environment& env, const data::Task& task, const Example& example, bool with_function,
                    bool distinct_reviews)
      : env_(env), task_(task), example_(example), function_turn_(with_function), distinct_reviews_(distinct_reviews) {}
  std::optional<std::string> next_prompt() override {
    if (function_turn_) return agents::puma_function_prompt(example_.instruction);
    if (taken_) return std::nullopt;
    return example_.prompt;
  }
  void take(const std::string& completion) override {
    if (function_turn_) {  // the function, rewarded by function accuracy; the parameter prompt keeps the true tool
      function_right_ = agents::puma_function_from_completion(completion) == env::task_function(example_.type);
      function_turn_ = false;
      return;
    }
    const std::string parameter = agents::puma_generated_part(completion, "### Tool Parameter:\n");
    reward_ = score_parameter(env_, task_, example_.type, parameter);
    // Review similarity rises when a review repeats the words most reviews share; the 3-gram share takes that
    // way out (docs/puma.md, "Reviews that repeat themselves"). Labels' share: 0.995 on average.
    if (distinct_reviews_ && example_.type == data::TaskType::kReview) reward_ *= distinct_ngram_share(parameter, 3);
    taken_ = true;
  }
  double reward() const override { return reward_; }
  std::optional<double> turn_reward(std::size_t turn) const override {
    if (turn == 0 && function_right_) return *function_right_ ? 1.0 : 0.0;
    return std::nullopt;
  }
  // The parameter prompt names the true tool (the function turn, when there is one, comes before it).
  bool asks_search_query() const override { return !function_turn_ && example_.type == data::TaskType::kSearch; }

 private:
  const env::Environment& env_;
  const data::Task& task_;
  const Example& example_;
  bool function_turn_;
  bool distinct_reviews_;
  std::optional<bool> function_right_;
  bool taken_ = false;
  double reward_ = 0;
};

class MultiTurnEpisode final : public RlEpisode {
 public:
  MultiTurnEpisode(const MultiTurnWorld& world, const data::Task& task, uint64_t seed)
      : world_(world), task_(task), user_(world.env->dataset(), task, seed) {}

  std::optional<std::string> next_prompt() override {
    if (!dialogue_) return agents::puma_function_prompt(task_.instruction);
    while (!episode_->finished()) {
      if (!dialogue_->stops_after(observation_)) return prompt();
      env::AgentStep stop;  // the agent stops without asking the model (docs/decisions.md D3)
      stop.action = {std::string(env::kStop), "{}"};
      observation_ = episode_->step(stop).result.observation;
    }
    return std::nullopt;
  }

  void take(const std::string& completion) override {
    if (!dialogue_) {  // the function, once; then the episode starts as the runner starts it
      const std::string function = agents::puma_function_from_completion(completion);  // trimmed
      const auto type = env::task_type_of_function(function);
      dialogue_.emplace(function, agents::puma_references(world_.env->dataset(), task_, type));
      memory_ = agents::puma_memory(world_.env->dataset(), task_, type, *world_.embedder, world_.memory,
                                    *world_.counter);
      runner::EpisodeOptions options;
      options.track = data::Track::kMultiTurn;
      options.max_steps = world_.max_steps;
      episode_.emplace(*world_.env, task_, &user_, options);
      episode_->reset();  // the puma agent does not read the first observation: its first next() gets ""
      return;
    }
    env::AgentStep step;
    step.action = dialogue_->act(completion);
    observation_ = episode_->step(step).result.observation;
  }

  double reward() const override {
    if (!episode_) return 0;
    return metrics::score_task(episode_->result().outcome(data::task_key(task_))).r;
  }

 private:
  std::string prompt() const {
    const std::string& fn = dialogue_->function();
    std::string instruction =
        agents::puma_instruction_text(world_.env->dataset(), task_, env::task_type_of_function(trim(fn))) +
        agents::puma_dialogue_text(dialogue_->turns());
    return agents::puma_param_prompt(instruction, memory_, trim(fn));
  }

  const MultiTurnWorld& world_;
  const data::Task& task_;
  sim::ScriptedUser user_;
  std::optional<agents::PumaDialogue> dialogue_;
  std::optional<runner::Episode> episode_;
  std::string memory_, observation_;
};

}  // namespace

RlTasks single_turn_rl_tasks(const env::Environment& env, const std::vector<Example>& examples, bool with_function,
                             bool distinct_reviews) {
  RlTasks t;
  auto shared = std::make_shared<std::vector<Example>>(examples);
  std::vector<const data::Task*> tasks;
  for (const Example& e : *shared) {
    t.keys.push_back(e.task);
    t.kinds.emplace_back(data::to_string(e.type));
    tasks.push_back(&task_of_key(env.dataset(), e.task));
  }
  t.episode = [&env, shared, tasks, with_function, distinct_reviews](std::size_t i,
                                                                     uint64_t) -> std::unique_ptr<RlEpisode> {
    return std::make_unique<SingleTurnEpisode>(env, *tasks[i], shared->at(i), with_function, distinct_reviews);
  };
  return t;
}

RlTasks multi_turn_rl_tasks(const MultiTurnWorld& world, const std::vector<const data::Task*>& tasks) {
  if (!world.env || !world.embedder || !world.counter) throw UsageError("multi-turn RL: environment, embedder and token counter needed");
  RlTasks t;
  for (const data::Task* task : tasks) {
    t.keys.push_back(data::task_key(*task));
    t.kinds.emplace_back(data::to_string(task->type));
  }
  t.episode = [&world, tasks](std::size_t i, uint64_t seed) -> std::unique_ptr<RlEpisode> {
    return std::make_unique<MultiTurnEpisode>(world, *tasks.at(i), seed);
  };
  return t;
}

}  // namespace pwab::puma
