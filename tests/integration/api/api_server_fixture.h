#pragma once

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>

#include "api/http_server.h"
#include "api/router.h"
#include "detectors/card_state.h"
#include "tests/integration/api/http_client.h"
#include "tests/support/fake_service_view.h"

namespace fraud::api {

// What every test of the server uses: its clients, their wait, and their unit of time.
using std::chrono::milliseconds;
using testing::HttpClient;
using testing::RawConnection;
using testing::waitFor;

// A card's state holding `count` events, all from France, one millisecond apart.
inline detectors::CardState stateWithEvents(int count) {
  detectors::CardState state;
  for (int i = 0; i < count; ++i) {
    const std::string id = "tx-" + std::to_string(i);
    state.events.push_back({1000 + i, detectors::Country::of('F', 'R'), id.c_str()});
  }
  return state;
}

// A real HttpServer on 127.0.0.1, an ephemeral port, over a FakeServiceView that tests may
// change while requests run. Tests adjust options_ before startServer().
class ApiServerTest : public ::testing::Test {
 protected:
  static constexpr const char* kCard = "4111111111111111";

  ApiServerTest() {
    options_.address = "127.0.0.1";
    options_.port = 0;
    options_.probe_port = 0;
    view_.setJoined(true);
    view_.setInstanceId("fraud-detector-0");
    view_.assignAllActive();
    // Quiet by default (a test of many requests would print an audit line each); a test that
    // reads the logs registers its own.
    for (const char* name : {"audit", "http"}) {
      spdlog::drop(name);
      spdlog::register_logger(
          std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::null_sink_mt>()));
    }
  }
  ~ApiServerTest() override {
    server_.reset();
    spdlog::drop("audit");
    spdlog::drop("http");
  }

  void startServer() {
    router_ = std::make_unique<Router>(options_, view_, registry_);
    server_ = std::make_unique<HttpServer>(options_, *router_);
    const auto problem = server_->start();
    ASSERT_TRUE(problem.ok()) << problem.message();
    port_ = server_->port();
    ASSERT_NE(port_, 0);
  }

  std::string metricsText() {
    testing::HttpClient client(port_);
    const auto reply = client.get("/metrics");
    return reply ? reply->body : std::string();
  }

  // The registry read in-process, for when no HTTP request can get through.
  std::string registryText() const {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }

  fraud::testing::FakeServiceView view_;
  prometheus::Registry registry_;
  ApiOptions options_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> server_;  // after router_: destroyed first
  uint16_t port_ = 0;
};

}  // namespace fraud::api
