// src/agents/remote_reply.h: reading a remote agent's reply (pwab-agent/1, docs/agents/remote.md): one JSON object
// {"name", "arguments"?, "usage"?} per step. Outside input, so checked before use and fuzzed
// (fuzz/remote_reply_fuzz.cpp); needs nothing of the agent itself.
#pragma once
#include <string>

#include "env/agent.h"

namespace pwab::agents {

//! Checks one reply body against the protocol: "" when it is usable, else what is wrong (for retry messages).
std::string remote_reply_problem(const std::string& body);

//! The step a reply asks for. Only for a body remote_reply_problem() accepted.
env::AgentStep parse_remote_reply(const std::string& body);

}  // namespace pwab::agents
