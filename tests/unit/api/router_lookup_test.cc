#include <gtest/gtest.h>

#include <string>

#include "api/router.h"
#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;

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

}  // namespace
}  // namespace fraud::api
