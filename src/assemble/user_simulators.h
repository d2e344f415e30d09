// src/assemble/user_simulators.h: the user simulators of a run or a served episode, made in one place: the scripted
// user, a person at the terminal, and the LLM user metered in the run's ledger (docs/simulator.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "assemble/benchmark.h"
#include "data/dataset.h"
#include "env/environment.h"
#include "runner/run.h"

namespace pwab::assemble {

//! The LLM user of one episode of `task`: models.user_model behind the ledger, its calls booked under
//! `ledger_key` (a record id, or a served episode's id), asking for cache sample `sample` (a run's trial), with
//! `leak_guard` rewrites of a reply that gives the target away (sim::LlmUserOptions). `models` and `ds` must
//! outlive the user.
std::unique_ptr<env::UserChannel> make_llm_user(const data::Dataset& ds, const data::Task& task,
                                                const RunModels& models, const std::string& ledger_key, int sample,
                                                int leak_guard);

//! The users of a benchmark run with `user_sim` "scripted" (seeded per trial), "human" (this terminal) or "llm"
//! (make_llm_user, booked per (task, trial)); an empty maker for "none".
runner::UserMaker user_maker(const std::string& user_sim, const data::Dataset& ds, const RunModels& models,
                             uint64_t seed, int user_guard);

}  // namespace pwab::assemble
