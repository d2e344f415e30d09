// libFuzzer target: a remote agent's reply body (pwab-agent/1). remote_reply_problem() must answer any bytes, and
// every body it accepts must parse into a step without an exception: the check covers all the parser assumes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "agents/remote_reply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  if (!pwab::agents::remote_reply_problem(body).empty()) return 0;
  try {
    pwab::env::AgentStep step = pwab::agents::parse_remote_reply(body);
    if (step.action.name.empty() || step.prompt_tokens < 0 || step.completion_tokens < 0) std::abort();
  } catch (const std::exception&) {
    std::abort();  // accepted, then not parseable: the check missed something
  }
  return 0;
}
