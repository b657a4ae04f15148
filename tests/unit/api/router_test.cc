#include "api/router.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;

TEST_F(RouterTest, HealthAnswersOk) {
  const HttpResponse response = get("/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(body(response), Json({{"status", "ok"}}));
  EXPECT_EQ(response.route, kRouteHealth);
}

TEST_F(RouterTest, ReadyWhenJoinedActiveAndCaughtUp) {
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 200);
  const Json json = body(response);
  EXPECT_TRUE(json["ready"]);
  EXPECT_EQ(json["reasons"], Json::array());
  EXPECT_EQ(json["partitions"].size(), 4u);
  EXPECT_EQ(json["max_lag"], 10000);
}

TEST_F(RouterTest, NotReadyBeforeTheConsumerJoins) {
  view_.setJoined(false);
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 503);
  EXPECT_FALSE(body(response)["ready"]);
  EXPECT_EQ(body(response)["reasons"], Json({"consumer has not joined the group"}));
}

TEST_F(RouterTest, NotReadyWhileAPartitionRestoresAndSaysWhich) {
  view_.setPartition(fraud::testing::FakeServiceView::restoring(2));
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 503);
  const Json json = body(response);
  EXPECT_EQ(json["reasons"], Json({"partition 2: restoring"}));
  EXPECT_EQ(json["partitions"][2],
            Json({{"partition", 2}, {"ready", false}, {"reason", "restoring"}}));
  EXPECT_EQ(json["partitions"][1]["reason"], nullptr);
}

TEST_F(RouterTest, LagAtTheBoundIsReadyAndOneMoreIsNot) {
  options_.ready_max_lag = 50;
  view_.setPartition(fraud::testing::FakeServiceView::active(1, 50));
  EXPECT_EQ(get("/readyz").status, 200);
  view_.setPartition(fraud::testing::FakeServiceView::active(1, 51));
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["reasons"], Json({"partition 1: lagging: 51 > 50"}));
}

TEST_F(RouterTest, UnknownLagAndEventTimeLagDoNotMakeUnready) {
  auto quiet = fraud::testing::FakeServiceView::active(0);
  quiet.offset_lag.reset();
  quiet.high_watermark.reset();
  quiet.event_time_lag_seconds = 86'400.0;  // a quiet partition, a day behind in event time
  view_.setPartition(quiet);
  EXPECT_EQ(get("/readyz").status, 200);
}

TEST_F(RouterTest, BlockedOutputsMakeUnready) {
  view_.setOutputsBlocked(true);
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["outputs_blocked"], true);
  EXPECT_EQ(body(response)["reasons"][0], "alerts cannot be written; input is held");
  EXPECT_EQ(body(get("/v1/partitions"))["outputs_blocked"], true);
}

TEST_F(RouterTest, JoinedWithNoPartitionsIsReady) {
  for (int32_t p = 0; p < 4; ++p) view_.revokePartition(p);
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(body(response)["partitions"], Json::array());
}

TEST_F(RouterTest, MetricsCountByRouteTemplateNeverRawPath) {
  const std::string ref = view_.putCard(kCard, sampleState()).hex();
  EXPECT_EQ(get("/v1/cards/" + ref).status, 200);
  EXPECT_EQ(lookupCard(kCard).status, 200);
  const HttpResponse response = get("/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(response.body.find(
                R"(fraud_http_requests_total{route="/v1/cards/{card_ref}",status="200"} 1)"),
            std::string::npos)
      << response.body;
  EXPECT_NE(
      response.body.find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="200"} 1)"),
      std::string::npos);
  EXPECT_NE(response.body.find("fraud_http_request_duration_seconds_bucket"), std::string::npos);
  EXPECT_EQ(response.body.find(ref), std::string::npos);
  EXPECT_EQ(response.body.find(kCard), std::string::npos);
}

TEST_F(RouterTest, OpenApiIsServedVerbatim) {
  const HttpResponse response = get("/openapi.json");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(body(response)["openapi"].get<std::string>().substr(0, 4), "3.0.");
}

TEST_F(RouterTest, PartitionsListsAssignmentLagsRestoreAndSize) {
  view_.setStateBytes(12345);
  view_.setPartition(fraud::testing::FakeServiceView::restoring(3));
  view_.putCard(kCard, sampleState());
  const Json json = body(get("/v1/partitions"));
  EXPECT_EQ(json["instance_id"], "fraud-detector-0");
  EXPECT_EQ(json["state_bytes"], 12345);
  ASSERT_EQ(json["partitions"].size(), 4u);
  const Json& p0 = json["partitions"][0];
  EXPECT_EQ(p0["phase"], "active");
  EXPECT_EQ(p0["offset_lag"], 0);
  EXPECT_EQ(p0["next_offset"], 100);
  EXPECT_EQ(p0["stream_time"], 1'700'000'000'000);
  EXPECT_EQ(json["partitions"][partitionOfCard()]["cards"], 1);
  const Json& p3 = json["partitions"][3];
  EXPECT_EQ(p3["phase"], "restoring");
  EXPECT_EQ(p3["restore_progress"], 0.25);
  EXPECT_EQ(p3["stream_time"], nullptr);
  EXPECT_EQ(p3["next_offset"], nullptr);
  EXPECT_EQ(p3["offset_lag"], nullptr);
}

TEST_F(RouterTest, WrongMethodIs405WithAllow) {
  HttpRequest request{"POST", "/healthz", {}, "", "c"};
  HttpResponse response = router().handle(request);
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(header(response, "Allow"), "GET");
  response = get("/v1/cards/lookup");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(header(response, "Allow"), "POST");
}

TEST_F(RouterTest, UnknownPathsAre404AndQueriesAreIgnored) {
  EXPECT_EQ(get("/nope").status, 404);
  EXPECT_EQ(body(get("/nope"))["error"], "not_found");
  EXPECT_EQ(get("/healthz/").status, 404);
  EXPECT_EQ(get("/v1/cards/a/b").status, 404);
  EXPECT_EQ(get("/healthz?verbose=1").status, 200);
  EXPECT_EQ(get("*").status, 400);
  EXPECT_EQ(get("").status, 400);
}

TEST_F(RouterTest, AFailingViewGives500AndIsCounted) {
  view_.setFailing(true);
  const HttpResponse response = get("/readyz");
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(body(response)["error"], "internal");
  view_.setFailing(false);
  EXPECT_NE(
      get("/metrics").body.find(R"(fraud_http_requests_total{route="/readyz",status="500"} 1)"),
      std::string::npos);
}

TEST_F(RouterTest, RejectAnswersJsonAndCountsUnderTheTargetsRoute) {
  const HttpResponse response = router().reject("/v1/cards/lookup", 413, "body_too_large", "x");
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(body(response)["error"], "body_too_large");
  EXPECT_NE(get("/metrics")
                .body.find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="413"} 1)"),
            std::string::npos);
}

TEST(RouteOf, MapsPathsToTemplatesAndEverythingElseToUnmatched) {
  EXPECT_EQ(Router::routeOf("/v1/cards/lookup"), kRouteCardLookup);
  EXPECT_EQ(Router::routeOf("/v1/cards/4111111111111111"), kRouteCardByRef);
  EXPECT_EQ(Router::routeOf("/v1/cards/x?y=1"), kRouteCardByRef);
  EXPECT_EQ(Router::routeOf("/v1/cards/"), kRouteUnmatched);
  EXPECT_EQ(Router::routeOf("/metrics?x"), kRouteMetrics);
  EXPECT_EQ(Router::routeOf("/etc/passwd"), kRouteUnmatched);
  EXPECT_EQ(Router::routeOf(""), kRouteUnmatched);
}

TEST(HttpRequest, HeaderLookupIsCaseInsensitiveAndFirstWins) {
  const HttpRequest request{"GET", "/", {{"Host", "a"}, {"HOST", "b"}}, "", ""};
  EXPECT_EQ(request.header("host"), "a");
  EXPECT_FALSE(request.header("authorization").has_value());
}

}  // namespace
}  // namespace fraud::api
