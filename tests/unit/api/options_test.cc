#include "api/options.h"

#include <gtest/gtest.h>

#include <string>

namespace fraud::api {
namespace {

bool mentions(const std::vector<std::string>& problems, std::string_view text) {
  for (const auto& problem : problems) {
    if (problem.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ApiOptions, DefaultsAreValid) {
  EXPECT_EQ(ApiOptions{}.validate(), std::vector<std::string>{});
}

TEST(ApiOptions, ReportsEveryProblemAtOnce) {
  ApiOptions options;
  options.address = "localhost";
  options.port = 70000;
  options.ready_max_lag = -1;
  options.peer_url_template = "ftp://x";
  options.tls_cert_file = "cert.pem";
  options.max_header_bytes = 10;
  options.max_body_bytes = 1 << 30;
  options.read_timeout_ms = 0;
  options.idle_timeout_ms = 0;
  options.max_connections = 0;
  options.threads = 0;
  const auto problems = options.validate();
  EXPECT_EQ(problems.size(), 11u);
  for (const char* field :
       {"address", "port", "ready_max_lag", "peer_url_template", "tls_", "max_header_bytes",
        "max_body_bytes", "read_timeout_ms", "idle_timeout_ms", "max_connections", "threads"}) {
    EXPECT_TRUE(mentions(problems, field)) << field;
  }
}

TEST(ApiOptions, AcceptsIpv6AndEphemeralPort) {
  ApiOptions options;
  options.address = "::1";
  options.port = 0;
  EXPECT_TRUE(options.validate().empty());
}

TEST(ApiOptions, PeerTemplateNeedsMemberAndNoQuery) {
  ApiOptions options;
  options.peer_url_template = "http://fraud-detector-headless:8080";
  EXPECT_TRUE(mentions(options.validate(), "{member}"));
  options.peer_url_template = "https://{member}.svc:8443/?x=1";
  EXPECT_TRUE(mentions(options.validate(), "query"));
  options.peer_url_template = "https://{member}.fraud-detector-headless:8443";
  EXPECT_TRUE(options.validate().empty());
}

TEST(ApiOptions, TokenMustBeB64TokenAndIsNeverEchoed) {
  ApiOptions options;
  options.api_token = "abc-DEF_0.9~+/==";
  EXPECT_TRUE(options.validate().empty());
  options.api_token = "secret\n";
  const auto problems = options.validate();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].find("secret"), std::string::npos);
  options.api_token = "";
  EXPECT_TRUE(mentions(options.validate(), "api_token"));
}

TEST(ApiOptions, TlsNeedsBothFiles) {
  ApiOptions options;
  options.tls_key_file = "key.pem";
  EXPECT_TRUE(mentions(options.validate(), "tls_cert_file and tls_key_file"));
  options.tls_cert_file = "cert.pem";
  EXPECT_TRUE(options.validate().empty());
  EXPECT_TRUE(options.tls());
}

}  // namespace
}  // namespace fraud::api
