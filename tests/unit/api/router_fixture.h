#pragma once

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "api/router.h"
#include "detectors/card_state.h"
#include "tests/support/fake_service_view.h"

namespace fraud::api {

// A router over a FakeServiceView, with the audit log captured.
class RouterTest : public ::testing::Test {
 protected:
  static constexpr std::string_view kCard = "4111111111111111";

  RouterTest() {
    audit_ = std::make_shared<spdlog::logger>(
        "audit", std::make_shared<spdlog::sinks::ostream_sink_mt>(audit_text_));
    spdlog::drop("audit");
    spdlog::register_logger(audit_);
    view_.setJoined(true);
    view_.setInstanceId("fraud-detector-0");
    view_.assignAllActive();
  }
  ~RouterTest() override { spdlog::drop("audit"); }

  Router& router() {
    if (!router_) router_ = std::make_unique<Router>(options_, view_, registry_);
    return *router_;
  }

  HttpResponse get(const std::string& target, const std::string& token = "") {
    HttpRequest request{"GET", target, {}, "", "127.0.0.1:50000"};
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
    return router().handle(request);
  }

  HttpResponse lookup(const std::string& body, const std::string& content_type = "application/json",
                      const std::string& token = "") {
    HttpRequest request{
        "POST", "/v1/cards/lookup", {{"Content-Type", content_type}}, body, "127.0.0.1:50000"};
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
    return router().handle(request);
  }

  HttpResponse lookupCard(std::string_view card) {
    return lookup(nlohmann::json{{"card", card}}.dump());
  }

  static nlohmann::json body(const HttpResponse& response) {
    return nlohmann::json::parse(response.body);
  }

  static std::string header(const HttpResponse& response, std::string_view name) {
    for (const auto& [field, value] : response.headers) {
      if (field == name) return value;
    }
    return {};
  }

  static detectors::CardState sampleState() {
    detectors::CardState state;
    state.events.push_back({1'700'000'000'000, detectors::Country::of('F', 'R'), "tx-1"});
    state.events.push_back({1'700'000'060'000, detectors::Country::of('D', 'E'), "tx-2"});
    state.events.push_back({1'700'000'120'000, detectors::Country::of('U', 'S'), "tx-3"});
    state.incident =
        detectors::Incident{1'700'000'000'000,
                            1'700'000'600'000,
                            1,
                            {detectors::Country::of('D', 'E'), detectors::Country::of('F', 'R'),
                             detectors::Country::of('U', 'S')}};
    return state;
  }

  int32_t partitionOfCard() const { return *view_.partitionOf(kCard); }

  // What the audit log holds once the lines recorded so far are written (their own thread
  // writes them).
  std::string auditLog() const {
    if (router_) router_->flushAudit();
    return audit_text_.str();
  }

  ApiOptions options_;
  fraud::testing::FakeServiceView view_;
  prometheus::Registry registry_;
  std::ostringstream audit_text_;
  std::shared_ptr<spdlog::logger> audit_;
  std::unique_ptr<Router> router_;
};

}  // namespace fraud::api
