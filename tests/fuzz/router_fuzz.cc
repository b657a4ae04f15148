// libFuzzer target for the HTTP router (api/router.h): any method, target, headers and body.
// Properties: handle() never crashes or throws; every answer has a status in 200..599, a route
// template as its metrics label and, when JSON, a body that parses; a card sent in a lookup
// body appears in no answer and no audit line.
//
// Input, readable so that the seed corpus is too: the first line is `METHOD TARGET` (a leading
// `!` picks the router that requires a bearer token), header lines `Name: value` follow until an
// empty line, the rest is the body.
#include <prometheus/registry.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "api/router.h"
#include "tests/support/fake_service_view.h"

namespace {

using fraud::api::HttpRequest;
using fraud::api::HttpResponse;
using fraud::testing::FakeServiceView;

void check(bool condition) {
  if (!condition) std::abort();
}

struct World {
  std::ostringstream audit_text;
  FakeServiceView view{"fuzz-key", 6};
  prometheus::Registry registry;
  std::unique_ptr<fraud::api::Router> open;
  std::unique_ptr<fraud::api::Router> guarded;

  World() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(audit_text);
    spdlog::register_logger(std::make_shared<spdlog::logger>("audit", sink));
    spdlog::register_logger(std::make_shared<spdlog::logger>("http", sink));
    view.setJoined(true);
    view.setInstanceId("fraud-detector-0");
    view.setPartition(FakeServiceView::active(0));
    view.setPartition(FakeServiceView::active(1, 50'000));
    view.setPartition(FakeServiceView::restoring(2));
    view.setOwner(3, "fraud-detector-1");
    view.setOwner(4, "bad owner\r\n");
    fraud::detectors::CardState state;
    state.events.push_back({1, fraud::detectors::Country::of('F', 'R'), "tx\xff\x01"});
    state.incident = fraud::detectors::Incident{1, 600'001, 1, {}};
    for (const char* card : {"Zq00000001", "Zq00000002", "Zq00000003", "4111111111111111"}) {
      view.putCard(card, state);
    }
    fraud::api::ApiOptions options;
    options.peer_url_template = "https://{member}.fraud-detector-headless:8443";
    open = std::make_unique<fraud::api::Router>(options, view, registry);
    options.api_token = "fuzz-token";
    guarded = std::make_unique<fraud::api::Router>(options, view, registry);
  }
};

std::string_view takeLine(std::string_view& input) {
  const size_t end = input.find('\n');
  const std::string_view line = input.substr(0, end);
  input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  std::string_view input(reinterpret_cast<const char*>(data), size);

  std::string_view first = takeLine(input);
  const bool guarded = first.starts_with('!');
  if (guarded) first.remove_prefix(1);
  HttpRequest request;
  const size_t space = first.find(' ');
  request.method = std::string(first.substr(0, space));
  request.target = space == std::string_view::npos ? "" : std::string(first.substr(space + 1));
  for (std::string_view line = takeLine(input); !line.empty(); line = takeLine(input)) {
    const size_t colon = line.find(':');
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    request.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  request.body = std::string(input);
  request.client = "127.0.0.1:1";

  world.audit_text.str("");
  const HttpResponse response = (guarded ? world.guarded : world.open)->handle(request);

  check(response.status >= 200 && response.status <= 599);
  check(!response.content_type.empty());
  bool known_route = false;
  for (const auto route : fraud::api::kRoutes) known_route = known_route || route == response.route;
  check(known_route);
  if (response.content_type == "application/json") {
    check(!nlohmann::json::parse(response.body, nullptr, false).is_discarded());
  }
  // Privacy: cards marked "Zq" never come back, nor reach the audit log.
  const auto body = nlohmann::json::parse(request.body, nullptr, false);
  if (body.is_object() && body.contains("card") && body["card"].is_string()) {
    const std::string card = body["card"];
    if (card.size() >= 6 && card.starts_with("Zq")) {
      check(response.body.find(card) == std::string::npos);
      check(world.audit_text.str().find(card) == std::string::npos);
      for (const auto& [name, value] : response.headers)
        check(value.find(card) == std::string::npos);
    }
  }
  return 0;
}
