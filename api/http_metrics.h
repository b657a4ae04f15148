#pragma once

#include <array>
#include <string_view>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace fraud::api {

// The route templates: the only values of the `route` label, so no path a client sends (a
// card number typed into a URL) ever reaches a label. kUnmatched is every other target.
inline constexpr std::string_view kRouteHealth = "/healthz";
inline constexpr std::string_view kRouteReady = "/readyz";
inline constexpr std::string_view kRouteMetrics = "/metrics";
inline constexpr std::string_view kRouteOpenApi = "/openapi.json";
inline constexpr std::string_view kRouteCardLookup = "/v1/cards/lookup";
inline constexpr std::string_view kRouteCardByRef = "/v1/cards/{card_ref}";
inline constexpr std::string_view kRoutePartitions = "/v1/partitions";
inline constexpr std::string_view kRouteLateness = "/v1/lateness";
inline constexpr std::string_view kRouteRecentAlerts = "/v1/alerts/recent";
inline constexpr std::string_view kRouteConsole = "/ui/{file}";  // /ui, /ui/ and its files
inline constexpr std::string_view kRouteUnmatched = "unmatched";
inline constexpr std::array<std::string_view, 11> kRoutes = {
    kRouteHealth,       kRouteReady,     kRouteMetrics,    kRouteOpenApi,
    kRouteCardLookup,   kRouteCardByRef, kRoutePartitions, kRouteLateness,
    kRouteRecentAlerts, kRouteConsole,   kRouteUnmatched};

// Where an answer that reads the service view was computed: on the I/O thread that read the
// request (Router::tryHandleInline), or on the listener's view pool.
enum class ViewPath { kInline, kPool };

// The API's own metric families, registered in the service's registry. Thread-safe.
class HttpMetrics {
 public:
  explicit HttpMetrics(prometheus::Registry& registry);

  // `route` must be one of kRoutes.
  void countRequest(std::string_view route, int status, double seconds) const;
  void connectionOpened() const;
  void connectionClosed() const;
  void connectionRejected() const;
  // A connection refused at max_connections_per_client (also counted by connectionRejected()).
  void clientConnectionRejected() const;
  // An answer that read the view and overran view_timeout_ms, or found the view queue full.
  void viewTimedOut() const;
  void viewBusy() const;
  // An answer that reads the view, sent (fraud_http_view_answers_total{path}).
  void viewAnswered(ViewPath path) const;
  // A token or TLS file reload: `file` is "token" or "tls".
  void reloaded(std::string_view file, bool ok) const;

 private:
  prometheus::Family<prometheus::Counter>* requests_;
  std::array<prometheus::Histogram*, kRoutes.size()> durations_{};
  prometheus::Gauge* open_connections_;
  prometheus::Counter* rejected_connections_;
  prometheus::Counter* rejected_client_connections_;
  prometheus::Counter* view_timeouts_;
  prometheus::Counter* view_busy_;
  std::array<prometheus::Counter*, 2> view_answers_{};  // by ViewPath
  std::array<prometheus::Counter*, 4> reloads_{};       // token ok, token error, tls ok, tls error
};

}  // namespace fraud::api
