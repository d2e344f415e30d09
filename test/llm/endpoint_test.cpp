// Endpoint settings: where base URL and key come from, validation, and descriptions without secrets.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llm/endpoint.h"

namespace pwab::llm {
namespace {

TEST(ResolveEndpoint, FlagThenEnvironmentThenDefault) {
  EndpointConfig none = resolve_endpoint({}, {});
  EXPECT_EQ(none.base_url, kDefaultBaseUrl);
  EXPECT_TRUE(none.api_key.empty());

  EndpointConfig env = resolve_endpoint({}, {"http://localhost:8000/v1/", "sk-env"});
  EXPECT_EQ(env.base_url, "http://localhost:8000/v1");  // trailing '/' dropped
  EXPECT_EQ(env.api_key.reveal(), "sk-env");

  EndpointConfig flags =
      resolve_endpoint({"https://example.org/v1", "sk-flag"}, {"http://localhost:8000/v1", "sk-env"});
  EXPECT_EQ(flags.base_url, "https://example.org/v1");
  EXPECT_EQ(flags.api_key.reveal(), "sk-flag");

  // Each value is resolved on its own: a flag for the URL, the environment for the key.
  EndpointConfig mixed = resolve_endpoint({"https://example.org/v1", ""}, {"", "sk-env"});
  EXPECT_EQ(mixed.base_url, "https://example.org/v1");
  EXPECT_EQ(mixed.api_key.reveal(), "sk-env");
}

TEST(ResolveEndpoint, KeepsTheOtherDefaults) {
  EndpointConfig defaults;
  defaults.timeout_s = 7;
  defaults.max_in_flight = 3;
  defaults.retry.max_attempts = 9;
  EndpointConfig c = resolve_endpoint({}, {}, defaults);
  EXPECT_EQ(c.timeout_s, 7);
  EXPECT_EQ(c.max_in_flight, 3);
  EXPECT_EQ(c.retry.max_attempts, 9);
}

TEST(ResolveEndpoint, RejectsNonHttpUrls) {
  EXPECT_THROW(resolve_endpoint({"api.openai.com/v1", ""}, {}), UsageError);
  EXPECT_THROW(resolve_endpoint({"ftp://example.org", ""}, {}), UsageError);
  EXPECT_THROW(resolve_endpoint({"http://", ""}, {}), UsageError);
  try {
    resolve_endpoint({"ftp://bob:secretpw@example.org", ""}, {});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find("secretpw"), std::string::npos) << e.what();
  }
}

TEST(CheckEndpointUsable, OpenAIWithoutKeyIsAUsageError) {
  EXPECT_THROW(check_endpoint_usable(resolve_endpoint({}, {})), UsageError);
  EXPECT_NO_THROW(check_endpoint_usable(resolve_endpoint({}, {"", "sk-x"})));
  EXPECT_NO_THROW(check_endpoint_usable(resolve_endpoint({"http://127.0.0.1:8080/v1", ""}, {})));
}

TEST(RedactUrl, RemovesUserInfoOnly) {
  EXPECT_EQ(redact_url("https://u:p@host.example:8443/v1"), "https://host.example:8443/v1");
  EXPECT_EQ(redact_url("https://host.example/v1?a=b@c"), "https://host.example/v1?a=b@c");
  EXPECT_EQ(redact_url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
}

TEST(EndpointConfig, DescribeJsonHasNoKey) {
  EndpointConfig c = resolve_endpoint({"http://user:pw@localhost:1/v1", "sk-very-secret"}, {});
  std::string text = c.describe_json();
  EXPECT_EQ(text.find("sk-very-secret"), std::string::npos);
  EXPECT_EQ(text.find(":pw@"), std::string::npos);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["base_url"], "http://localhost:1/v1");
  EXPECT_EQ(j["api_key_set"], true);
  EXPECT_EQ(j["retry"]["max_attempts"], 6);
}

TEST(Endpoint, RejectsBadSettings) {
  EndpointConfig c;
  c.max_in_flight = 0;
  EXPECT_THROW(Endpoint{c}, UsageError);
  c = EndpointConfig{};
  c.retry.max_attempts = 0;
  EXPECT_THROW(Endpoint{c}, UsageError);
  c = EndpointConfig{};
  c.timeout_s = 0;
  EXPECT_THROW(Endpoint{c}, UsageError);
}

}  // namespace
}  // namespace pwab::llm
