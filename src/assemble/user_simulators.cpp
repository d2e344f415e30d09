// src/assemble/user_simulators.cpp: the user simulators of runs and served episodes (user_simulators.h).
#include "assemble/user_simulators.h"

#include <iostream>

#include "runner/results.h"
#include "sim/human_user.h"
#include "sim/llm_user.h"
#include "sim/scripted_user.h"

namespace pwab::assemble {

std::unique_ptr<env::UserChannel> make_llm_user(const data::Dataset& ds, const data::Task& task,
                                                const RunModels& models, const std::string& ledger_key, int sample,
                                                int leak_guard) {
  auto metered = std::make_unique<llm::MeteredChatModel>(*models.user_model, *models.ledger, llm::Role::kUser,
                                                         ledger_key);
  sim::LlmUserOptions options;
  options.sample = sample;  // each trial's dialogue is its own cache entry
  options.leak_guard = leak_guard;
  return std::make_unique<sim::LlmUser>(ds, task, std::move(metered), models.user_model_name, options);
}

runner::UserMaker user_maker(const std::string& user_sim, const data::Dataset& ds, const RunModels& models,
                             uint64_t seed, int user_guard) {
  if (user_sim == "scripted")
    return [&ds, seed](const data::Task& t, int trial) {
      return std::make_unique<sim::ScriptedUser>(ds, t, runner::trial_seed(seed, trial));
    };
  if (user_sim == "human")  // one episode at a time (run_benchmark sets concurrency 1), so one terminal suffices
    return [&ds](const data::Task& t, int) -> std::unique_ptr<env::UserChannel> {
      return std::make_unique<sim::HumanUser>(ds, t, std::cin, std::cerr);
    };
  if (user_sim == "llm")
    return [&ds, &models, user_guard](const data::Task& t, int trial) {
      return make_llm_user(ds, t, models, runner::RecordId{runner::task_key(t), trial}.to_string(), trial,
                           user_guard);
    };
  return {};
}

}  // namespace pwab::assemble
