// src/serve/request_head.h: the head of an HTTP/1.1 request as GuardedServer reads it off the socket, before
// httplib parses it: where the head ends, how long the body is, and whether the client waits for "100 Continue".
// Knows nothing of sockets or httplib, so it can be fuzzed alone (fuzz/request_head_fuzz.cpp).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pwab::serve {

//! The largest request head (request line and headers) the server reads; a longer one is refused with 431.
inline constexpr std::size_t kMaxRequestHeadBytes = 64 * 1024;

struct RequestHead {
  std::size_t size = 0;                 //!< bytes through the blank line that ends the head
  std::size_t content_length = 0;       //!< 0 without a Content-Length header
  bool has_transfer_encoding = false;   //!< a chunked (or otherwise encoded) body, whose length is not known
  bool expects_continue = false;        //!< Expect: 100-continue
};

//! Scans the head at the start of `bytes`: nullopt while its blank line ("\r\n\r\n") has not arrived yet. Throws
//! RequestError (episode_service.h): 431 head_too_large when the head is longer than kMaxRequestHeadBytes, 400
//! bad_content_length when Content-Length is not a decimal number or is given twice with different values.
std::optional<RequestHead> scan_request_head(std::string_view bytes);

//! `head` without its Expect header lines: the server has answered "100 Continue" itself, and httplib would
//! send a second one.
std::string head_without_expect(std::string_view head);

}  // namespace pwab::serve
