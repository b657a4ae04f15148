// Router::tryHandleInline, the card lookups answered on the I/O thread: which requests it
// answers (and then without a blocking view call), which it declines (without a trace), and
// that an answer, its audit line and its metrics are the ones handle() gives.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <optional>
#include <sstream>
#include <string>

#include "api/router.h"
#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

using fraud::testing::FakeServiceView;

class RouterInlineTest : public RouterTest {
 protected:
  RouterInlineTest() { audit_->set_pattern("%v"); }  // lines comparable: no timestamps

  static HttpRequest lookupRequest(std::string_view card, const std::string& token = "") {
    HttpRequest request{"POST",
                        "/v1/cards/lookup",
                        {{"Content-Type", "application/json"}},
                        nlohmann::json{{"card", card}}.dump(),
                        "127.0.0.1:50000"};
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
    return request;
  }
  static HttpRequest getRequest(const std::string& target) {
    return HttpRequest{"GET", target, {}, "", "127.0.0.1:50000"};
  }

  std::string metricsText() {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }
  // What the audit log gained since the last call.
  std::string newAuditLines() {
    const std::string all = auditLog();
    std::string added = all.substr(audit_seen_);
    audit_seen_ = all.size();
    return added;
  }

  // `request` answered inline with no blocking view call, then by handle(): the same answer
  // and the same audit line(s). Returns the inline answer.
  HttpResponse expectInlineAsHandle(const HttpRequest& request) {
    (void)newAuditLines();
    const int blocking = view_.blockingLookups();
    const std::optional<HttpResponse> answered = router().tryHandleInline(request);
    EXPECT_TRUE(answered.has_value()) << request.method << " " << request.target;
    if (!answered) return {};
    EXPECT_EQ(view_.blockingLookups(), blocking) << "answered inline, yet a blocking call";
    const std::string inline_audit = newAuditLines();
    const HttpResponse pooled = router().handle(request);
    EXPECT_EQ(newAuditLines(), inline_audit);
    EXPECT_EQ(answered->status, pooled.status);
    EXPECT_EQ(answered->content_type, pooled.content_type);
    EXPECT_EQ(answered->headers, pooled.headers);
    EXPECT_EQ(answered->body, pooled.body);
    EXPECT_EQ(answered->route, pooled.route);
    return *answered;
  }
  // `request` declined inline without a trace (no audit line, no metric).
  void expectDeclined(const HttpRequest& request) {
    const Router& declining = router();  // its metric families registered first
    (void)newAuditLines();
    const std::string metrics_before = metricsText();
    EXPECT_FALSE(declining.tryHandleInline(request).has_value())
        << request.method << " " << request.target;
    EXPECT_EQ(newAuditLines(), "");
    EXPECT_TRUE(metricsText() == metrics_before) << "a declined request was counted";
  }

  size_t audit_seen_ = 0;
};

TEST_F(RouterInlineTest, ACachedCardIsAnsweredInlineWithoutABlockingLookup) {
  view_.putCard(kCard, sampleState());
  const HttpResponse response = expectInlineAsHandle(lookupRequest(kCard));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(body(response)["events"].size(), 3u);
  EXPECT_EQ(view_.inlineLookups(), 1);
}

TEST_F(RouterInlineTest, ACardEvictedToDiskIsDeclinedAndAnsweredByTheBlockingLookup) {
  const detectors::CardRef ref = view_.putCard(kCard, sampleState());
  view_.evictCard(partitionOfCard(), ref);
  expectDeclined(lookupRequest(kCard));
  expectDeclined(getRequest("/v1/cards/" + ref.hex()));
  EXPECT_EQ(view_.blockingLookups(), 0);
  EXPECT_EQ(router().handle(lookupRequest(kCard)).status, 200);
  EXPECT_EQ(view_.blockingLookups(), 1);
}

TEST_F(RouterInlineTest, ACardWithoutStateIs404InlineOnlyWhenTheCacheIsComplete) {
  EXPECT_EQ(expectInlineAsHandle(lookupRequest(kCard)).status, 404);
  view_.setCachesComplete(false);
  expectDeclined(lookupRequest(kCard));
}

TEST_F(RouterInlineTest, NotHeldIsAnsweredInline) {
  options_.peer_url_template = "http://{member}.fraud-detector-headless:8080/";
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "fraud-detector-2");
  EXPECT_EQ(expectInlineAsHandle(lookupRequest(kCard)).status, 307);
  HttpRequest manual = lookupRequest(kCard);
  manual.headers.emplace_back("X-Fraud-Redirect", "manual");
  EXPECT_EQ(expectInlineAsHandle(manual).status, 421);
  view_.setOwner(partitionOfCard(), "fraud-detector-0");  // this instance: rebalancing
  EXPECT_EQ(expectInlineAsHandle(lookupRequest(kCard)).status, 503);
  EXPECT_EQ(view_.blockingLookups(), 3) << "only handle()'s";
}

TEST_F(RouterInlineTest, ARestoringPartitionIsAnsweredInline) {
  view_.setPartition(FakeServiceView::restoring(partitionOfCard()));
  const HttpResponse response = expectInlineAsHandle(lookupRequest(kCard));
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(body(response)["error"], "restoring");
}

TEST_F(RouterInlineTest, CardByRefIsAnsweredInlineWhenFoundAndDeclinedOtherwise) {
  const std::string ref = view_.putCard(kCard, sampleState()).hex();
  EXPECT_EQ(expectInlineAsHandle(getRequest("/v1/cards/" + ref)).status, 200);
  // Not found and restoring list partitions from status(), which may wait.
  expectDeclined(getRequest("/v1/cards/" + std::string(64, 'a')));
  view_.setPartition(FakeServiceView::restoring(1));
  expectDeclined(getRequest("/v1/cards/" + std::string(64, 'a')));
  // A malformed ref needs no view.
  EXPECT_EQ(expectInlineAsHandle(getRequest("/v1/cards/" + std::string(64, 'A'))).status, 400);
}

TEST_F(RouterInlineTest, AMissingOrWrongTokenIsRefusedInlineAsByHandle) {
  options_.api_token = "s3cret-token-of-some-length";
  view_.putCard(kCard, sampleState());
  const HttpResponse missing = expectInlineAsHandle(lookupRequest(kCard));
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(expectInlineAsHandle(lookupRequest(kCard, "wrong-token")).status, 401);
  EXPECT_EQ(expectInlineAsHandle(getRequest("/v1/cards/" + view_.cardRef(kCard).hex())).status,
            401);
  EXPECT_NE(auditLog().find("outcome=unauthorized status=401"), std::string::npos) << auditLog();
  EXPECT_EQ(expectInlineAsHandle(lookupRequest(kCard, "s3cret-token-of-some-length")).status, 200);
}

TEST_F(RouterInlineTest, TheAuditLineIsTheOneHandleWrites) {
  view_.putCard(kCard, sampleState());
  (void)newAuditLines();
  ASSERT_TRUE(router().tryHandleInline(lookupRequest(kCard)).has_value());
  const std::string line = newAuditLines();
  EXPECT_NE(line.find("card_lookup client=127.0.0.1:50000 route=/v1/cards/lookup card_ref=" +
                      view_.cardRef(kCard).hex() + " partition=" +
                      std::to_string(partitionOfCard()) + " outcome=found status=200"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find(kCard), std::string::npos) << "never the clear card";
  (void)router().handle(lookupRequest(kCard));
  EXPECT_EQ(newAuditLines(), line);
}

TEST_F(RouterInlineTest, BadRequestsAreRefusedInlineAsByHandle) {
  HttpRequest text = lookupRequest(kCard);
  text.headers = {{"Content-Type", "text/plain"}};
  EXPECT_EQ(expectInlineAsHandle(text).status, 415);
  HttpRequest garbled = lookupRequest(kCard);
  garbled.body = "{not json";
  EXPECT_EQ(expectInlineAsHandle(garbled).status, 400);
  EXPECT_EQ(expectInlineAsHandle(getRequest("/v1/cards/lookup")).status, 405);
}

TEST_F(RouterInlineTest, AnswersThatMayWaitOnTheViewAreDeclined) {
  for (const char* target : {"/readyz", "/v1/partitions", "/v1/lateness", "/v1/alerts/recent",
                             "/healthz", "/v1/nothing"}) {
    expectDeclined(getRequest(target));
  }
  view_.holdLookups();  // a view that would wait: its try-variants decline
  view_.putCard(kCard, sampleState());
  expectDeclined(lookupRequest(kCard));
  view_.releaseLookups();
}

TEST_F(RouterInlineTest, AnInlineAnswerIsCountedAsHandleCountsIt) {
  view_.putCard(kCard, sampleState());
  ASSERT_TRUE(router().tryHandleInline(lookupRequest(kCard)).has_value());
  const std::string text = metricsText();
  EXPECT_NE(text.find(R"(fraud_http_requests_total{route="/v1/cards/lookup",status="200"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(fraud_http_request_duration_seconds_count{route="/v1/cards/lookup"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(fraud_http_view_answers_total{path="inline"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(fraud_http_view_answers_total{path="pool"} 0)"), std::string::npos);
}

TEST_F(RouterInlineTest, AThrowingViewIs500InlineAsByHandle) {
  view_.putCard(kCard, sampleState());
  view_.setFailing(true);
  EXPECT_EQ(expectInlineAsHandle(lookupRequest(kCard)).status, 500);
}

}  // namespace
}  // namespace fraud::api
