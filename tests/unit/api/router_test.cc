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

TEST_F(RouterTest, LookupFoundAnswersTheCardWithoutTheClearNumber) {
  const std::string ref = view_.putCard(kCard, sampleState()).hex();
  const HttpResponse response = lookupCard(kCard);
  ASSERT_EQ(response.status, 200) << response.body;
  const Json expected = {
      {"card_ref", ref},
      {"partition", partitionOfCard()},
      {"stream_time", 1'700'000'000'000},
      {"events",
       {{{"tx_id", "tx-1"}, {"country", "FR"}, {"event_time", 1'700'000'000'000}},
        {{"tx_id", "tx-2"}, {"country", "DE"}, {"event_time", 1'700'000'060'000}},
        {{"tx_id", "tx-3"}, {"country", "US"}, {"event_time", 1'700'000'120'000}}}},
      {"incident",
       {{"start", 1'700'000'000'000},
        {"end", 1'700'000'600'000},
        {"revision", 1},
        {"countries", {"DE", "FR", "US"}}}}};
  EXPECT_EQ(body(response), expected);
  EXPECT_EQ(header(response, "Cache-Control"), "no-store");
  EXPECT_EQ(response.body.find(kCard), std::string::npos);
}

TEST_F(RouterTest, LookupWithoutIncidentAnswersNull) {
  detectors::CardState state;
  state.events.push_back({5, detectors::Country::of('F', 'R'), "only"});
  view_.putCard(kCard, state);
  EXPECT_EQ(body(lookupCard(kCard))["incident"], nullptr);
}

TEST_F(RouterTest, LookupOfACardWithoutStateIs404WithItsRefAndPartition) {
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 404);
  const Json json = body(response);
  EXPECT_EQ(json["error"], "card_not_found");
  EXPECT_EQ(json["partition"], partitionOfCard());
  EXPECT_EQ(json["card_ref"], view_.cardRef(kCard).hex());
}

TEST_F(RouterTest, LookupWhileItsPartitionRestoresIs503WithRetryAfter) {
  view_.setPartition(fraud::testing::FakeServiceView::restoring(partitionOfCard()));
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["error"], "restoring");
  EXPECT_EQ(header(response, "Retry-After"), "5");
}

TEST_F(RouterTest, LookupOwnedElsewhereRedirectsToTheOwnersLookupUrl) {
  options_.peer_url_template = "http://{member}.fraud-detector-headless:8080/";
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "fraud-detector-2");
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 307);
  EXPECT_EQ(header(response, "Location"),
            "http://fraud-detector-2.fraud-detector-headless:8080/v1/cards/lookup");
  EXPECT_EQ(body(response)["owner"], "fraud-detector-2");
}

TEST_F(RouterTest, LookupOwnedElsewhereWithoutPeerTemplateIs421NamingTheOwner) {
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "fraud-detector-2");
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 421);
  EXPECT_EQ(body(response)["partition"], partitionOfCard());
  EXPECT_EQ(body(response)["owner"], "fraud-detector-2");
}

TEST_F(RouterTest, LookupWithUnknownOwnerIs421WithNullOwner) {
  options_.peer_url_template = "http://{member}:8080";
  view_.revokePartition(partitionOfCard());
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 421);
  EXPECT_EQ(body(response)["owner"], nullptr);
}

TEST_F(RouterTest, LookupNeverRedirectsToAnOwnerIdUnsafeInAUrl) {
  options_.peer_url_template = "http://{member}:8080";
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "evil.example/\r\nX-Injected: 1");
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 421);
  EXPECT_EQ(header(response, "Location"), "");
}

TEST_F(RouterTest, LookupWhenTheGroupNamesThisInstanceButNotAssignedYetIs503) {
  options_.peer_url_template = "http://{member}:8080";
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "fraud-detector-0");  // this instance
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["error"], "rebalancing");
}

TEST_F(RouterTest, LookupBeforeThePartitionCountIsKnownIs503) {
  view_.setPartitionCount(std::nullopt);
  const HttpResponse response = lookupCard(kCard);
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["error"], "partitions_unknown");
  EXPECT_EQ(header(response, "Retry-After"), "5");
}

TEST_F(RouterTest, LookupRejectsBadBodiesWith4xxJson) {
  EXPECT_EQ(body(lookup("{not json"))["error"], "invalid_json");
  EXPECT_EQ(lookup("{not json").status, 400);
  EXPECT_EQ(body(lookup("[]"))["error"], "invalid_request");
  EXPECT_EQ(body(lookup(R"({"pan":"4111111111111111"})"))["error"], "invalid_request");
  EXPECT_EQ(body(lookup(R"({"card":4111111111111111})"))["error"], "invalid_request");
  EXPECT_EQ(body(lookup(R"({"card":"411"})"))["error"], "invalid_card");
  EXPECT_EQ(body(lookup(R"({"card":"4111 1111 1111 1111"})"))["error"], "invalid_card");
  EXPECT_EQ(body(lookup(R"({"card":")" + std::string(65, '4') + "\"}"))["error"], "invalid_card");
  const HttpResponse text = lookup(R"({"card":"4111111111111111"})", "text/plain");
  EXPECT_EQ(text.status, 415);
  EXPECT_EQ(lookup(R"({"card":"4111111111111111"})", "Application/JSON; charset=utf-8").status,
            404);
}

TEST_F(RouterTest, ErrorAnswersNeverEchoTheCard) {
  const std::string spaced = "4111 1111 1111 1111";
  EXPECT_EQ(lookup(R"({"card":")" + spaced + "\"}").body.find("4111"), std::string::npos);
  const HttpResponse by_path = get("/v1/cards/4111111111111111");
  EXPECT_EQ(by_path.status, 400);
  EXPECT_EQ(by_path.body.find("4111"), std::string::npos);
}

TEST_F(RouterTest, AuditLogsEveryLookupWithRefAndOutcomeNeverTheCard) {
  options_.peer_url_template = "http://{member}:8080";
  const std::string ref = view_.cardRef(kCard).hex();
  EXPECT_EQ(lookupCard(kCard).status, 404);
  view_.putCard(kCard, sampleState());
  EXPECT_EQ(lookupCard(kCard).status, 200);
  EXPECT_EQ(get("/v1/cards/" + ref).status, 200);
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "peer-1");
  EXPECT_EQ(lookupCard(kCard).status, 307);
  EXPECT_EQ(lookup(R"({"card":"41 1"})").status, 400);

  const std::string log = auditLog();
  EXPECT_EQ(log.find(kCard), std::string::npos) << log;
  EXPECT_EQ(log.find("41 1"), std::string::npos) << log;
  const std::string prefix =
      "card_lookup client=127.0.0.1:50000 route=/v1/cards/lookup card_ref=" + ref +
      " partition=" + std::to_string(partitionOfCard());
  EXPECT_NE(log.find(prefix + " outcome=not_found status=404"), std::string::npos) << log;
  EXPECT_NE(log.find(prefix + " outcome=found status=200"), std::string::npos) << log;
  EXPECT_NE(log.find(prefix + " outcome=redirected status=307"), std::string::npos) << log;
  EXPECT_NE(log.find("route=/v1/cards/{card_ref} card_ref=" + ref), std::string::npos) << log;
  EXPECT_NE(log.find("card_ref=- partition=- outcome=invalid status=400"), std::string::npos);
}

TEST_F(RouterTest, CardByRefAnswersFromAnyHeldPartition) {
  const std::string ref = view_.putCard(kCard, sampleState()).hex();
  const HttpResponse response = get("/v1/cards/" + ref);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(body(response)["partition"], partitionOfCard());
  EXPECT_EQ(body(response)["card_ref"], ref);
  EXPECT_EQ(body(response), body(lookupCard(kCard)));
}

TEST_F(RouterTest, CardByRefNotHeldIs404NamingHeldPartitions) {
  view_.revokePartition(3);
  const HttpResponse response = get("/v1/cards/" + std::string(64, 'a'));
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(body(response)["partitions"], Json({0, 1, 2}));
  EXPECT_EQ(body(response)["card_ref"], std::string(64, 'a'));
}

TEST_F(RouterTest, CardByRefWhileRestoringIs503) {
  view_.setPartition(fraud::testing::FakeServiceView::restoring(1));
  const HttpResponse response = get("/v1/cards/" + std::string(64, 'b'));
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["partitions"], Json({1}));
  EXPECT_EQ(header(response, "Retry-After"), "5");
}

TEST_F(RouterTest, CardByRefRejectsAnythingButLowercaseHex64) {
  for (const std::string& bad : {std::string(63, 'a'), std::string(65, 'a'), std::string(64, 'A'),
                                 std::string(63, 'a') + "g", std::string("%61")}) {
    const HttpResponse response = get("/v1/cards/" + bad);
    EXPECT_EQ(response.status, 400) << bad;
    EXPECT_EQ(body(response)["error"], "invalid_card_ref");
  }
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

TEST_F(RouterTest, WithoutATokenV1IsOpen) { EXPECT_EQ(get("/v1/partitions").status, 200); }

TEST_F(RouterTest, WithATokenV1NeedsItAndProbesStayOpen) {
  options_.api_token = "s3cret-token";
  const HttpResponse missing = get("/v1/partitions");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(header(missing, "WWW-Authenticate"), "Bearer realm=\"fraud-detector\"");
  const HttpResponse wrong = get("/v1/partitions", "s3cret-tokem");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(header(wrong, "WWW-Authenticate"),
            "Bearer realm=\"fraud-detector\", error=\"invalid_token\"");
  EXPECT_EQ(get("/v1/partitions", "s3cret-token-and-more").status, 401);
  EXPECT_EQ(get("/v1/partitions", "s3cret-token").status, 200);
  EXPECT_EQ(lookup(R"({"card":"4111111111111111"})", "application/json", "s3cret-token").status,
            404);
  EXPECT_EQ(lookup(R"({"card":"4111111111111111"})").status, 401);
  EXPECT_EQ(get("/v1/unknown").status, 401);  // does not reveal which paths exist
  for (const char* open : {"/healthz", "/readyz", "/metrics", "/openapi.json"}) {
    EXPECT_EQ(get(open).status, 200) << open;
  }
}

TEST_F(RouterTest, ReplacedTokenTakesOverAndTheOldOneStopsWorking) {
  options_.api_token = "old-token";
  EXPECT_EQ(get("/v1/partitions", "old-token").status, 200);
  router().replaceToken("new-token");
  EXPECT_EQ(get("/v1/partitions", "old-token").status, 401);
  EXPECT_EQ(get("/v1/partitions", "new-token").status, 200);
  EXPECT_EQ(get("/healthz").status, 200);
}

TEST_F(RouterTest, TokenSchemeIsCaseInsensitiveAndOtherSchemesFail) {
  options_.api_token = "tok";
  HttpRequest request{"GET", "/v1/partitions", {{"authorization", "bearer   tok "}}, "", "c"};
  EXPECT_EQ(router().handle(request).status, 200);
  request.headers = {{"Authorization", "Basic dG9rOnRvaw=="}};
  const HttpResponse basic = router().handle(request);
  EXPECT_EQ(basic.status, 401);
  EXPECT_EQ(header(basic, "WWW-Authenticate"),
            "Bearer realm=\"fraud-detector\", error=\"invalid_request\"");
}

TEST_F(RouterTest, UnauthorizedCardLookupsAreAudited) {
  options_.api_token = "tok";
  EXPECT_EQ(lookupCard(kCard).status, 401);
  EXPECT_NE(auditLog().find("card_ref=- partition=- outcome=unauthorized status=401"),
            std::string::npos);
  EXPECT_EQ(auditLog().find(kCard), std::string::npos);
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
