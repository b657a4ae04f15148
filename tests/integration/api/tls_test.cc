#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

using std::chrono::milliseconds;
using testing::RawConnection;
using testing::runCommand;
using testing::TempDir;

// A self-signed certificate for 127.0.0.1, made with the openssl CLI for each test.
class TlsTest : public ApiServerTest {
 protected:
  void SetUp() override {
    const auto made = makeCertificate("server");
    ASSERT_EQ(made.exit_code, 0) << made.output;
    options_.tls_cert_file = dir_.path() + "/server.crt";
    options_.tls_key_file = dir_.path() + "/server.key";
  }

  testing::CommandResult makeCertificate(const std::string& name) const {
    return runCommand(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
        "-nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
        "-keyout " +
        dir_.path() + "/" + name + ".key -out " + dir_.path() + "/" + name + ".crt");
  }

  // curl, verifying the server against the test's certificate (or `ca`); body then "\n" and
  // status.
  testing::CommandResult curl(const std::string& args, const std::string& ca = "") const {
    return runCommand("curl -sS --max-time 10 --cacert " +
                      (ca.empty() ? options_.tls_cert_file : ca) + " -w '\\n%{http_code}' " + args);
  }

  std::string metricValue(const std::string& series) const {
    const std::string text = registryText();
    const size_t at = text.find(series + " ");
    if (at == std::string::npos) return "";
    const size_t begin = at + series.size() + 1;
    return text.substr(begin, text.find('\n', begin) - begin);
  }

  std::string url(const std::string& path) const {
    return "https://127.0.0.1:" + std::to_string(port_) + path;
  }

  TempDir dir_;
};

TEST_F(TlsTest, ServesEveryKindOfRequestToAVerifyingClient) {
  startServer();
  const auto health = curl(url("/healthz"));
  ASSERT_EQ(health.exit_code, 0) << health.output;
  EXPECT_EQ(health.output, "{\"status\":\"ok\"}\n200");
  const auto lookup = curl("-H 'Content-Type: application/json' --data '{\"card\":\"" +
                           std::string(kCard) + "\"}' " + url("/v1/cards/lookup"));
  ASSERT_EQ(lookup.exit_code, 0) << lookup.output;
  EXPECT_TRUE(lookup.output.ends_with("\n404")) << lookup.output;
  const auto json = nlohmann::json::parse(lookup.output.substr(0, lookup.output.rfind('\n')));
  EXPECT_EQ(json["error"], "card_not_found");
  // Two requests on one connection: keep-alive works over TLS too.
  const auto twice = curl(url("/healthz") + " " + url("/readyz"));
  EXPECT_EQ(twice.exit_code, 0) << twice.output;
  EXPECT_NE(twice.output.find("\n200{\"consumer_joined\":true"), std::string::npos) << twice.output;
  EXPECT_TRUE(twice.output.ends_with("\n200")) << twice.output;
}

TEST_F(TlsTest, PlainHttpOnTheTlsPortGetsNoAnswer) {
  startServer();
  const auto plain =
      runCommand("curl -sS --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                 std::to_string(port_) + "/healthz");
  EXPECT_NE(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("200"), std::string::npos) << plain.output;
  // The server is still fine afterwards.
  EXPECT_EQ(curl(url("/healthz")).exit_code, 0);
}

TEST_F(TlsTest, RefusesTls11) {
  startServer();
  const auto old = curl("--tlsv1.1 --tls-max 1.1 " + url("/healthz"));
  EXPECT_NE(old.exit_code, 0) << old.output;
}

TEST_F(TlsTest, Tls12OffersOnlyEcdheWithAeadCiphers) {
  startServer();
  const std::string tls12 = "--tlsv1.2 --tls-max 1.2 ";
  EXPECT_EQ(curl(tls12 + "--ciphers ECDHE-ECDSA-AES128-GCM-SHA256 " + url("/healthz")).exit_code,
            0);
  EXPECT_EQ(curl(tls12 + "--ciphers ECDHE-ECDSA-CHACHA20-POLY1305 " + url("/healthz")).exit_code,
            0);
  // CBC with ECDHE, and AEAD without forward secrecy: both refused.
  for (const char* weak :
       {"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "AES128-GCM-SHA256"}) {
    const auto refused = curl(tls12 + "--ciphers " + weak + " " + url("/healthz"));
    EXPECT_NE(refused.exit_code, 0) << weak << ": " << refused.output;
  }
}

TEST_F(TlsTest, ClientRenegotiationIsRefused) {
  startServer();
  // s_client's "R" asks for a renegotiation; the server must refuse it (a no_renegotiation
  // alert), where OpenSSL's default would have done a second handshake.
  const auto renegotiate = runCommand(
      "(printf 'R\\n'; sleep 2) | timeout 10 openssl s_client -tls1_2 -connect 127.0.0.1:" +
      std::to_string(port_) + " -CAfile " + options_.tls_cert_file + " 2>&1");
  EXPECT_NE(renegotiate.output.find("RENEGOTIATING"), std::string::npos) << renegotiate.output;
  EXPECT_NE(renegotiate.output.find("no renegotiation"), std::string::npos) << renegotiate.output;
  EXPECT_EQ(curl(url("/healthz")).exit_code, 0);
}

TEST_F(TlsTest, ProbeListenerIsPlainHttpBesideTheTlsPort) {
  startServer();
  const auto probe =
      runCommand("curl -sS --max-time 10 http://127.0.0.1:" + std::to_string(server_->probePort()) +
                 "/healthz");
  EXPECT_EQ(probe.exit_code, 0) << probe.output;
  EXPECT_EQ(probe.output, "{\"status\":\"ok\"}");
}

TEST_F(TlsTest, ARotatedCertificateServesNewConnectionsAndABadOneKeepsTheOld) {
  options_.reload_interval_ms = 100;
  startServer();
  ASSERT_EQ(curl(url("/healthz")).exit_code, 0);
  // A new pair, moved into place as a deployment tool would: key first, then certificate.
  ASSERT_EQ(makeCertificate("next").exit_code, 0);
  const std::string next_ca = dir_.path() + "/next.ca.crt";
  ASSERT_EQ(runCommand("cp " + dir_.path() + "/next.crt " + next_ca).exit_code, 0);
  ASSERT_EQ(std::rename((dir_.path() + "/next.key").c_str(), options_.tls_key_file.c_str()), 0);
  ASSERT_EQ(std::rename((dir_.path() + "/next.crt").c_str(), options_.tls_cert_file.c_str()), 0);
  EXPECT_TRUE(testing::waitFor([&] { return curl(url("/healthz"), next_ca).exit_code == 0; },
                               milliseconds(10'000)));
  EXPECT_NE(metricValue(R"(fraud_http_reloads_total{file="tls",outcome="ok"})"), "0");
  // A certificate file that is not one: logged, counted, and the current pair stays in use.
  const std::string errors_before =
      metricValue(R"(fraud_http_reloads_total{file="tls",outcome="error"})");
  dir_.write("server.crt", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  EXPECT_TRUE(testing::waitFor(
      [&] {
        return metricValue(R"(fraud_http_reloads_total{file="tls",outcome="error"})") !=
               errors_before;
      },
      milliseconds(10'000)));
  const auto still = curl(url("/healthz"), next_ca);
  EXPECT_EQ(still.exit_code, 0) << still.output;
}

TEST_F(TlsTest, HandshakeThatNeverStartsIsClosedAfterTheReadTimeout) {
  options_.read_timeout_ms = 200;
  startServer();
  RawConnection raw(port_);
  bool closed = false;
  (void)raw.readUntilClosed(milliseconds(10'000), closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(curl(url("/healthz")).exit_code, 0);
}

TEST_F(TlsTest, StartReportsUnreadableOrMismatchedFiles) {
  options_.tls_cert_file = dir_.path() + "/missing.crt";
  router_ = std::make_unique<Router>(options_, view_, registry_);
  {
    HttpServer server(options_, *router_);
    const auto problem = server.start();
    ASSERT_FALSE(problem.ok());
    EXPECT_NE(problem.message().find("missing.crt"), std::string::npos) << problem.message();
  }
  ASSERT_EQ(makeCertificate("other").exit_code, 0);
  options_.tls_cert_file = dir_.path() + "/other.crt";
  HttpServer server(options_, *router_);
  const auto problem = server.start();
  ASSERT_FALSE(problem.ok());
  EXPECT_NE(problem.message().find("key"), std::string::npos) << problem.message();
  EXPECT_NE(problem.message().find("mismatch"), std::string::npos) << problem.message();
}

TEST_F(TlsTest, ConnectionsOverTheCapAreClosedWithoutAHandshake) {
  options_.max_connections = 1;
  startServer();
  RawConnection holder(port_);  // admitted: waits in its handshake
  ASSERT_TRUE(testing::waitFor(
      [&] { return registryText().find("fraud_http_open_connections 1\n") != std::string::npos; },
      milliseconds(5000)));
  RawConnection over(port_);
  bool closed = false;
  const std::string text = over.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(text, "");
}

}  // namespace
}  // namespace fraud::api
