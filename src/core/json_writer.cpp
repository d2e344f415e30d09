#include "core/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace pwab {

namespace {

// The escape of a quote, a backslash or a control character.
void append_escaped(std::string& out, unsigned char c) {
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    }
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  std::size_t run = 0;  // copy unescaped runs in one go
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    append_escaped(out, c);
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

namespace {

// The length of the valid UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
  const unsigned char c = byte(i);
  const auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    const unsigned char b = byte(k);
    return k < s.size() && b >= lo && b <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
  if (c == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

// Whether the 8 bytes at p are all printable ASCII other than '"' and '\\' (SWAR: each test flags a byte's high
// bit when the byte matches).
bool plain_ascii_word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  const auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;  // a byte < 0x20 (exact: w has no high bits here)
  const uint64_t quote = has_zero(w ^ (kOnes * '"'));
  const uint64_t backslash = has_zero(w ^ (kOnes * '\\'));
  return ((w & kHigh) | below_space | quote | backslash) == 0;
}

// A JSON string whose text is valid UTF-8 whatever `s` holds.
void append_utf8_json_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  std::size_t run = 0;  // copy plain runs in one go
  for (std::size_t i = 0; i < s.size();) {
    // Eight bytes at a time while they are all plain ASCII (no control byte, quote, backslash or high bit).
    while (i + 8 <= s.size() && plain_ascii_word(s.data() + i)) i += 8;
    if (i >= s.size()) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (std::size_t n = utf8_sequence(s, i)) {
        i += n;
        continue;
      }
    }
    out.append(s.data() + run, i - run);
    if (c >= 0x80)
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no valid sequence
    else
      append_escaped(out, c);
    run = ++i;
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";  // as nlohmann writes a whole float
}

}  // namespace

void append_compact(std::string& out, const nlohmann::json& v) {
  using T = nlohmann::json::value_t;
  switch (v.type()) {
    case T::null:
    case T::discarded: out += "null"; return;
    case T::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case T::number_integer: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, v.get<int64_t>());
      out.append(buf, r.ptr);
      return;
    }
    case T::number_unsigned: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, v.get<uint64_t>());
      out.append(buf, r.ptr);
      return;
    }
    case T::number_float: append_number(out, v.get<double>()); return;
    case T::string: append_utf8_json_string(out, v.get_ref<const std::string&>()); return;
    case T::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v) {
        if (!first) out += ',';
        first = false;
        append_compact(out, item);
      }
      out += ']';
      return;
    }
    case T::object: {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        append_utf8_json_string(out, it.key());
        out += ':';
        append_compact(out, it.value());
      }
      out += '}';
      return;
    }
    case T::binary: out += v.dump(); return;  // never in pwab's answers
  }
}

std::string dump_compact(const nlohmann::json& value) {
  std::string out;
  append_compact(out, value);
  return out;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ", ";
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  append_json_string(out_, k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  append_json_string(out_, s);
  return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
  before_value();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  before_value();
  out_ += py::float_repr(v);
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::value(const py::Scalar& v) {
  switch (v.kind) {
    case py::Scalar::Kind::kNone: return null();
    case py::Scalar::Kind::kInt: return value(v.i);
    case py::Scalar::Kind::kFloat: return value(v.f);
    case py::Scalar::Kind::kStr: return value(std::string_view(v.s));
  }
  return *this;
}
JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}
JsonWriter& JsonWriter::string_array(const std::vector<std::string>& items) {
  begin_array();
  for (const auto& s : items) value(std::string_view(s));
  return end_array();
}

}  // namespace pwab
