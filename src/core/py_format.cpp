#include "core/py_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace pwab::py {

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, e.g. "1.2345e+02"; then lay them out as Python's repr does.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  auto e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits += c;
  int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

  std::string out = negative ? "-" : "";
  int n = static_cast<int>(digits.size());
  if (exponent >= -4 && exponent < 16) {  // Python's repr switches to scientific at 1e16 and below 1e-4
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out += digits;
    } else if (exponent + 1 >= n) {
      out += digits;
      out.append(static_cast<std::size_t>(exponent + 1 - n), '0');
      out += ".0";
    } else {
      out += digits.substr(0, exponent + 1);
      out += '.';
      out += digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits[0];
  if (n > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += exp_buf;
  return out;
}

std::optional<double> Scalar::number() const {
  switch (kind) {
    case Kind::kInt: return static_cast<double>(i);
    case Kind::kFloat: return f;
    case Kind::kNone: return std::nullopt;
    case Kind::kStr: break;
  }
  std::string_view t = s;
  while (!t.empty() && (t.front() == ' ' || t.front() == '$')) t.remove_prefix(1);
  double v = 0;
  auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (res.ec != std::errc() || t.empty()) return std::nullopt;
  return v;
}

std::string Scalar::str() const {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kInt: return std::to_string(i);
    case Kind::kFloat: return float_repr(f);
    case Kind::kStr: return s;
  }
  return {};
}

namespace {
// Decodes one UTF-8 code point at `i`; invalid bytes decode as themselves (U+0080..U+00FF range).
char32_t next_code_point(std::string_view s, std::size_t& i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return c;
  }
  char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc >> 6) != 2) {
      ++i;
      return c;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  i += len;
  return cp;
}

void append_hex(std::string& out, const char* prefix, unsigned v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, width, v);
  out += buf;
}
}  // namespace

std::string str_repr(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  out.reserve(text.size() + 2);
  std::size_t i = 0;
  while (i < text.size()) {
    // Printable ASCII other than the quote and the backslash is copied as it is, a run at a time.
    std::size_t run = i;
    while (run < text.size()) {
      const unsigned char c = static_cast<unsigned char>(text[run]);
      if (c < 0x20 || c >= 0x7F || c == static_cast<unsigned char>(quote) || c == '\\') break;
      ++run;
    }
    if (run > i) {
      out.append(text.substr(i, run - i));
      i = run;
      continue;
    }
    std::size_t start = i;
    char32_t cp = next_code_point(text, i);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F) {
      append_hex(out, "\\x", static_cast<unsigned>(cp), 2);
    } else if (cp >= 0x80 && cp < 0xA0) {  // C1 controls are not printable in Python
      append_hex(out, "\\x", static_cast<unsigned>(cp), 2);
    } else {
      out.append(text.substr(start, i - start));
    }
  }
  out += quote;
  return out;
}

std::string json_string_ascii(std::string_view text) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t cp = next_code_point(text, i);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (cp >= 0x7F && cp < 0x10000)) {
      if (cp == 0x7F) {
        out += static_cast<char>(cp);
        continue;
      }
      append_hex(out, "\\u", static_cast<unsigned>(cp), 4);
    } else if (cp >= 0x10000) {
      char32_t v = cp - 0x10000;
      append_hex(out, "\\u", static_cast<unsigned>(0xD800 + (v >> 10)), 4);
      append_hex(out, "\\u", static_cast<unsigned>(0xDC00 + (v & 0x3FF)), 4);
    } else {
      out += static_cast<char>(cp);
    }
  }
  out += '"';
  return out;
}

std::string list_repr(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += str_repr(items[i]);
  }
  return out + "]";
}

namespace {
void dump_python(const nlohmann::ordered_json& j, std::string& out) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : j.items()) {
        if (!first) out += ", ";
        first = false;
        out += json_string_ascii(k);
        out += ": ";
        dump_python(v, out);
      }
      out += '}';
      break;
    }
    case nlohmann::json::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < j.size(); ++i) {
        if (i) out += ", ";
        dump_python(j[i], out);
      }
      out += ']';
      break;
    }
    case nlohmann::json::value_t::string: out += json_string_ascii(j.get_ref<const std::string&>()); break;
    case nlohmann::json::value_t::number_float: out += float_repr(j.get<double>()); break;
    case nlohmann::json::value_t::number_integer: out += std::to_string(j.get<int64_t>()); break;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(j.get<uint64_t>()); break;
    case nlohmann::json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; break;
    default: out += "null"; break;
  }
}
}  // namespace

std::string json_dumps(std::string_view json_text) {
  auto j = nlohmann::ordered_json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return json_string_ascii(json_text);
  std::string out;
  dump_python(j, out);
  return out;
}

}  // namespace pwab::py
