// src/core/py_format.h: Python's rendering of scalars and JSON values.
//
// The original benchmark shows the LLM strings made by Python's str(), repr() and json.dumps(), so a faithful
// port renders exactly as Python does (docs/decisions.md §1.9). Everything here is a pure function.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::py {

//! repr(float) / str(float): shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16, else
//! scientific with a two-digit exponent ("1e-05", "1.5e+16"); "inf", "-inf", "nan".
std::string float_repr(double x);

//! A JSON scalar as Python holds it after json.load: None, int, float or str.
struct Scalar {
  enum class Kind { kNone, kInt, kFloat, kStr };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;

  static Scalar none() { return {}; }
  static Scalar of_int(int64_t v) { return {Kind::kInt, v, static_cast<double>(v), {}}; }
  static Scalar of_float(double v) { return {Kind::kFloat, 0, v, {}}; }
  static Scalar of_str(std::string v) { return {Kind::kStr, 0, 0, std::move(v)}; }

  bool is_none() const { return kind == Kind::kNone; }
  //! The numeric value of an int or float; for a str, the number it spells ("12.99", "$12.99"), if any.
  std::optional<double> number() const;
  //! Python's str() of the value: "None", "5", "4.5", or the string itself.
  std::string str() const;
  bool operator==(const Scalar&) const = default;
};

//! Python's repr() of a str: single quotes unless the text has ' and no ", backslash escapes for
//! \\, \n, \r, \t, other control characters and the chosen quote; printable non-ASCII kept as is.
std::string str_repr(std::string_view utf8);

//! A JSON string literal as json.dumps writes it with ensure_ascii=True (non-ASCII as \uXXXX, surrogate pairs
//! above the BMP).
std::string json_string_ascii(std::string_view utf8);

//! Python's repr() of a list of str: ['a', "it's"]; [] when empty.
std::string list_repr(const std::vector<std::string>& items);

//! json.dumps(value) with Python's defaults (separators ", " and ": ", ensure_ascii, key order kept) of a JSON
//! text; non-JSON input is rendered as a JSON string of itself.
std::string json_dumps(std::string_view json_text);

}  // namespace pwab::py
