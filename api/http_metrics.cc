#include "api/http_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <string>

namespace fraud::api {
namespace {

size_t routeIndex(std::string_view route) {
  const auto* it = std::find(kRoutes.begin(), kRoutes.end(), route);
  return it == kRoutes.end() ? kRoutes.size() - 1 : static_cast<size_t>(it - kRoutes.begin());
}

}  // namespace

HttpMetrics::HttpMetrics(prometheus::Registry& registry)
    : requests_(&prometheus::BuildCounter()
                     .Name("fraud_http_requests_total")
                     .Help("HTTP requests answered, by route template and status code")
                     .Register(registry)) {
  auto& durations = prometheus::BuildHistogram()
                        .Name("fraud_http_request_duration_seconds")
                        .Help("Time to compute an HTTP answer (routing and view reads), by route")
                        .Register(registry);
  const prometheus::Histogram::BucketBoundaries buckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
  for (size_t i = 0; i < kRoutes.size(); ++i) {
    durations_[i] = &durations.Add({{"route", std::string(kRoutes[i])}}, buckets);
  }
  open_connections_ = &prometheus::BuildGauge()
                           .Name("fraud_http_open_connections")
                           .Help("HTTP connections open now")
                           .Register(registry)
                           .Add({});
  rejected_connections_ = &prometheus::BuildCounter()
                               .Name("fraud_http_rejected_connections_total")
                               .Help("HTTP connections refused at the max_connections cap")
                               .Register(registry)
                               .Add({});
  rejected_client_connections_ =
      &prometheus::BuildCounter()
           .Name("fraud_http_rejected_client_connections_total")
           .Help("HTTP connections refused at the max_connections_per_client cap")
           .Register(registry)
           .Add({});
  auto& view_answers = prometheus::BuildCounter()
                           .Name("fraud_http_view_unanswered_total")
                           .Help(
                               "Answers that read the service view and got 503 instead: the "
                               "view overran view_timeout_ms (timeout) or its queue was full "
                               "(busy)")
                           .Register(registry);
  view_timeouts_ = &view_answers.Add({{"reason", "timeout"}});
  view_busy_ = &view_answers.Add({{"reason", "busy"}});
  auto& answered = prometheus::BuildCounter()
                       .Name("fraud_http_view_answers_total")
                       .Help(
                           "Answers to requests that read the service view (/readyz, /v1/*), by "
                           "where they were computed: inline on the I/O thread (a card lookup "
                           "answered from the state's memory, or refused before any view read) "
                           "or on the view pool")
                       .Register(registry);
  view_answers_ = {&answered.Add({{"path", "inline"}}), &answered.Add({{"path", "pool"}})};
  auto& reloads = prometheus::BuildCounter()
                      .Name("fraud_http_reloads_total")
                      .Help(
                          "Reloads of a changed token or TLS file, by file and outcome (error: "
                          "the old one is kept)")
                      .Register(registry);
  reloads_ = {&reloads.Add({{"file", "token"}, {"outcome", "ok"}}),
              &reloads.Add({{"file", "token"}, {"outcome", "error"}}),
              &reloads.Add({{"file", "tls"}, {"outcome", "ok"}}),
              &reloads.Add({{"file", "tls"}, {"outcome", "error"}})};
}

void HttpMetrics::countRequest(std::string_view route, int status, double seconds) const {
  const size_t index = routeIndex(route);
  requests_->Add({{"route", std::string(kRoutes[index])}, {"status", std::to_string(status)}})
      .Increment();
  durations_[index]->Observe(seconds);
}

void HttpMetrics::connectionOpened() const { open_connections_->Increment(); }
void HttpMetrics::connectionClosed() const { open_connections_->Decrement(); }
void HttpMetrics::connectionRejected() const { rejected_connections_->Increment(); }
void HttpMetrics::clientConnectionRejected() const { rejected_client_connections_->Increment(); }
void HttpMetrics::viewTimedOut() const { view_timeouts_->Increment(); }
void HttpMetrics::viewBusy() const { view_busy_->Increment(); }
void HttpMetrics::viewAnswered(ViewPath path) const {
  view_answers_[path == ViewPath::kInline ? 0 : 1]->Increment();
}
void HttpMetrics::reloaded(std::string_view file, bool ok) const {
  reloads_[(file == "tls" ? 2 : 0) + (ok ? 0 : 1)]->Increment();
}

}  // namespace fraud::api
