#include <gtest/gtest.h>

#include <string>

#include "api/console_page.h"
#include "api/router.h"
#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

constexpr std::string_view kSvgNamespace = "http://www.w3.org/2000/svg";

size_t occurrences(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

class ConsoleRoutesTest : public RouterTest {
 protected:
  ConsoleRoutesTest() { options_.api_token = "tok"; }
};

TEST_F(ConsoleRoutesTest, ConsolePageLoadsWithoutTheTokenUnderAStrictPolicy) {
  const HttpResponse page = get("/ui/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.route, kRouteConsole);
  const std::string csp = header(page, "Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(header(page, "X-Content-Type-Options"), "nosniff");
  EXPECT_NE(page.body.find("src=\"console.js\""), std::string::npos);
  EXPECT_EQ(get("/ui/console.js").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(get("/ui/console.css").content_type, "text/css; charset=utf-8");
  const HttpResponse missing = get("/ui/secrets");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(header(missing, "Content-Security-Policy"), "");
  const HttpResponse bare = get("/ui");
  EXPECT_EQ(bare.status, 308);
  EXPECT_EQ(header(bare, "Location"), "/ui/");
  EXPECT_EQ(get("/ui/a/b").status, 404);
  EXPECT_EQ(get("/ui/a/b").route, kRouteUnmatched);
}

TEST_F(ConsoleRoutesTest, ConsoleFilesHoldNoInlineScriptStyleOrInnerHtml) {
  for (const ConsoleAsset& asset : consoleAssets()) {
    EXPECT_EQ(asset.body.find("innerHTML"), std::string_view::npos) << asset.name;
    EXPECT_EQ(asset.body.find("style=\""), std::string_view::npos) << asset.name;
    EXPECT_EQ(asset.body.find("<script>"), std::string_view::npos) << asset.name;
    // Nothing is loaded from elsewhere: the only URL is the SVG namespace's name.
    EXPECT_EQ(occurrences(asset.body, "http"), occurrences(asset.body, kSvgNamespace))
        << asset.name << " names another origin";
  }
}

TEST_F(ConsoleRoutesTest, LatenessNeedsTheTokenAndCarriesTheAdvice) {
  EXPECT_EQ(get("/v1/lateness").status, 401);
  LatenessReport report;
  report.interval_ms = 3'600'000;
  report.grace_ms = 120'000;
  report.records = 1000;
  report.late_dropped = 2;
  report.late_dropped_share = 0.002;
  report.vs_stream_time = LatenessQuantiles{10, 90'000, 200'000, 300'000};
  report.advised_grace_p99_ms = 90'000;
  report.advised_grace_p999_ms = 200'000;
  report.candidates = {{60'000, 30, 0.03}, {120'000, 2, 0.002}};
  view_.setLateness(report);
  const HttpResponse response = get("/v1/lateness", "tok");
  ASSERT_EQ(response.status, 200);
  const auto json = body(response);
  EXPECT_EQ(json["records"], 1000);
  EXPECT_EQ(json["vs_stream_time"]["p99_ms"], 90'000);
  EXPECT_TRUE(json["vs_record_timestamp"].is_null());
  EXPECT_EQ(json["advice"]["grace_p999_ms"], 200'000);
  EXPECT_EQ(json["candidates"][1]["current"], true);
  EXPECT_EQ(json["candidates"][0]["current"], false);
}

TEST_F(ConsoleRoutesTest, PartitionsCarryEachPartitionsLateness) {
  auto status = fraud::testing::FakeServiceView::active(1);
  status.lateness = LatenessReport{};
  status.lateness->records = 7;
  view_.setPartition(status);
  const auto json = body(get("/v1/partitions", "tok"));
  bool seen = false;
  for (const auto& p : json["partitions"]) {
    if (p["partition"] == 1) {
      EXPECT_EQ(p["lateness"]["records"], 7);
      seen = true;
    } else {
      EXPECT_TRUE(p["lateness"].is_null());
    }
  }
  EXPECT_TRUE(seen);
}

TEST_F(ConsoleRoutesTest, RecentAlertsNeedTheTokenAndNameCardsByRefOnly) {
  EXPECT_EQ(get("/v1/alerts/recent").status, 401);
  RecentAlert alert;
  alert.alert_id = "a1";
  alert.idempotency_key = "a1:2";
  alert.card_ref = view_.cardRef(kCard);
  alert.revision = 2;
  alert.countries = {"DE", "FR", "US"};
  view_.setRecentAlerts({alert});
  const HttpResponse response = get("/v1/alerts/recent", "tok");
  ASSERT_EQ(response.status, 200);
  const auto json = body(response);
  EXPECT_EQ(json["instance_id"], "fraud-detector-0");
  ASSERT_EQ(json["alerts"].size(), 1u);
  EXPECT_EQ(json["alerts"][0]["card_ref"], alert.card_ref.hex());
  EXPECT_EQ(json["alerts"][0]["idempotency_key"], "a1:2");
  EXPECT_EQ(response.body.find(kCard), std::string::npos);
}

TEST_F(ConsoleRoutesTest, ManualRedirectGivesTheOwnersLocationIn421) {
  options_.peer_url_template = "http://{member}:8080";
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "peer-1");
  HttpRequest request{"POST",
                      "/v1/cards/lookup",
                      {{"Content-Type", "application/json"},
                       {"Authorization", "Bearer tok"},
                       {"X-Fraud-Redirect", "manual"}},
                      nlohmann::json{{"card", kCard}}.dump(),
                      "c"};
  const HttpResponse manual = router().handle(request);
  EXPECT_EQ(manual.status, 421);
  EXPECT_EQ(body(manual)["location"], "http://peer-1:8080/v1/cards/lookup");
  EXPECT_EQ(header(manual, "Location"), "");
  request.headers.pop_back();
  EXPECT_EQ(router().handle(request).status, 307);
  // Any other value of the header is refused, not read as its absence (schemathesis sent an
  // empty one and got the 307).
  for (const char* other : {"", "Manual", "follow"}) {
    request.headers.emplace_back("X-Fraud-Redirect", other);
    const HttpResponse refused = router().handle(request);
    EXPECT_EQ(refused.status, 400) << "'" << other << "'";
    EXPECT_EQ(body(refused)["error"], "invalid_redirect_mode");
    request.headers.pop_back();
  }
}

}  // namespace
}  // namespace fraud::api
