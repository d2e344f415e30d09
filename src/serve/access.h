// src/serve/access.h: who may talk to `pwab serve` (the threat model is in docs/serve.md).
//
// Every request to the HTTP server (the API under /v1, /health and MCP at /mcp) passes check_access() before it
// is routed. It refuses what a web page in a browser could send (DNS rebinding: a Host that is not this server's
// name; a cross-site request: an Origin of another site or Sec-Fetch-Site: cross-site; a body that is not
// declared JSON, which is what an HTML form or a no-CORS fetch sends) and, when the server has a token, anything
// without it (Authorization: Bearer TOKEN, compared in constant time). The checks know nothing of httplib.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::serve {

struct AccessPolicy {
  //! The bearer token every request must carry; empty = none (allowed only on a loopback address).
  std::string token;
  //! Host names besides the loopback ones (localhost, 127.0.0.0/8, [::1]) a request may address the server by,
  //! without a token (e.g. a name in /etc/hosts for this machine). With a token, any Host is accepted: a page
  //! cannot know the token, so DNS rebinding gains nothing.
  std::vector<std::string> allowed_hosts;
  //! Origin hosts besides the loopback ones whose pages may call the server (a local web UI).
  std::vector<std::string> allowed_origins;
};

//! The parts of a request the checks read (absent headers are empty).
struct RequestFacts {
  std::string method;
  std::string path;
  std::string host;           //!< Host header
  std::string origin;         //!< Origin header
  std::string sec_fetch_site; //!< Sec-Fetch-Site header (browsers send it)
  std::string content_type;
  std::string authorization;
  bool has_body = false;      //!< a Content-Length above 0 or a chunked body
  bool has_origin = false;    //!< an Origin header was sent (even "null")
};

struct AccessRefusal {
  int status;          //!< 401, 403 or 415
  std::string code;    //!< unauthorized, forbidden_host, forbidden_origin, unsupported_media_type
  std::string message;
};

//! Nothing when the request may go on; otherwise why not.
std::optional<AccessRefusal> check_access(const AccessPolicy& policy, const RequestFacts& request);

struct HttpRequest;
//! The facts of a request as the network layer hands it over (http_types.h).
RequestFacts request_facts(const HttpRequest& request);

//! True for localhost, 127.0.0.0/8 and ::1 (with or without brackets): the addresses only this machine reaches.
bool is_loopback_host(std::string_view host);
//! The host name of a Host header value "name[:port]" / "[v6]:port", lower-cased, brackets kept for IPv6.
std::string host_of_host_header(std::string_view value);
//! The host of an Origin "scheme://host[:port]", lower-cased; "" for "null" or one without a scheme.
std::string host_of_origin(std::string_view origin);
//! a == b in time that depends on their lengths only, not on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace pwab::serve
