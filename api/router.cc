#include "api/router.h"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <sstream>

#include "api/bearer_auth.h"
#include "api/card_lookups.h"
#include "api/console_page.h"
#include "api/http_text.h"
#include "api/json_views.h"
#include "api/lookup_audit.h"
#include "api/openapi.h"

namespace fraud::api {
namespace {

using http_text::pathOf;
using json_views::error;
using json_views::json;
using json_views::Json;
using json_views::methodNotAllowed;

// The recent alerts an answer lists at most (the ring holds about as many).
constexpr size_t kRecentAlertsLimit = 1000;

AuditWriter::Options auditOptions(const ApiOptions& options) {
  AuditWriter::Options audit;
  audit.max_queued_lines = options.audit_queue_lines;
  return audit;
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
      audit_(std::make_unique<LookupAudit>(registry, auditOptions(options_))),
      cards_(std::make_unique<CardLookups>(options_, view_, *audit_)) {
  log_ = spdlog::get("http");
  if (!log_) log_ = spdlog::default_logger()->clone("http");
}

Router::~Router() = default;

void Router::replaceToken(const std::string& token) { auth_->replace(token); }

void Router::flushAudit() const { audit_->flush(); }

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
  HttpResponse response = *guarded(request, /*inline_only=*/false);
  finish(request, response, start, seconds);
  return response;
}

std::optional<HttpResponse> Router::tryHandleInline(const HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  std::optional<HttpResponse> response = guarded(request, /*inline_only=*/true);
  if (!response) return std::nullopt;
  double seconds = 0;
  finish(request, *response, start, seconds);
  count(*response, seconds);
  metrics_.viewAnswered(ViewPath::kInline);
  return response;
}

std::optional<HttpResponse> Router::guarded(const HttpRequest& request, bool inline_only) const {
  try {
    if (inline_only) return inlineRoute(request);
    return route(request);
  } catch (const std::exception& e) {
    log_->error("{} {} failed: {}", request.method, routeOf(request.target), e.what());
  } catch (...) {
  }
  return error(500, "internal", "the server failed to answer; see its log");
}

void Router::finish(const HttpRequest& request, HttpResponse& response,
                    std::chrono::steady_clock::time_point start, double& seconds) const {
  response.route = routeOf(request.target);
  response.headers.emplace_back("Cache-Control", "no-store");
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  seconds = took.count();
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
  if (auto denied = authorize(request, matched)) return *std::move(denied);
  return viewRoute(request, matched);
}

// The card lookups alone: every other answer that reads the view may wait on it.
std::optional<HttpResponse> Router::inlineRoute(const HttpRequest& request) const {
  const std::string_view matched = routeOf(request.target);
  if (matched != kRouteCardLookup && matched != kRouteCardByRef) return std::nullopt;
  if (auto denied = authorize(request, matched)) return denied;
  return cards_->answer(request, matched, CardLookups::Access::kInline);
}

std::optional<HttpResponse> Router::authorize(const HttpRequest& request,
                                              std::string_view matched) const {
  auto denied = auth_->check(request);
  if (denied && (matched == kRouteCardLookup || matched == kRouteCardByRef)) {
    audit_->record(request, "-", std::nullopt, "unauthorized", denied->status);
  }
  return denied;
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
  if (matched == kRouteCardLookup || matched == kRouteCardByRef) {
    return *cards_->answer(request, matched, CardLookups::Access::kBlocking);
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

}  // namespace fraud::api
