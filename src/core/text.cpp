#include "core/text.h"

namespace pwab {

std::size_t count_basic_tokens(std::string_view text) {
  std::size_t n = 0;
  bool in_word = false;
  for (unsigned char c : text) {
    bool word_char = c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    if (word_char) {
      if (!in_word) ++n;
      in_word = true;
    } else {
      in_word = false;
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') ++n;
    }
  }
  return n;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return out;
}

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_trim(std::string_view s, char delim) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = s.find(delim, start);
    out.emplace_back(trim(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

void for_each_nonblank_line(std::string_view text, const std::function<void(std::string_view, std::size_t)>& fn) {
  std::size_t line_no = 0;
  for (std::size_t pos = 0, nl; pos < text.size(); pos = nl + 1) {
    nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line_no;
    std::string_view line = text.substr(pos, nl - pos);
    if (!trim(line).empty()) fn(line, line_no);
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace pwab
