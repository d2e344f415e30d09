// libFuzzer target: one line of a raw Amazon Reviews 2023 file, as `pwab construct` reads it (RawParser::review).
// Any bytes give a review or a counted problem with a reason; a review kept has what the parser promises. The
// line sits in a padded buffer, as the reader (raw_reader.h) hands it over.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <simdjson.h>
#include <string>
#include <string_view>
#include <vector>

#include "construct/raw_records.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pwab::construct::RawParser parser;
  // The parser reads in place and needs SIMDJSON_PADDING readable bytes after a line, as LineReader leaves them.
  std::string buffer(reinterpret_cast<const char*>(data), size);
  buffer.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  const std::string_view line(buffer.data(), size);
  for (bool with_text : {false, true}) {
    pwab::construct::RawReview review;
    pwab::construct::LineProblem problem;
    std::vector<pwab::construct::LineProblem> dropped;
    try {
      if (parser.review(line, with_text, review, problem, dropped)) {
        if (review.user_id.empty() || review.parent_asin.empty() || review.timestamp < 0) std::abort();
      } else if (problem.reason.empty()) {
        std::abort();  // a refused line must say why
      }
    } catch (const pwab::Error&) {
    }
  }
  return 0;
}
