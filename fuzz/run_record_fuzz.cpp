// libFuzzer target: any bytes as one line of a run's results.jsonl must give a record or a DataError naming what
// is wrong; a record read back must write and re-read to the same line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "runner/results.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  try {
    pwab::runner::TaskRecord r = pwab::runner::TaskRecord::from_json(line);
    const std::string again = r.to_json_line();
    if (pwab::runner::TaskRecord::from_json(again).to_json_line() != again) std::abort();  // not a fixed point
  } catch (const pwab::Error&) {
  }
  return 0;
}
