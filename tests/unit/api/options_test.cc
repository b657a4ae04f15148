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

TEST(ApiOptions, ProbePortIsOnByDefaultCanBeOffOrEphemeralButNotTheApiPort) {
  ApiOptions options;
  EXPECT_EQ(options.probe_port, 8081);
  for (const int32_t port : {-1, 0, 1, 65535}) {
    options.probe_port = port;
    EXPECT_EQ(options.validate(), std::vector<std::string>{}) << port;
  }
  for (const int32_t port : {-2, 65536}) {
    options.probe_port = port;
    EXPECT_TRUE(mentions(options.validate(), "probe_port must be in -1..65535")) << port;
  }
  options.probe_port = options.port;
  EXPECT_TRUE(mentions(options.validate(), "probe_port must differ from port"));
  options.port = 0;
  options.probe_port = 0;  // two ephemeral ports are two ports
  EXPECT_EQ(options.validate(), std::vector<std::string>{});
  options.probe_max_connections = 0;
  EXPECT_TRUE(mentions(options.validate(), "probe_max_connections must be in 1..10000"));
}

TEST(ApiOptions, ThreadNiceIsAStandardNiceness) {
  ApiOptions options;
  EXPECT_EQ(options.thread_nice, 0);
  options.thread_nice = 19;
  EXPECT_EQ(options.validate(), std::vector<std::string>{});
  for (const int32_t nice : {-1, 20}) {
    options.thread_nice = nice;
    EXPECT_TRUE(mentions(options.validate(), "thread_nice must be in 0..19")) << nice;
  }
}

TEST(ApiOptions, TheAuditQueueHoldsAtLeastOneLineAndAtMostAMillion) {
  ApiOptions options;
  EXPECT_EQ(options.audit_queue_lines, 10'000u);
  for (const size_t lines : {size_t{1}, size_t{1'000'000}}) {
    options.audit_queue_lines = lines;
    EXPECT_EQ(options.validate(), std::vector<std::string>{}) << lines;
  }
  for (const size_t lines : {size_t{0}, size_t{1'000'001}}) {
    options.audit_queue_lines = lines;
    EXPECT_TRUE(mentions(options.validate(), "audit_queue_lines must be in 1..1000000")) << lines;
  }
}

TEST(ApiOptions, PerClientCapIsAtMostTheGlobalCap) {
  ApiOptions options;
  options.max_connections = 100;
  options.max_connections_per_client = 100;
  EXPECT_EQ(options.validate(), std::vector<std::string>{});
  options.max_connections_per_client = 101;
  EXPECT_TRUE(
      mentions(options.validate(), "max_connections_per_client must be in 1..100, got 101"));
  options.max_connections_per_client = 0;
  EXPECT_TRUE(mentions(options.validate(), "max_connections_per_client"));
}

TEST(ApiOptions, ViewDeadlineQueueAndReloadIntervalHaveBounds) {
  ApiOptions options;
  options.view_timeout_ms = 9;
  options.max_pending_view_answers = 0;
  options.reload_interval_ms = 99;
  auto problems = options.validate();
  EXPECT_EQ(problems.size(), 3u);
  EXPECT_TRUE(mentions(problems, "view_timeout_ms must be in 10..60000, got 9"));
  EXPECT_TRUE(mentions(problems, "max_pending_view_answers must be in 1..100000, got 0"));
  EXPECT_TRUE(mentions(problems, "reload_interval_ms must be in 100..3600000, got 99"));
  options.view_timeout_ms = 60'000;
  options.max_pending_view_answers = 100'000;
  options.reload_interval_ms = 3'600'000;
  EXPECT_EQ(options.validate(), std::vector<std::string>{});
  options.view_timeout_ms = 60'001;
  EXPECT_TRUE(mentions(options.validate(), "view_timeout_ms"));
}

TEST(ApiOptions, TokenFileNeedsItsTokenLoaded) {
  ApiOptions options;
  options.api_token_file = "/run/secrets/token";
  EXPECT_TRUE(mentions(options.validate(), "api_token_file is set but api_token is not"));
  options.api_token = "abc";
  EXPECT_EQ(options.validate(), std::vector<std::string>{});
}

TEST(CheckApiToken, SaysWhyWithoutQuotingTheToken) {
  EXPECT_TRUE(checkApiToken("abc-DEF_0.9~+/==").ok());
  EXPECT_EQ(checkApiToken("").message(), "must be 1..4096 bytes, got 0");
  EXPECT_EQ(checkApiToken(std::string(4097, 'a')).message(), "must be 1..4096 bytes, got 4097");
  EXPECT_TRUE(checkApiToken(std::string(4096, 'a')).ok());
  const base::Status why = checkApiToken("secret value");
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.code(), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(why.message(), "must use only the characters A-Z a-z 0-9 - . _ ~ + / and trailing =");
  EXPECT_EQ(why.message().find("secret"), std::string::npos);
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
  options.peer_url_template = "https://{member}.svc:8443/a b";
  EXPECT_TRUE(mentions(options.validate(),
                       "peer_url_template must be printable ASCII without spaces, got "));
  options.peer_url_template = "ftp://{member}";
  EXPECT_TRUE(mentions(options.validate(), "peer_url_template must start with http://"));
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
