#include "api/router.h"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "api/bearer_auth.h"
#include "api/console_page.h"
#include "api/http_text.h"
#include "api/json_views.h"
#include "api/lookup_audit.h"
#include "api/openapi.h"

namespace fraud::api {
namespace {

using http_text::pathOf;
using json_views::error;
using json_views::errorBody;
using json_views::json;
using json_views::Json;
using json_views::methodNotAllowed;
using json_views::orNull;
using json_views::retryLater;

// The recent alerts an answer lists at most (the ring holds about as many).
constexpr size_t kRecentAlertsLimit = 1000;

// docs/rule.md §1: a card is 4..64 printable ASCII characters other than space.
bool isCard(std::string_view card) {
  return card.size() >= 4 && card.size() <= 64 &&
         std::all_of(card.begin(), card.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// An instance id that can stand in a URL's host without escaping.
bool isUrlSafeMember(std::string_view id) {
  return !id.empty() && id.size() <= 253 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
  });
}

bool isJsonMediaType(std::string_view content_type) {
  return http_text::equalsIgnoreCase(
      http_text::trim(content_type.substr(0, content_type.find(';'))), json_views::kJson);
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (http_text::equalsIgnoreCase(field, name)) return std::string_view(value);
  }
  return std::nullopt;
}

Router::Router(ApiOptions options, const ServiceView& view, prometheus::Registry& registry)
    : options_(std::move(options)),
      view_(view),
      registry_(registry),
      metrics_(registry),
      auth_(std::make_unique<BearerAuth>(options_.api_token)),
      audit_(std::make_unique<LookupAudit>()) {
  log_ = spdlog::get("http");
  if (!log_) log_ = spdlog::default_logger()->clone("http");
}

Router::~Router() = default;

void Router::replaceToken(const std::string& token) { auth_->replace(token); }

std::string_view Router::routeOf(std::string_view target) {
  const std::string_view path = pathOf(target);
  for (const std::string_view route : kRoutes) {
    if (path == route) return route;
  }
  constexpr std::string_view kCards = "/v1/cards/";
  if (path.starts_with(kCards) && path.size() > kCards.size() &&
      path.find('/', kCards.size()) == std::string_view::npos) {
    return kRouteCardByRef;
  }
  if (path == "/ui" || (path.starts_with("/ui/") && path.find('/', 4) == std::string_view::npos)) {
    return kRouteConsole;
  }
  return kRouteUnmatched;
}

bool Router::readsView(std::string_view target) {
  return routeOf(target) == kRouteReady || pathOf(target).starts_with("/v1/");
}

HttpResponse Router::handle(const HttpRequest& request) const {
  double seconds = 0;
  HttpResponse response = handleUncounted(request, seconds);
  count(response, seconds);
  return response;
}

void Router::count(const HttpResponse& response, double seconds) const {
  metrics_.countRequest(response.route, response.status, seconds);
}

HttpResponse Router::handleUncounted(const HttpRequest& request, double& seconds) const {
  const auto start = std::chrono::steady_clock::now();
  HttpResponse response;
  try {
    response = route(request);
  } catch (const std::exception& e) {
    log_->error("{} {} failed: {}", request.method, routeOf(request.target), e.what());
    response = error(500, "internal", "the server failed to answer; see its log");
  } catch (...) {
    response = error(500, "internal", "the server failed to answer; see its log");
  }
  response.route = routeOf(request.target);
  response.headers.emplace_back("Cache-Control", "no-store");
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  seconds = took.count();
  return response;
}

HttpResponse Router::reject(std::string_view target, int status, std::string_view code,
                            std::string_view message) const {
  HttpResponse response = error(status, code, message);
  response.route = routeOf(target);
  response.headers.emplace_back("Cache-Control", "no-store");
  metrics_.countRequest(response.route, status, 0);
  return response;
}

HttpResponse Router::route(const HttpRequest& request) const {
  const std::string_view target = request.target;
  if (!target.starts_with('/')) {
    return error(400, "invalid_target", "the request target must be a path starting with /");
  }
  const std::string_view matched = routeOf(target);
  if (!pathOf(target).starts_with("/v1/")) return openRoute(request, matched);
  if (auto denied = auth_->check(request)) {
    if (matched == kRouteCardLookup || matched == kRouteCardByRef) {
      audit_->record(request, "-", std::nullopt, "unauthorized", denied->status);
    }
    return *std::move(denied);
  }
  return viewRoute(request, matched);
}

// The paths outside /v1/: no token.
HttpResponse Router::openRoute(const HttpRequest& request, std::string_view matched) const {
  const bool get = request.method == "GET";
  if (matched == kRouteHealth) {
    if (!get) return methodNotAllowed("GET");
    Json body = Json::object();
    body["status"] = "ok";
    return json(200, body);
  }
  if (matched == kRouteReady) {
    if (!get) return methodNotAllowed("GET");
    const Json body = json_views::readiness(view_.status(), options_.ready_max_lag);
    return json(body["ready"].get<bool>() ? 200 : 503, body);
  }
  if (matched == kRouteMetrics) return get ? metricsText() : methodNotAllowed("GET");
  if (matched == kRouteOpenApi) {
    if (!get) return methodNotAllowed("GET");
    HttpResponse response;
    response.content_type = std::string(json_views::kJson);
    response.body = std::string(openApiDocument());
    return response;
  }
  if (matched == kRouteConsole) {
    if (!get) return methodNotAllowed("GET");
    const std::string_view path = pathOf(request.target);
    if (path == "/ui") {
      Json body = Json::object();
      body["location"] = "/ui/";
      HttpResponse response = json(308, body);
      response.headers.emplace_back("Location", "/ui/");
      return response;
    }
    return consoleFile(path);
  }
  return error(404, "not_found", "no such endpoint; see /openapi.json");
}

// The paths under /v1/, once the token passed.
HttpResponse Router::viewRoute(const HttpRequest& request, std::string_view matched) const {
  const bool get = request.method == "GET";
  if (matched == kRoutePartitions) {
    return get ? json(200, json_views::partitions(view_.status())) : methodNotAllowed("GET");
  }
  if (matched == kRouteLateness) {
    return get ? json(200, json_views::lateness(view_.latenessMerged())) : methodNotAllowed("GET");
  }
  if (matched == kRouteRecentAlerts) {
    if (!get) return methodNotAllowed("GET");
    return json(200, json_views::recentAlerts(view_.recentAlerts(kRecentAlertsLimit),
                                              view_.status().instance_id));
  }
  if (matched == kRouteCardLookup) {
    return request.method == "POST" ? cardLookup(request) : methodNotAllowed("POST");
  }
  if (matched == kRouteCardByRef) {
    if (!get) return methodNotAllowed("GET");
    const std::string_view path = pathOf(request.target);
    return cardByRef(request, path.substr(path.rfind('/') + 1));
  }
  return error(404, "not_found", "no such endpoint; see /openapi.json");
}

HttpResponse Router::metricsText() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_.Collect());
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  response.body = std::move(out).str();
  return response;
}

HttpResponse Router::cardLookup(const HttpRequest& request) const {
  const auto invalid = [&](int status, std::string_view code, std::string_view message) {
    audit_->record(request, "-", std::nullopt, "invalid", status);
    return error(status, code, message);
  };
  const auto content_type = request.header("content-type");
  if (!content_type || !isJsonMediaType(*content_type)) {
    return invalid(415, "unsupported_media_type", "the body must be application/json");
  }
  // The one value the header may have (the OpenAPI document's enum): anything else is refused,
  // not read as its absence.
  const auto redirect = request.header("x-fraud-redirect");
  if (redirect && *redirect != "manual") {
    return invalid(400, "invalid_redirect_mode", "X-Fraud-Redirect may only be manual");
  }
  const Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return invalid(400, "invalid_json", "the body is not valid JSON");
  const auto card = body.is_object() ? body.find("card") : body.end();
  if (!body.is_object() || card == body.end() || !card->is_string()) {
    return invalid(400, "invalid_request", "the body must be an object with a string field card");
  }
  const auto& clear = card->get_ref<const std::string&>();
  if (!isCard(clear)) {
    return invalid(400, "invalid_card", "card must be 4..64 printable ASCII characters, no space");
  }
  const detectors::CardRef card_ref = view_.cardRef(clear);
  const std::string ref = card_ref.hex();
  const std::optional<int32_t> partition = view_.partitionOf(clear);
  if (!partition) {
    audit_->record(request, ref, std::nullopt, "partitions_unknown", 503);
    return retryLater(
        error(503, "partitions_unknown", "the input topic's partition count is not known yet"));
  }
  const CardLookup found = view_.lookup(*partition, card_ref);
  HttpResponse response;
  std::string_view outcome;
  switch (found.outcome) {
    case CardLookupOutcome::kFound:
      response = json(200, json_views::card(*found.card));
      outcome = "found";
      break;
    case CardLookupOutcome::kNotFound: {
      Json body404 = errorBody("card_not_found", "the card has no state in its partition");
      body404["card_ref"] = ref;
      body404["partition"] = *partition;
      response = json(404, body404);
      outcome = "not_found";
      break;
    }
    case CardLookupOutcome::kRestoring: {
      Json body503 = errorBody("restoring", "the card's partition is being restored here");
      body503["partition"] = *partition;
      response = retryLater(json(503, body503));
      outcome = "restoring";
      break;
    }
    case CardLookupOutcome::kNotHeld: {
      response = notHeld(*partition, redirect.has_value());
      outcome = response.status == 307 ? "redirected" : "not_held";
      break;
    }
  }
  audit_->record(request, ref, partition, outcome, response.status);
  return response;
}

HttpResponse Router::notHeld(int32_t partition, bool manual) const {
  const std::optional<std::string> owner = view_.ownerOf(partition);
  if (owner && *owner == view_.status().instance_id) {
    // The group says this instance owns it but it is not assigned yet: a rebalance is running.
    Json body = errorBody("rebalancing", "the card's partition is being assigned here");
    body["partition"] = partition;
    return retryLater(json(503, body));
  }
  if (owner && isUrlSafeMember(*owner) && !options_.peer_url_template.empty()) {
    std::string location = options_.peer_url_template;
    location.replace(location.find("{member}"), 8, *owner);
    while (location.ends_with('/')) location.pop_back();
    location += kRouteCardLookup;
    if (manual) {
      Json body = errorBody("misdirected", "another instance owns the card's partition");
      body["partition"] = partition;
      body["owner"] = *owner;
      body["location"] = location;
      return json(421, body);
    }
    Json body = Json::object();
    body["partition"] = partition;
    body["owner"] = *owner;
    body["location"] = location;
    HttpResponse response = json(307, body);
    response.headers.emplace_back("Location", std::move(location));
    return response;
  }
  Json body = errorBody("misdirected", "another instance owns the card's partition");
  body["partition"] = partition;
  body["owner"] = orNull(owner);
  return json(421, body);
}

HttpResponse Router::cardByRef(const HttpRequest& request, std::string_view ref_text) const {
  const auto ref = detectors::CardRef::fromHex(ref_text);
  if (!ref) {
    audit_->record(request, "-", std::nullopt, "invalid", 400);
    return error(400, "invalid_card_ref", "card_ref must be 64 lowercase hex characters");
  }
  const std::string hex = ref->hex();
  const CardLookup found = view_.lookupHeld(*ref);
  if (found.outcome == CardLookupOutcome::kFound) {
    audit_->record(request, hex, found.card->partition, "found", 200);
    return json(200, json_views::card(*found.card));
  }
  const ServiceStatus status = view_.status();
  if (found.outcome == CardLookupOutcome::kRestoring) {
    Json body = errorBody("restoring", "some partitions held here are still being restored");
    Json restoring = Json::array();
    for (const auto& p : status.partitions) {
      if (p.phase != PartitionPhase::kActive) restoring.push_back(p.partition);
    }
    body["partitions"] = std::move(restoring);
    audit_->record(request, hex, std::nullopt, "restoring", 503);
    return retryLater(json(503, body));
  }
  Json body = errorBody("card_not_found", "no partition held here has state for the card");
  body["card_ref"] = hex;
  body["partitions"] = json_views::heldPartitions(status);
  audit_->record(request, hex, std::nullopt, "not_found", 404);
  return json(404, body);
}

}  // namespace fraud::api
