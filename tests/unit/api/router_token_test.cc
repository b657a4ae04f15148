#include <gtest/gtest.h>

#include <string>

#include "api/router.h"
#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

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

}  // namespace
}  // namespace fraud::api
