// libFuzzer target: a Hugging Face config.json (LlamaConfig::from_json, torch-free). Any bytes give a config or
// a pwab::Error naming what is wrong; a config read must write a config.json that reads back to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "llama/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    pwab::llama::LlamaConfig config = pwab::llama::LlamaConfig::from_json(text, "config.json");
    const std::string written = config.to_json();
    if (pwab::llama::LlamaConfig::from_json(written, "written").to_json() != written) std::abort();
  } catch (const pwab::Error&) {
  }
  return 0;
}
