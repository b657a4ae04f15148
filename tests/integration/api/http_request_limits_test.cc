// HttpServer against malformed, oversized, chunked, partial and slow requests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "api/http_server.h"
#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

TEST_F(ApiServerTest, MalformedRequestGets400JsonAndClose) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GARBAGE\x01 / HTTP/9.9\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 400")) << text;
  EXPECT_NE(text.find(R"("error":"bad_request")"), std::string::npos);
  EXPECT_NE(metricsText().find(R"(fraud_http_requests_total{route="unmatched",status="400"} 1)"),
            std::string::npos);
}

TEST_F(ApiServerTest, OversizedHeadersGet431) {
  options_.max_header_bytes = 2048;
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') +
                       "\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 431")) << text;
  EXPECT_NE(text.find(R"("error":"header_too_large")"), std::string::npos);
}

TEST_F(ApiServerTest, OversizedBodyGets413BeforeItIsRead) {
  options_.max_body_bytes = 1024;
  startServer();
  RawConnection raw(port_);
  // Only the header is sent: the declared length alone must be refused.
  ASSERT_TRUE(
      raw.send("POST /v1/cards/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: 100000\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 413")) << text;
  EXPECT_NE(
      metricsText().find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="413"} 1)"),
      std::string::npos);
}

TEST_F(ApiServerTest, ChunkedBodyGets411AndClose) {
  startServer();
  RawConnection raw(port_);
  // The header alone draws the answer: no chunk is ever read.
  ASSERT_TRUE(
      raw.send("POST /v1/cards/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 411")) << text;
  EXPECT_NE(text.find(R"("error":"length_required")"), std::string::npos) << text;
  EXPECT_NE(
      metricsText().find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="411"} 1)"),
      std::string::npos);
}

TEST_F(ApiServerTest, HalfARequestThenEndOfStreamGets400) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.1\r\nHost"));
  raw.shutdownSend();
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 400")) << text;
}

TEST_F(ApiServerTest, SlowClientGets408AndIsClosedWithinTheReadTimeout) {
  options_.read_timeout_ms = 300;
  startServer();
  RawConnection raw(port_);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // never finished
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(10'000), closed);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.1 408")) << text;
  EXPECT_NE(text.find("Connection: close"), std::string::npos) << text;
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(300 + 2000));  // the timeout plus the closing linger, at most
}

TEST_F(ApiServerTest, SilentConnectionIsClosedWithoutAnAnswer) {
  options_.read_timeout_ms = 200;
  startServer();
  RawConnection raw(port_);
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(10'000), closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(text, "");
}

}  // namespace
}  // namespace fraud::api
