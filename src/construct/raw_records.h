// src/construct/raw_records.h: one line of an Amazon Reviews 2023 dump → a review or a product record.
//
// Raw dumps are large and not always clean, so a bad line is never fatal: parsing returns what is wrong
// (a short reason, counted per reason, and a detail for the first examples), and the caller skips the line.
// A required field that is missing or mistyped makes the line malformed; an optional field of the wrong type
// is dropped (treated as missing) and reported as a field problem, and the record is kept.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/py_format.h"
#include "data/types.h"

namespace pwab::construct {

//! A review line's fields that the benchmark keeps (images, helpful_vote, verified_purchase are not used).
struct RawReview {
  std::string user_id;
  std::string parent_asin;  //!< `parent_asin`, or `asin` when a line has no parent_asin
  py::Scalar rating;        //!< the JSON number as written (5.0 stays a float)
  std::string title;
  std::string text;
  int64_t timestamp = 0;    //!< Unix epoch milliseconds
};

//! Why a line was rejected, or which optional field was dropped.
struct LineProblem {
  std::string reason;  //!< short and stable, counted: "missing timestamp", "invalid JSON", ...
  std::string detail;  //!< more context for the examples shown, e.g. the offending value
};

//! Parses lines in place (the line must be followed by SIMDJSON_PADDING readable bytes, as LineReader
//! guarantees). One parser per thread; it reuses its buffers across lines.
class RawParser {
 public:
  RawParser();
  ~RawParser();
  RawParser(const RawParser&) = delete;
  RawParser& operator=(const RawParser&) = delete;

  //! Parses a review line. Required: a non-empty string `user_id`, a non-empty `parent_asin` (or `asin`), a
  //! numeric `rating` in [1, 5], an integer `timestamp` ≥ 0 (an integral float is accepted). `with_text`:
  //! also copy title and text (pass 1 needs neither). Returns false and sets `problem` for a malformed line;
  //! `field_problems` gets the optional fields that were dropped.
  bool review(std::string_view line, bool with_text, RawReview& out, LineProblem& problem,
              std::vector<LineProblem>& field_problems);

  //! Reads only the `parent_asin` of a meta line (cheap, for deciding whether the product is wanted). False
  //! with `problem` set when the line is malformed.
  bool meta_key(std::string_view line, std::string& parent_asin, LineProblem& problem);

  //! Parses a meta line into a catalogue product with the tolerance of the dataset loader (docs/data.md):
  //! lists accept a lone string, `details` an object or a JSON-encoded string, `price` any scalar.
  bool meta(std::string_view line, data::Product& out, LineProblem& problem, std::vector<LineProblem>& field_problems);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::construct
