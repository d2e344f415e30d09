// libFuzzer target: any bytes as a .safetensors file (an 8-byte header length, a JSON header, the data) must be
// read or refused with pwab::Error, never crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto file = pwab::safetensors::File::from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)file;
  } catch (const pwab::Error&) {
  }
  return 0;
}
