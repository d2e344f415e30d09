// src/agents/llm_config.h: the LLM settings every LLM agent echoes in its config_json(), written once.
#pragma once
#include "agents/agent.h"
#include "core/json_writer.h"

namespace pwab::agents {

//! Writes "model", "temperature" (0.0 when unset, the original's default), "max_tokens" and "seed" (null when
//! unset) into the object `w` is writing.
inline void write_llm_config(JsonWriter& w, const LlmAccess& llm) {
  w.key("model").value(llm.model);
  w.key("temperature").value(llm.temperature.value_or(0.0));
  w.key("max_tokens");
  if (llm.max_tokens) w.value(*llm.max_tokens);
  else w.null();
  w.key("seed");
  if (llm.seed) w.value(*llm.seed);
  else w.null();
}

}  // namespace pwab::agents
