#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/http_metrics.h"
#include "api/options.h"
#include "api/service_view.h"

namespace prometheus {
class Registry;
}
namespace spdlog {
class logger;
}
namespace fraud::api {

class BearerAuth;
class CardLookups;
class LookupAudit;

// One HTTP request as the router sees it: plain values, no Boost types, so the router can be
// unit-tested and fuzzed without sockets.
struct HttpRequest {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // the request-target as sent: "/v1/cards/abc?x=1"
  std::vector<std::pair<std::string, std::string>> headers;  // in arrival order
  std::string body;
  std::string client;  // the peer as "ip:port", for the audit log

  // The first field named `name`, compared ASCII case-insensitively.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type and -Length
  std::string body;
  std::string_view route = kRouteUnmatched;  // the route template it answered (one of kRoutes)
};

// Answers every endpoint of docs/api.md from a ServiceView. Stateless apart from metrics, the
// token and the audit log's writer thread (LookupAudit: an answer hands its audit line over
// without waiting for the log's sink; the destructor writes what is queued): handle(),
// tryHandleInline(), replaceToken() and flushAudit() are thread-safe; neither handler throws
// (a throwing view gives a 500).
//
// Privacy (docs/rule.md §5): the clear card is read from a lookup body only to compute its card_ref
// and partition; no answer, log line or metric label carries it, nor any raw path.
class Router {
 public:
  // `view` and `registry` must outlive the router. Registers the API's metric families.
  Router(ApiOptions options, const ServiceView& view, prometheus::Registry& registry);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Routes and answers `request`, counting it in fraud_http_requests_total.
  [[nodiscard]] HttpResponse handle(const HttpRequest& request) const;
  // The same answer, not counted yet: `seconds` receives the time it took. The caller counts it
  // with count() once it is sent (an answer dropped for a 503 at its deadline is not).
  [[nodiscard]] HttpResponse handleUncounted(const HttpRequest& request, double& seconds) const;
  void count(const HttpResponse& response, double seconds) const;
  // handle()'s answer, counted the same way (and in fraud_http_view_answers_total{path="inline"}),
  // when it can be given without waiting on the view: a card lookup the view answers from memory
  // (ServiceView::tryLookupCached), or a refusal that needs no view (token, method, body). Same
  // token check, audit line and metrics as handle(). Nothing, with no side effect, when the
  // answer must wait on the view: then handleUncounted() off the I/O thread. For an I/O thread.
  [[nodiscard]] std::optional<HttpResponse> tryHandleInline(const HttpRequest& request) const;
  // An answer the server gives without routing (timeout, size limit, malformed HTTP): a JSON
  // error counted under the route `target` matches (`target` may be empty).
  [[nodiscard]] HttpResponse reject(std::string_view target, int status, std::string_view code,
                                    std::string_view message) const;

  // From now on /v1/* needs `token` (it must pass checkApiToken(); the server's token reload
  // checks that). Requests being answered keep the token they were checked with.
  void replaceToken(const std::string& token);
  // Returns once every audit line of the answers given before the call is written (the audit
  // lines go to their logger on a thread of their own: docs/api-internals.md, "The audit writer").
  void flushAudit() const;

  [[nodiscard]] const HttpMetrics& metrics() const { return metrics_; }
  [[nodiscard]] const ApiOptions& options() const { return options_; }

  // The route template the path of `target` matches (one of kRoutes).
  [[nodiscard]] static std::string_view routeOf(std::string_view target);
  // Whether answering `target` may call the service view (and so may block on it).
  [[nodiscard]] static bool readsView(std::string_view target);

 private:
  // route(), or inlineRoute() when `inline_only`, with a thrown exception answered 500.
  [[nodiscard]] std::optional<HttpResponse> guarded(const HttpRequest& request,
                                                    bool inline_only) const;
  [[nodiscard]] HttpResponse route(const HttpRequest& request) const;
  [[nodiscard]] std::optional<HttpResponse> inlineRoute(const HttpRequest& request) const;
  // The /v1/* token check, with the audit line of a refused card lookup.
  [[nodiscard]] std::optional<HttpResponse> authorize(const HttpRequest& request,
                                                      std::string_view matched) const;
  // What every answer gets: its route template, Cache-Control; `seconds` since `start`.
  void finish(const HttpRequest& request, HttpResponse& response,
              std::chrono::steady_clock::time_point start, double& seconds) const;
  [[nodiscard]] HttpResponse openRoute(const HttpRequest& request, std::string_view matched) const;
  [[nodiscard]] HttpResponse viewRoute(const HttpRequest& request, std::string_view matched) const;
  [[nodiscard]] HttpResponse metricsText() const;

  ApiOptions options_;
  const ServiceView& view_;
  prometheus::Registry& registry_;
  HttpMetrics metrics_;
  std::unique_ptr<BearerAuth> auth_;
  std::unique_ptr<LookupAudit> audit_;
  std::unique_ptr<CardLookups> cards_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace fraud::api
