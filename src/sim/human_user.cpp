// The human user: the terminal conversation of `--user-sim human`.
#include "sim/human_user.h"

#include <fmt/format.h>

#include <istream>
#include <ostream>

namespace pwab::sim {
namespace {

constexpr const char* kStop = "###STOP###";

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

HumanUser::HumanUser(const data::Dataset& ds, const data::Task& task, std::istream& in, std::ostream& out)
    : in_(in), out_(out) {
  out_ << fmt::format(
              "\n=== {} (user {}): you are this user. Your request to the agent was:\n    {}\n"
              "Answer the agent's questions as this user would. Type /stop when you are satisfied or have "
              "nothing to add.\n",
              data::task_key(task), ds.user(task.user).id, task.instruction)
       << std::flush;
}

std::string HumanUser::reply(const std::string& agent_message) {
  if (stopped_) return kStop;
  out_ << "\nagent: " << agent_message << "\n" << std::flush;
  for (;;) {
    out_ << "you> " << std::flush;
    std::string line;
    if (!std::getline(in_, line)) {  // the end of input: nothing more to say
      out_ << "\n";
      stopped_ = true;
      return kStop;
    }
    line = trimmed(line);
    if (line == "/stop") {
      stopped_ = true;
      return kStop;
    }
    if (!line.empty()) return line;
  }
}

void HumanUser::note_attempt(std::string_view function, const env::Reward&) {
  out_ << "  [the agent called " << function << "]\n" << std::flush;
}

}  // namespace pwab::sim
