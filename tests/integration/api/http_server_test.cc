// HttpServer over real HTTP: every endpoint, keep-alive, pipelining, HTTP/1.0, the token, curl.
#include "api/http_server.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;
using testing::runCommand;

TEST_F(ApiServerTest, ServesEveryEndpointOverRealHttp) {
  startServer();
  HttpClient client(port_);
  EXPECT_EQ(client.get("/healthz")->status, 200);
  EXPECT_EQ(client.get("/readyz")->status, 200);
  const auto metrics = client.get("/metrics");
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(Json::parse(client.get("/openapi.json")->body)["info"]["title"], "fraud-detector API");
  EXPECT_EQ(Json::parse(client.get("/v1/partitions")->body)["partitions"].size(), 4u);
  EXPECT_EQ(client.lookup(kCard)->status, 404);
  const std::string ref = view_.putCard(kCard, stateWithEvents(2)).hex();
  const auto found = client.lookup(kCard);
  ASSERT_EQ(found->status, 200);
  EXPECT_EQ(found->header("content-type"), "application/json");
  EXPECT_EQ(found->header("cache-control"), "no-store");
  EXPECT_EQ(Json::parse(found->body)["card_ref"], ref);
  EXPECT_EQ(client.get("/v1/cards/" + ref)->status, 200);
  EXPECT_EQ(client.get("/v1/cards/XYZ")->status, 400);
  EXPECT_EQ(client.send("DELETE", "/healthz")->status, 405);
  EXPECT_EQ(client.get("/nowhere")->status, 404);
  view_.setJoined(false);
  EXPECT_EQ(client.get("/readyz")->status, 503);
}

TEST_F(ApiServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  startServer();
  HttpClient client(port_);
  for (int i = 0; i < 50; ++i) {
    const auto reply = client.get("/healthz");
    ASSERT_TRUE(reply) << client.error();
    EXPECT_TRUE(reply->keep_alive);
  }
  // This connection is the only one open.
  EXPECT_NE(client.get("/metrics")->body.find("fraud_http_open_connections 1\n"),
            std::string::npos);
}

TEST_F(ApiServerTest, PipelinedRequestsAreAnsweredInOrder) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(
      raw.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  const size_t first = text.find("HTTP/1.1 200");
  const size_t second = text.find("HTTP/1.1 404");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);
}

TEST_F(ApiServerTest, Http10ClientGetsAnAnswerAndAClose) {
  startServer();
  RawConnection raw(port_);
  ASSERT_TRUE(raw.send("GET /healthz HTTP/1.0\r\n\r\n"));
  bool closed = false;
  const std::string text = raw.readUntilClosed(milliseconds(5000), closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(text.starts_with("HTTP/1.0 200")) << text;
}

TEST_F(ApiServerTest, TokenGuardsV1OnlyWhenConfigured) {
  options_.api_token = "integration-token";
  startServer();
  HttpClient client(port_);
  const auto denied = client.get("/v1/partitions");
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->header("www-authenticate"), "Bearer realm=\"fraud-detector\"");
  EXPECT_EQ(client.get("/v1/partitions", "wrong")->status, 401);
  EXPECT_EQ(client.get("/v1/partitions", "integration-token")->status, 200);
  EXPECT_EQ(client.lookup(kCard)->status, 401);
  EXPECT_EQ(client.lookup(kCard, "integration-token")->status, 404);
  EXPECT_EQ(client.get("/healthz")->status, 200);
  EXPECT_EQ(client.get("/readyz")->status, 200);
  EXPECT_EQ(client.get("/metrics")->status, 200);
}

// Two instances: curl follows the 307 from the one that does not hold the card's partition to
// the one that does, re-posting the body, and gets the card.
TEST_F(ApiServerTest, CurlFollowsTheRedirectToTheOwningInstance) {
  fraud::testing::FakeServiceView owner_view;
  owner_view.setJoined(true);
  owner_view.setInstanceId("127.0.0.1");
  owner_view.assignAllActive();
  const std::string ref = owner_view.putCard(kCard, stateWithEvents(2)).hex();
  prometheus::Registry owner_registry;
  Router owner_router(options_, owner_view, owner_registry);
  HttpServer owner(options_, owner_router);
  ASSERT_TRUE(owner.start().ok());

  const int32_t partition = *view_.partitionOf(kCard);
  view_.revokePartition(partition);
  view_.setOwner(partition, "127.0.0.1");
  options_.peer_url_template = "http://{member}:" + std::to_string(owner.port());
  startServer();
  const auto result = runCommand(
      "curl -sS -L -w '\n%{http_code} %{num_redirects}' -H 'Content-Type: application/json' "
      "--data '{\"card\":\"" +
      std::string(kCard) + "\"}' http://127.0.0.1:" + std::to_string(port_) + "/v1/cards/lookup");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(result.output.ends_with("\n200 1")) << result.output;
  EXPECT_EQ(Json::parse(result.output.substr(0, result.output.rfind('\n')))["card_ref"], ref);
}

TEST_F(ApiServerTest, ARotatedTokenFileIsPickedUpAndABadOneKeepsTheOld) {
  testing::TempDir dir;
  dir.write("token", "first-token\n");
  options_.api_token = "first-token";
  options_.api_token_file = dir.path() + "/token";
  options_.reload_interval_ms = 100;
  startServer();
  HttpClient client(port_);
  EXPECT_EQ(client.get("/v1/partitions", "first-token")->status, 200);
  dir.write("token.new", "second-token\n");
  ASSERT_EQ(std::rename((dir.path() + "/token.new").c_str(), options_.api_token_file.c_str()), 0);
  EXPECT_TRUE(waitFor([&] { return client.get("/v1/partitions", "second-token")->status == 200; },
                      milliseconds(5000)));
  EXPECT_EQ(client.get("/v1/partitions", "first-token")->status, 401);
  dir.write("token", "not a token\n");
  EXPECT_TRUE(waitFor(
      [&] {
        return registryText().find(R"(fraud_http_reloads_total{file="token",outcome="error"} 1)") !=
               std::string::npos;
      },
      milliseconds(5000)));
  EXPECT_EQ(client.get("/v1/partitions", "second-token")->status, 200);
  EXPECT_NE(registryText().find(R"(fraud_http_reloads_total{file="token",outcome="ok"} 1)"),
            std::string::npos);
}

// curl as a second, independent client; the access and audit logs captured to check that the
// clear card goes to neither.
TEST_F(ApiServerTest, CurlLookupLeavesNoCardInAccessOrAuditLog) {
  std::ostringstream logs;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logs);
  for (const char* name : {"audit", "http"}) {
    spdlog::drop(name);
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_level(spdlog::level::trace);
    spdlog::register_logger(logger);
  }
  view_.putCard(kCard, stateWithEvents(3));
  startServer();
  const auto result = runCommand(
      "curl -sS -w '\\n%{http_code}' -H 'Content-Type: application/json' "
      "--data '{\"card\":\"" +
      std::string(kCard) + "\"}' http://127.0.0.1:" + std::to_string(port_) + "/v1/cards/lookup");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(result.output.ends_with("\n200")) << result.output;
  EXPECT_EQ(Json::parse(result.output.substr(0, result.output.rfind('\n')))["events"].size(), 3u);
  EXPECT_EQ(result.output.find(kCard), std::string::npos);
  server_->stop();
  router_->flushAudit();
  const std::string text = logs.str();
  EXPECT_NE(text.find("outcome=found status=200"), std::string::npos) << text;
  EXPECT_NE(text.find("POST /v1/cards/lookup 200"), std::string::npos) << text;  // access line
  EXPECT_EQ(text.find(kCard), std::string::npos) << text;
  spdlog::drop("audit");
  spdlog::drop("http");
}

}  // namespace
}  // namespace fraud::api
