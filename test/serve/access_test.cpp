// The access checks in front of `pwab serve` (access.h) as a pure function: what a web page on another site, a
// rebound DNS name, a client without the token and a body not declared JSON each get.
#include "serve/access.h"

#include <gtest/gtest.h>

namespace pwab::serve {
namespace {

RequestFacts get(std::string host = "127.0.0.1:8765") {
  RequestFacts r;
  r.method = "GET";
  r.path = "/v1/tasks";
  r.host = std::move(host);
  return r;
}

RequestFacts post_json() {
  RequestFacts r = get();
  r.method = "POST";
  r.path = "/v1/episodes";
  r.content_type = "application/json";
  r.has_body = true;
  return r;
}

std::string code_of(const AccessPolicy& p, const RequestFacts& r) {
  auto refusal = check_access(p, r);
  return refusal ? refusal->code : "";
}

TEST(Access, LoopbackNamesAndHostHeaders) {
  for (const char* h : {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"})
    EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"evil.example", "localhost.evil.example", "127.0.0.1.evil.example", "128.0.0.1", "127.0.0.256",
                        "0.0.0.0", "10.0.0.1", "", "[::2]"})
    EXPECT_FALSE(is_loopback_host(h)) << h;
  EXPECT_EQ(host_of_host_header("Example.COM:8765"), "example.com");
  EXPECT_EQ(host_of_host_header("[::1]:8765"), "[::1]");
  EXPECT_EQ(host_of_origin("http://localhost:3000"), "localhost");
  EXPECT_EQ(host_of_origin("https://evil.example/path"), "evil.example");
  EXPECT_EQ(host_of_origin("null"), "");
}

TEST(Access, DnsRebindingIsRefusedWithoutAToken) {
  AccessPolicy open;
  EXPECT_EQ(code_of(open, get()), "");
  EXPECT_EQ(code_of(open, get("localhost:8765")), "");
  EXPECT_EQ(code_of(open, get("evil.example")), "forbidden_host");
  EXPECT_EQ(code_of(open, get("evil.example:8765")), "forbidden_host");
  EXPECT_EQ(code_of(open, get("")), "");  // no Host: not a browser (browsers always send one)
  AccessPolicy named;
  named.allowed_hosts = {"box.lan"};
  EXPECT_EQ(code_of(named, get("BOX.lan:8765")), "");
  EXPECT_EQ(code_of(named, get("evil.example")), "forbidden_host");
}

TEST(Access, OtherSitesOriginsAreRefused) {
  AccessPolicy p;
  RequestFacts r = post_json();
  r.has_origin = true;
  r.origin = "http://evil.example";
  EXPECT_EQ(code_of(p, r), "forbidden_origin");
  r.origin = "null";  // a sandboxed frame or a file: page
  EXPECT_EQ(code_of(p, r), "forbidden_origin");
  r.origin = "http://localhost:3000";
  EXPECT_EQ(code_of(p, r), "");
  p.allowed_origins = {"ui.example"};
  r.origin = "https://ui.example";
  EXPECT_EQ(code_of(p, r), "");
  RequestFacts cross = get();
  cross.sec_fetch_site = "cross-site";
  EXPECT_EQ(code_of(p, cross), "forbidden_origin");
  cross.sec_fetch_site = "same-origin";
  EXPECT_EQ(code_of(p, cross), "");
}

TEST(Access, BodiesMustBeDeclaredJson) {
  AccessPolicy p;
  RequestFacts r = post_json();
  EXPECT_EQ(code_of(p, r), "");
  r.content_type = "application/json; charset=utf-8";
  EXPECT_EQ(code_of(p, r), "");
  for (const char* t : {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                        "multipart/form-data; boundary=x", "", "application/jsonp"}) {
    r.content_type = t;
    auto refusal = check_access(p, r);
    ASSERT_TRUE(refusal) << t;
    EXPECT_EQ(refusal->status, 415);
  }
  // No body and no type (`curl -X POST .../end`) is fine; no body with a form's type is not.
  r.has_body = false;
  r.content_type = "";
  EXPECT_EQ(code_of(p, r), "");
  r.content_type = "application/x-www-form-urlencoded";
  EXPECT_EQ(code_of(p, r), "unsupported_media_type");
}

TEST(Access, TheTokenIsRequiredAndAnyHostThenServes) {
  AccessPolicy p;
  p.token = "s3cret-token";
  RequestFacts r = get("server.example:8765");
  EXPECT_EQ(code_of(p, r), "unauthorized");
  r.authorization = "Bearer wrong";
  EXPECT_EQ(check_access(p, r)->status, 401);
  r.authorization = "Bearer s3cret-token-and-more";
  EXPECT_EQ(code_of(p, r), "unauthorized");
  r.authorization = "Basic s3cret-token";
  EXPECT_EQ(code_of(p, r), "unauthorized");
  r.authorization = "Bearer s3cret-token";
  EXPECT_EQ(code_of(p, r), "");
  r.authorization = "bearer s3cret-token";
  EXPECT_EQ(code_of(p, r), "");
  // A page on another site is refused before the token matters.
  r.has_origin = true;
  r.origin = "http://evil.example";
  EXPECT_EQ(code_of(p, r), "forbidden_origin");
}

TEST(Access, ConstantTimeEqualIsEquality) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_FALSE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

}  // namespace
}  // namespace pwab::serve
