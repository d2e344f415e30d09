// src/serve/http_types.h: an HTTP request and response as pwab's front ends see them, apart from any socket.
//
// The network layer (net_server.h) reads a request whole (head, then its body by Content-Length) and hands it over
// as an HttpRequest; a front end answers with an HttpResponse. Routes (HttpRoute) are matched by method and exact
// path. Nothing here knows of Boost or sockets, so front ends (the JSON API, OpenEnv's routes, MCP, the reward
// endpoint) and their tests and fuzz targets build without the network layer.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pwab::serve {

struct HttpRequest {
  std::string method;  //!< "GET", "POST", ...
  std::string target;  //!< as sent: "/v1/tasks?limit=2"
  std::string path;    //!< the target up to '?'
  std::vector<std::pair<std::string, std::string>> params;   //!< the query string, %-decoded, in order
  std::vector<std::pair<std::string, std::string>> headers;  //!< as sent, in order
  std::string body;

  //! The first header of that name (case-insensitive), or nullptr.
  const std::string* find_header(std::string_view name) const;
  bool has_header(std::string_view name) const { return find_header(name) != nullptr; }
  //! The header's value, "" when absent.
  std::string header(std::string_view name) const;
  //! The first query parameter of that name, or nothing.
  std::optional<std::string> param(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  //!< besides Content-Type and Content-Length
  std::string body;
  //! Close the connection after this answer (a request refused before its body was read, whose unread bytes
  //! would otherwise be taken for the next request).
  bool close = false;

  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
};

//! One route: a method and an exact path, answered by `handle`.
struct HttpRoute {
  std::string method;
  std::string path;
  std::function<void(const HttpRequest&, HttpResponse&)> handle;
};

//! Splits a request target into its path and %-decoded query parameters ('+' is a space in the query).
void split_target(std::string_view target, std::string& path, std::vector<std::pair<std::string, std::string>>& params);

//! The reason phrase of a status ("Not Found").
std::string_view reason_phrase(int status);

}  // namespace pwab::serve
