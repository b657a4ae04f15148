// Card lookups over real HTTP on loopback: one the view answers from memory is answered on the
// I/O thread (no view-pool hop), one it declines on the view pool, with the same JSON either way;
// an inline answer does not queue behind a full view pool.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "tests/integration/api/api_server_fixture.h"
#include "tests/integration/api/gated_status_view.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;

bool hasLine(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST_F(ApiServerTest, ALookupAnswersTheSameJsonInlineAndFromTheViewPool) {
  detectors::CardState state = stateWithEvents(3);
  state.incident = detectors::Incident{1000, 1002, 1, {detectors::Country::of('F', 'R')}};
  const detectors::CardRef ref = view_.putCard(kCard, state);
  const int32_t partition = *view_.partitionOf(kCard);
  startServer();
  HttpClient client(port_);

  const auto inline_reply = client.lookup(kCard);
  ASSERT_TRUE(inline_reply) << client.error();
  ASSERT_EQ(inline_reply->status, 200) << inline_reply->body;
  const Json expected = {
      {"card_ref", ref.hex()},
      {"partition", partition},
      {"stream_time", 1'700'000'000'000},
      {"events",
       {{{"tx_id", "tx-0"}, {"country", "FR"}, {"event_time", 1000}},
        {{"tx_id", "tx-1"}, {"country", "FR"}, {"event_time", 1001}},
        {{"tx_id", "tx-2"}, {"country", "FR"}, {"event_time", 1002}}}},
      {"incident", {{"start", 1000}, {"end", 1002}, {"revision", 1}, {"countries", {"FR"}}}}};
  EXPECT_EQ(Json::parse(inline_reply->body), expected);
  EXPECT_EQ(view_.blockingLookups(), 0) << "answered inline, yet the view pool read the view";
  EXPECT_TRUE(hasLine(registryText(), R"(fraud_http_view_answers_total{path="inline"} 1)"));

  view_.evictCard(partition, ref);  // now only a blocking read (the view pool) finds it
  const auto pooled_reply = client.lookup(kCard);
  ASSERT_TRUE(pooled_reply) << client.error();
  EXPECT_EQ(pooled_reply->status, 200);
  EXPECT_EQ(pooled_reply->body, inline_reply->body);
  EXPECT_EQ(pooled_reply->header("content-type"), inline_reply->header("content-type"));
  EXPECT_EQ(pooled_reply->header("cache-control"), inline_reply->header("cache-control"));
  EXPECT_EQ(view_.blockingLookups(), 1);
  const std::string metrics = registryText();
  EXPECT_TRUE(hasLine(metrics, R"(fraud_http_view_answers_total{path="pool"} 1)")) << metrics;
  EXPECT_TRUE(
      hasLine(metrics, R"(fraud_http_requests_total{route="/v1/cards/lookup",status="200"} 2)"))
      << metrics;
  const auto by_ref = client.get("/v1/cards/" + ref.hex());
  ASSERT_TRUE(by_ref) << client.error();
  EXPECT_EQ(by_ref->body, inline_reply->body);
}

TEST_F(ApiServerTest, AnInlineLookupDoesNotQueueBehindAFullViewPool) {
  options_.view_threads = 1;
  options_.max_pending_view_answers = 1;
  options_.view_timeout_ms = 30'000;
  view_.putCard(kCard, stateWithEvents(2));
  GatedStatusView slow(view_);
  router_ = std::make_unique<Router>(options_, slow, registry_);
  server_ = std::make_unique<HttpServer>(options_, *router_);
  ASSERT_TRUE(server_->start().ok());
  port_ = server_->port();
  slow.close();
  std::optional<testing::Reply> held_reply;
  std::thread held([&] {
    HttpClient client(port_);
    held_reply = client.get("/v1/partitions");
  });
  ASSERT_TRUE(waitFor([&] { return slow.waiting(); }, milliseconds(5000)));

  HttpClient client(port_);
  const auto cached = client.lookup(kCard);
  ASSERT_TRUE(cached) << client.error();
  EXPECT_EQ(cached->status, 200) << cached->body;
  const auto absent = client.lookup("4000000000000002");  // a complete cache knows it has none
  ASSERT_TRUE(absent) << client.error();
  EXPECT_EQ(absent->status, 404) << absent->body;
  view_.setCachesComplete(false);  // now only the view pool could tell
  const auto busy = client.lookup("4000000000000002");
  ASSERT_TRUE(busy) << client.error();
  EXPECT_EQ(busy->status, 503) << "the pool is full";
  EXPECT_NE(busy->body.find(R"("error":"busy")"), std::string::npos) << busy->body;

  slow.open();
  held.join();
  ASSERT_TRUE(held_reply.has_value());
  EXPECT_EQ(held_reply->status, 200);
}

}  // namespace
}  // namespace fraud::api
