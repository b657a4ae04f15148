// libFuzzer target for the HTTP router (api/router.h): any method, target, headers and body.
// Properties: handle() never crashes or throws; every answer has a status in 200..599, a route
// template as its metrics label and, when JSON, a body that parses; a card sent in a lookup
// body appears in no answer and no audit line; tryHandleInline(), when it answers, answers
// exactly what handle() does.
//
// Input, readable so that the seed corpus is too: the first line is `METHOD TARGET` (a leading
// `!` picks the router that requires a bearer token), header lines `Name: value` follow until an
// empty line, the rest is the body.
//
// Connection mode: an input whose first line is `RAW <step>` is, after that line, the bytes a
// client sends on one connection (any framing: chunked, extensions, trailers, pipelining). They
// go through the server's own RequestReader (api/request_reader.h) `step` bytes at a time, as
// reads would deliver them, and each request it completes is routed. Properties: a reader never
// holds more than its byte cap while it needs more; it refuses only with 400, 411, 413 or 431;
// no request with Transfer-Encoding, or a body over the limit, is ever completed.
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

#include "api/request_reader.h"
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
    // Shared by the access log (this thread) and the audit log (each router's writer thread).
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(audit_text);
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

  // The audit lines written so far (each router writes them on a thread of its own).
  std::string auditText() {
    open->flushAudit();
    guarded->flushAudit();
    return audit_text.str();
  }
  void clearAudit() {
    open->flushAudit();
    guarded->flushAudit();
    audit_text.str("");
  }
};

std::string_view takeLine(std::string_view& input) {
  const size_t end = input.find('\n');
  const std::string_view line = input.substr(0, end);
  input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
  return line;
}

void checkAnswer(const HttpResponse& response) {
  check(response.status >= 200 && response.status <= 599);
  check(!response.content_type.empty());
  bool known_route = false;
  for (const auto route : fraud::api::kRoutes) known_route = known_route || route == response.route;
  check(known_route);
  if (response.content_type == "application/json") {
    check(!nlohmann::json::parse(response.body, nullptr, false).is_discarded());
  }
}

// Small limits, so that the fuzzer reaches every cap.
fraud::api::ApiOptions connectionLimits() {
  fraud::api::ApiOptions options;
  options.max_header_bytes = 1024;
  options.max_body_bytes = 1024;
  return options;
}

void fuzzConnection(World& world, size_t step, std::string_view bytes) {
  using fraud::api::detail::RequestReader;
  static const fraud::api::ApiOptions options = connectionLimits();
  const size_t cap = RequestReader::requestByteCap(options);
  std::string buffer;  // what the connection has received and the reader not consumed
  size_t next = 0;
  for (int requests = 0; requests < 64; ++requests) {
    RequestReader reader(options);
    for (;;) {
      if (!buffer.empty()) buffer.erase(0, reader.feed(buffer));
      if (reader.progress() != RequestReader::Progress::kNeedMore) break;
      check(buffer.size() < cap);
      if (next >= bytes.size()) return;  // the client stopped sending
      const std::string_view more = bytes.substr(next, step);
      buffer.append(more);
      next += more.size();
    }
    if (reader.progress() == RequestReader::Progress::kRefused) {
      const int status = reader.refusal().status;
      check(status == 400 || status == 411 || status == 413 || status == 431);
      checkAnswer(world.open->reject(reader.target(), status, reader.refusal().code,
                                     reader.refusal().message));
      return;  // the server closes the connection
    }
    HttpRequest request = reader.take();
    check(request.body.size() <= options.max_body_bytes);
    check(!request.header("transfer-encoding").has_value());
    request.client = "127.0.0.1:1";
    checkAnswer(world.open->handle(request));
    if (!reader.keepAlive()) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  std::string_view input(reinterpret_cast<const char*>(data), size);

  if (input.starts_with("RAW ")) {
    std::string_view header = takeLine(input);
    header.remove_prefix(4);
    size_t step = 0;
    for (const char c : header) {
      if (c >= '0' && c <= '9' && step < 100'000) step = step * 10 + static_cast<size_t>(c - '0');
    }
    world.clearAudit();
    fuzzConnection(world, step == 0 ? 1 : step, input);
    return 0;
  }

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

  world.clearAudit();
  const fraud::api::Router& router = *(guarded ? world.guarded : world.open);
  const HttpResponse response = router.handle(request);

  checkAnswer(response);
  // The answer on the I/O thread, when given, is handle()'s.
  if (const auto answered = router.tryHandleInline(request)) {
    check(answered->status == response.status && answered->body == response.body &&
          answered->headers == response.headers && answered->route == response.route);
  }
  // Privacy: cards marked "Zq" never come back, nor reach the audit log.
  const auto body = nlohmann::json::parse(request.body, nullptr, false);
  if (body.is_object() && body.contains("card") && body["card"].is_string()) {
    const std::string card = body["card"];
    if (card.size() >= 6 && card.starts_with("Zq")) {
      check(response.body.find(card) == std::string::npos);
      check(world.auditText().find(card) == std::string::npos);
      for (const auto& [name, value] : response.headers)
        check(value.find(card) == std::string::npos);
    }
  }
  return 0;
}
