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

}  // namespace fraud::api
