// src/assemble/trials.cpp: per-trial agent contexts and factories for `pwab run --trials N`.
#include "assemble/trials.h"

#include "core/error.h"
#include "llm/chat.h"

namespace pwab::assemble {
namespace {

//! Sends every request of trial `trial` as cache sample `sample + trial`: the index is part of the record/replay
//! cache's key and never reaches the server, so trials are cached side by side instead of replaying trial 0.
class TrialSampleModel final : public llm::ChatModel {
 public:
  TrialSampleModel(std::unique_ptr<llm::ChatModel> inner, int trial) : inner_(std::move(inner)), trial_(trial) {}
  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    llm::ChatRequest sampled = request;
    sampled.sample += trial_;
    return inner_->chat(sampled);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::unique_ptr<llm::ChatModel> inner_;
  int trial_;
};

}  // namespace

int trials_to_run(std::optional<int> flag, const std::filesystem::path& run_dir, bool resume) {
  if (flag) return *flag;
  if (resume && std::filesystem::exists(run_dir / runner::kManifestFile))
    return runner::manifest_trials(runner::read_manifest(run_dir));
  return 1;
}

agents::AgentContext trial_context(const agents::AgentContext& run, int trial) {
  if (trial == 0) return run;
  agents::AgentContext c = run;
  c.seed = runner::trial_seed(run.seed, trial);
  if (run.llm.seed) c.llm.seed = *run.llm.seed + trial;
  if (run.llm.open)
    c.llm.open = [open = run.llm.open, trial](const std::string& task_key, llm::Role role) {
      std::unique_ptr<llm::ChatModel> inner = open(runner::RecordId{task_key, trial}.to_string(), role);
      if (!inner) return inner;
      return std::unique_ptr<llm::ChatModel>(std::make_unique<TrialSampleModel>(std::move(inner), trial));
    };
  if (!run.run_dir.empty()) c.run_dir = run.run_dir / ("trial-" + std::to_string(trial));
  return c;
}

TrialFactories::TrialFactories(std::string agent, agents::AgentOptions options, agents::AgentContext context,
                               int trials)
    : agent_(std::move(agent)), options_(std::move(options)), context_(std::move(context)) {
  if (trials < 1) throw UsageError("--trials must be at least 1, got " + std::to_string(trials));
  factories_.resize(static_cast<std::size_t>(trials));
  factories_[0] = agents::make_agent_factory(agent_, options_, context_);
}

void TrialFactories::prepare(const std::vector<runner::Unit>& pending) {
  std::vector<std::vector<const data::Task*>> tasks(factories_.size());
  for (const runner::Unit& u : pending) tasks.at(static_cast<std::size_t>(u.trial)).push_back(u.task);
  for (std::size_t t = 0; t < factories_.size(); ++t) {
    if (t > 0 && tasks[t].empty()) continue;  // nothing to run in this trial: no factory needed
    if (!factories_[t])
      factories_[t] = agents::make_agent_factory(agent_, options_, trial_context(context_, static_cast<int>(t)));
    factories_[t]->prepare(tasks[t]);
  }
}

runner::AgentMaker TrialFactories::maker() const {
  return [this](const data::Task& task, int trial) {
    const auto& factory = factories_.at(static_cast<std::size_t>(trial));
    if (!factory) throw UsageError("internal: no agent factory for trial " + std::to_string(trial));
    return factory->make(task);
  };
}

}  // namespace pwab::assemble
