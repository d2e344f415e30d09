// src/sim/human_user.h: a person as the user of the multi-turn track (`pwab run --user-sim human`, the original's
// `--user_mode human`).
//
// At the start of each episode the person is shown the task's instruction: they play the user who asked for it.
// Each agent message (`respond`) is printed and the person's typed line is the reply. `/stop` (or the end of
// input) answers ###STOP###, the sentinel the LLM user gives when it has nothing to add; every later reply is the
// sentinel without asking. After each scored attempt the person sees which function the agent called. The run
// plays one episode at a time (concurrency 1).
#pragma once
#include <iosfwd>
#include <string>

#include "data/dataset.h"
#include "env/environment.h"

namespace pwab::sim {

class HumanUser final : public env::UserChannel {
 public:
  //! Prints the task's banner on `out`. `ds` and `task` must outlive the user; so must the streams.
  HumanUser(const data::Dataset& ds, const data::Task& task, std::istream& in, std::ostream& out);

  std::string reply(const std::string& agent_message) override;
  void note_attempt(std::string_view function, const env::Reward& reward) override;

 private:
  std::istream& in_;
  std::ostream& out_;
  bool stopped_ = false;
};

}  // namespace pwab::sim
