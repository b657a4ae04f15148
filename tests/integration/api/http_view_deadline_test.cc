// HttpServer over a view that hangs or is saturated: 503 at the deadline, not a hung probe.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "api/http_server.h"
#include "tests/integration/api/api_server_fixture.h"
#include "tests/integration/api/gated_status_view.h"

namespace fraud::api {
namespace {

TEST_F(ApiServerTest, AViewThatHangsGets503AtTheDeadlineNotAHungProbe) {
  options_.view_timeout_ms = 200;
  GatedStatusView gated(view_);
  router_ = std::make_unique<Router>(options_, gated, registry_);
  server_ = std::make_unique<HttpServer>(options_, *router_);
  ASSERT_TRUE(server_->start().ok());
  gated.close();
  for (const uint16_t port : {server_->port(), server_->probePort()}) {
    HttpClient client(port);
    const auto start = std::chrono::steady_clock::now();
    const auto reply = client.get("/readyz");
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(reply) << client.error();
    EXPECT_EQ(reply->status, 503);
    EXPECT_NE(reply->body.find(R"("error":"view_timeout")"), std::string::npos) << reply->body;
    EXPECT_EQ(reply->header("retry-after"), "1");
    EXPECT_GE(took, milliseconds(150));
    EXPECT_LT(took, milliseconds(2000));  // the deadline, not the hang
    // The connection stays usable and answers what needs no view.
    EXPECT_EQ(client.get("/healthz")->status, 200);
  }
  EXPECT_NE(registryText().find(R"(fraud_http_view_unanswered_total{reason="timeout"} 2)"),
            std::string::npos);
  gated.open();  // the late answers are dropped, and not counted; the view recovers
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_NE(registryText().find(R"(fraud_http_requests_total{route="/readyz",status="503"} 2)"),
            std::string::npos)
      << registryText();
  EXPECT_EQ(registryText().find(R"(fraud_http_requests_total{route="/readyz",status="200"})"),
            std::string::npos)
      << "a dropped late answer was counted too";
  EXPECT_TRUE(waitFor(
      [&] {
        HttpClient client(server_->probePort());
        const auto reply = client.get("/readyz");
        return reply && reply->status == 200;
      },
      milliseconds(5000)));
  server_.reset();
}

TEST_F(ApiServerTest, AFullViewQueueGets503BusyAtOnce) {
  options_.view_threads = 1;
  options_.max_pending_view_answers = 1;
  options_.view_timeout_ms = 30'000;
  startServer();
  view_.holdLookups();
  std::optional<testing::Reply> held_reply;
  std::thread held([&] {
    HttpClient client(port_);
    held_reply = client.lookup(kCard);
  });
  ASSERT_TRUE(waitFor([&] { return view_.waitingLookups() == 1; }, milliseconds(5000)));
  HttpClient client(port_);
  const auto busy = client.get("/v1/partitions");
  ASSERT_TRUE(busy) << client.error();
  EXPECT_EQ(busy->status, 503);
  EXPECT_NE(busy->body.find(R"("error":"busy")"), std::string::npos) << busy->body;
  // The probe listener has its own view thread and queue.
  HttpClient probe(server_->probePort());
  EXPECT_EQ(probe.get("/readyz")->status, 200);
  view_.releaseLookups();
  held.join();
  ASSERT_TRUE(held_reply.has_value());
  EXPECT_EQ(held_reply->status, 404);
  EXPECT_EQ(client.get("/v1/partitions")->status, 200);
}

}  // namespace
}  // namespace fraud::api
