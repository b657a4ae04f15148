#include "api/openapi.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;
using Answer = std::tuple<std::string, std::string, int>;  // route, method, status

class OpenApiTest : public RouterTest {
 protected:
  OpenApiTest() : document_(Json::parse(openApiDocument())) {}

  // Answers `request` and checks the answer against the document: documented status, content
  // type, and the documented schema's required fields present.
  void expectDocumented(const HttpRequest& request) {
    HttpResponse response = router().handle(request);
    check(request.method, response);
  }

  void check(const std::string& method, const HttpResponse& response) {
    std::string lower_method = method;
    for (char& c : lower_method) c = static_cast<char>(std::tolower(c));
    const std::string route(response.route);
    seen_.emplace(route, lower_method, response.status);
    const Json* operation = find({"paths", route, lower_method});
    ASSERT_NE(operation, nullptr) << method << " " << route << " is not documented";
    const Json* documented = find({"responses", std::to_string(response.status)}, operation);
    ASSERT_NE(documented, nullptr)
        << method << " " << route << " answers " << response.status << ", not documented";
    const std::string media = response.content_type.substr(0, response.content_type.find(';'));
    const Json* schema = find({"content", media, "schema"}, documented);
    ASSERT_NE(schema, nullptr) << route << " " << response.status << " has no " << media;
    if (media == "application/json") {
      const Json body = Json::parse(response.body);
      for (const std::string& field : required(*schema)) {
        EXPECT_TRUE(body.contains(field))
            << route << " " << response.status << " lacks " << field << ": " << response.body;
      }
    }
    if (const Json* headers = find({"headers"}, documented)) {
      for (const auto& [name, spec] : headers->items()) {
        if (name == "Cache-Control") continue;
        EXPECT_NE(header(response, name), "") << route << " " << response.status << " " << name;
      }
    }
  }

  // Every (route, method, status) the document lists.
  std::set<Answer> documentedAnswers() const {
    std::set<Answer> answers;
    for (const auto& [path, item] : document_["paths"].items()) {
      for (const auto& [method, operation] : item.items()) {
        for (const auto& [status, response] : operation["responses"].items()) {
          answers.emplace(path, method, std::stoi(status));
        }
      }
    }
    return answers;
  }

  const Json* find(std::initializer_list<std::string> keys, const Json* from = nullptr) const {
    const Json* node = from ? from : &document_;
    for (const auto& key : keys) {
      if (!node->is_object() || !node->contains(key)) return nullptr;
      node = &(*node)[key];
    }
    return node;
  }

  std::set<std::string> required(const Json& schema) const {
    std::set<std::string> fields;
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"];  // "#/components/schemas/X"
      return required(document_["components"]["schemas"][ref.substr(ref.rfind('/') + 1)]);
    }
    if (schema.contains("required")) {
      for (const auto& field : schema["required"]) fields.insert(field.get<std::string>());
    }
    if (schema.contains("allOf")) {
      for (const auto& part : schema["allOf"]) fields.merge(required(part));
    }
    return fields;
  }

  HttpRequest post(std::string body) const {
    return {
        "POST", "/v1/cards/lookup", {{"Content-Type", "application/json"}}, std::move(body), "c"};
  }

  Json document_;
  std::set<Answer> seen_;
};

TEST_F(OpenApiTest, IsOpenApi30WithEveryRoute) {
  EXPECT_EQ(document_["openapi"].get<std::string>().substr(0, 4), "3.0.");
  for (const std::string_view route : kRoutes) {
    if (route == kRouteUnmatched) continue;
    EXPECT_TRUE(document_["paths"].contains(std::string(route))) << route;
  }
}

TEST_F(OpenApiTest, EveryAnswerOfTheRouterIsDocumentedAndEveryDocumentedAnswerHappens) {
  options_.api_token = "tok";
  options_.peer_url_template = "http://{member}:8080";
  const auto card = nlohmann::json{{"card", kCard}}.dump();
  const std::string ref = view_.cardRef(kCard).hex();
  const auto authed = [](HttpRequest request) {
    request.headers.emplace_back("Authorization", "Bearer tok");
    return request;
  };
  const auto get_ = [&](const std::string& target) {
    return authed(HttpRequest{"GET", target, {}, "", "c"});
  };

  expectDocumented(get_("/healthz"));
  expectDocumented(get_("/readyz"));
  expectDocumented(get_("/metrics"));
  expectDocumented(get_("/openapi.json"));
  expectDocumented(get_("/v1/partitions"));
  expectDocumented(get_("/v1/lateness"));
  expectDocumented(HttpRequest{"GET", "/v1/lateness", {}, "", "c"});  // 401
  expectDocumented(get_("/v1/alerts/recent"));
  expectDocumented(HttpRequest{"GET", "/v1/alerts/recent", {}, "", "c"});  // 401
  expectDocumented(HttpRequest{"GET", "/ui/", {}, "", "c"});
  expectDocumented(HttpRequest{"GET", "/ui/console.js", {}, "", "c"});
  expectDocumented(HttpRequest{"GET", "/ui", {}, "", "c"});             // 308
  expectDocumented(HttpRequest{"GET", "/ui/nothing", {}, "", "c"});     // 404
  expectDocumented(HttpRequest{"GET", "/v1/partitions", {}, "", "c"});  // 401
  expectDocumented(HttpRequest{"GET", "/v1/cards/" + ref, {}, "", "c"});
  expectDocumented(post(card));

  expectDocumented(authed(post(card)));                                              // 404
  expectDocumented(get_("/v1/cards/" + ref));                                        // 404
  expectDocumented(get_("/v1/cards/nothex"));                                        // 400
  expectDocumented(authed(post("{")));                                               // 400
  expectDocumented(authed(HttpRequest{"POST", "/v1/cards/lookup", {}, card, "c"}));  // 415
  check("POST", router().reject("/v1/cards/lookup", 413, "body_too_large", "x"));
  check("POST", router().reject("/v1/cards/lookup", 411, "length_required", "x"));
  view_.putCard(kCard, sampleState());
  expectDocumented(authed(post(card)));        // 200
  expectDocumented(get_("/v1/cards/" + ref));  // 200
  view_.setPartition(fraud::testing::FakeServiceView::restoring(partitionOfCard()));
  expectDocumented(authed(post(card)));        // 503
  expectDocumented(get_("/v1/cards/" + ref));  // 503
  expectDocumented(get_("/readyz"));           // 503
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "peer-1");
  expectDocumented(authed(post(card)));  // 307
  view_.setOwner(partitionOfCard(), std::nullopt);
  expectDocumented(authed(post(card)));  // 421

  std::set<Answer> missing;
  for (const Answer& answer : documentedAnswers()) {
    if (!seen_.contains(answer)) missing.insert(answer);
  }
  for (const auto& [route, method, status] : missing) {
    ADD_FAILURE() << method << " " << route << " " << status << " is documented but never seen";
  }
}

}  // namespace
}  // namespace fraud::api
