// src/core/json_writer.h: a fast streaming JSON writer that lays values out as Python's json.dump does
// (separators ", " and ": ", UTF-8 kept), so files pwab writes look like the original benchmark's.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/py_format.h"

namespace pwab {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  //! Writes an object key; the next call writes its value.
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  //! A float, written with Python's repr (always with a '.' or exponent, e.g. 5.0).
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& value(const py::Scalar& v);
  JsonWriter& null();
  //! Splices already-serialized JSON text (e.g. a details object kept as text).
  JsonWriter& raw(std::string_view json);
  JsonWriter& string_array(const std::vector<std::string>& items);

 private:
  void before_value();
  std::string& out_;
  std::vector<bool> first_;  // one entry per open container: no element written yet
  bool after_key_ = false;
};

//! Appends a JSON string literal (quotes, escapes for ", \\ and control characters; UTF-8 kept).
void append_json_string(std::string& out, std::string_view s);

//! The compact text of a JSON value, as nlohmann's dump(-1, ' ', false, error_handler_t::replace) writes it
//! (keys in the value's order, floats as the shortest text that reads back, NaN and infinities as null), with
//! every byte that is not part of valid UTF-8 replaced by U+FFFD, so the text is always valid UTF-8 (a WebSocket
//! text frame must be). Several times faster on long strings: what `pwab serve` answers with.
std::string dump_compact(const nlohmann::json& value);
//! Appends dump_compact(value) to `out`.
void append_compact(std::string& out, const nlohmann::json& value);

}  // namespace pwab
