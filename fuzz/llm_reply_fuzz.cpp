// libFuzzer target: any bytes as an OpenAI-compatible chat reply must parse or be named as unusable (the string
// parse_chat_reply returns), never crash: the reply comes from a server pwab does not control.
#include <cstddef>
#include <cstdint>
#include <string>

#include "llm/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  pwab::llm::ChatResponse out;
  (void)pwab::llm::parse_chat_reply(body, out);
  (void)pwab::llm::body_excerpt(body, "secret");
  return 0;
}
