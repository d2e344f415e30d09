// test/mcp/mini_environment.h: the environment the in-process MCP tests serve: the mini synthetic dataset without
// search or recommendation backends (those tests use the review, details, respond and stop functions, which need
// neither; mcp_sdk_test.cpp covers the full services through the real binaries).
#pragma once
#include "data/synth.h"
#include "embed/embedder.h"
#include "env/environment.h"

namespace pwab::serve {

struct MiniEnvironment {
  data::Dataset ds = data::synthesize(data::SynthOptions{});
  embed::HashingEmbedder embedder;
  env::Environment environment{ds, nullptr, nullptr, embedder};
};

//! Built once per process, on first use.
inline const MiniEnvironment& mini_environment() {
  static const MiniEnvironment mini;
  return mini;
}

}  // namespace pwab::serve
