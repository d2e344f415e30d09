// Scanning a request head: header names compare case-insensitively; every value is taken as it is after the
// colon, without surrounding blanks.
#include "serve/request_head.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>

#include "serve/episode_service.h"

namespace pwab::serve {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

//! Calls `each(name, value, line)` for every header line of `head` (the request line is skipped; `line` is the
//! whole line with its CRLF).
template <class Each>
void for_each_header(std::string_view head, Each each) {
  std::size_t at = head.find("\r\n");
  if (at == std::string_view::npos) return;
  at += 2;
  while (at < head.size()) {
    std::size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(at, end - at);
    std::size_t next = std::min(head.size(), end + 2);
    if (std::size_t colon = line.find(':'); colon != std::string_view::npos)
      each(trim(line.substr(0, colon)), trim(line.substr(colon + 1)), head.substr(at, next - at));
    else
      each(std::string_view{}, std::string_view{}, head.substr(at, next - at));
    at = next;
  }
}

std::size_t content_length_of(std::string_view value) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc() || p != value.data() + value.size())
    throw RequestError(400, "bad_content_length",
                       fmt::format("Content-Length must be one decimal number of bytes, got '{}'",
                                   value.substr(0, 40)));
  return static_cast<std::size_t>(n);
}

}  // namespace

std::optional<RequestHead> scan_request_head(std::string_view bytes) {
  const std::size_t blank = bytes.find("\r\n\r\n");
  const std::size_t size = blank == std::string_view::npos ? bytes.size() : blank + 4;
  if (size > kMaxRequestHeadBytes)
    throw RequestError(431, "head_too_large",
                       fmt::format("the request line and headers are over the limit of {} bytes",
                                   kMaxRequestHeadBytes));
  if (blank == std::string_view::npos) return std::nullopt;
  RequestHead head;
  head.size = size;
  std::optional<std::size_t> length;
  for_each_header(bytes.substr(0, blank + 2), [&](std::string_view name, std::string_view value, std::string_view) {
    if (same_name(name, "content-length")) {
      std::size_t n = content_length_of(value);
      if (length && *length != n)
        throw RequestError(400, "bad_content_length", "the request gives two different Content-Length values");
      length = n;
    } else if (same_name(name, "transfer-encoding")) {
      head.has_transfer_encoding = true;
    } else if (same_name(name, "expect")) {
      head.expects_continue = same_name(value, "100-continue");
    }
  });
  head.content_length = length.value_or(0);
  return head;
}

std::string head_without_expect(std::string_view head) {
  std::size_t first = head.find("\r\n");
  if (first == std::string_view::npos) return std::string(head);
  std::string out(head.substr(0, first + 2));
  for_each_header(head, [&](std::string_view name, std::string_view, std::string_view line) {
    if (!same_name(name, "expect")) out += line;
  });
  return out;
}

}  // namespace pwab::serve
