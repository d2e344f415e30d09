// The network layer's request parsing (net_server.h: parse_request_bytes, the same parser and limits a
// connection uses) and the target splitting of http_types.h, as pure functions: when a request is complete, what
// a front end sees of it, and the requests refused before any front end sees them.
#include "serve/net_server.h"

#include <gtest/gtest.h>

namespace pwab::serve {
namespace {

NetOptions limits() {
  NetOptions o;
  o.max_body_bytes = 64;
  o.max_head_bytes = 1024;
  return o;
}

int refusal(std::string_view bytes) { return parse_request_bytes(bytes, limits()).status; }

TEST(Net, ARequestIsCompleteOnlyWithItsWholeBody) {
  EXPECT_FALSE(parse_request_bytes("", limits()).request);
  EXPECT_FALSE(parse_request_bytes("GET /health HTTP/1.1\r\nHost: x\r\n", limits()).request);
  EXPECT_FALSE(parse_request_bytes("POST /v1/episodes HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}", limits()).request);
  ParsedRequest r = parse_request_bytes("POST /v1/tasks?limit=2&split=te%73t&q=a+b HTTP/1.1\r\nHost: x\r\n"
                                        "content-TYPE: application/json\r\nContent-Length: 2\r\n\r\n{}",
                                        limits());
  ASSERT_TRUE(r.request) << r.code;
  EXPECT_EQ(r.request->method, "POST");
  EXPECT_EQ(r.request->path, "/v1/tasks");
  EXPECT_EQ(r.request->param("limit"), "2");
  EXPECT_EQ(r.request->param("split"), "test");
  EXPECT_EQ(r.request->param("q"), "a b");
  EXPECT_EQ(r.request->header("Content-Type"), "application/json");  // any case
  EXPECT_EQ(r.request->body, "{}");
  EXPECT_FALSE(r.upgrade);
}

TEST(Net, APostWithoutALengthHasNoBody) {
  ParsedRequest r = parse_request_bytes("POST /v1/episodes/ep_1/end HTTP/1.1\r\nHost: x\r\n\r\n", limits());
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->body, "");
}

TEST(Net, RefusesBadLengthsChunkedBodiesAndHugeHeadsOrBodies) {
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), 400);
  EXPECT_EQ(parse_request_bytes("POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", limits()).code, "bad_content_length");
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), 411);
  // Over the head limit, refused before the blank line arrives (a client could otherwise send headers forever).
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: " + std::string(2048, 'a')), 431);
  // A body announced over the limit is refused from the head alone.
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n"), 413);
  EXPECT_EQ(refusal("GARBAGE\r\n\r\n"), 400);
}

TEST(Net, SeesWebSocketUpgrades) {
  ParsedRequest r = parse_request_bytes("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                                        limits());
  ASSERT_TRUE(r.request);
  EXPECT_TRUE(r.upgrade);
}

TEST(Net, SplitsTargets) {
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;
  split_target("/state?episode_id=ep_1&&flag&x=%2F%zz", path, params);
  EXPECT_EQ(path, "/state");
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0], (std::pair<std::string, std::string>{"episode_id", "ep_1"}));
  EXPECT_EQ(params[1], (std::pair<std::string, std::string>{"flag", ""}));
  EXPECT_EQ(params[2], (std::pair<std::string, std::string>{"x", "/%zz"}));  // a bad escape is kept as it is
}

}  // namespace
}  // namespace pwab::serve
