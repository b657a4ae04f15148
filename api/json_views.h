#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "api/router.h"
#include "api/service_view.h"

// Internal to api/: the JSON documents the router answers with (docs/api.md), and the shapes
// of its answers. No I/O, no state.
namespace fraud::api::json_views {

using Json = nlohmann::json;

inline constexpr std::string_view kJson = "application/json";

// `body` as a JSON answer with `status`.
[[nodiscard]] HttpResponse json(int status, const Json& body);
[[nodiscard]] Json errorBody(std::string_view code, std::string_view message);
[[nodiscard]] HttpResponse error(int status, std::string_view code, std::string_view message);
[[nodiscard]] HttpResponse methodNotAllowed(std::string_view allowed);
// Adds Retry-After for a 503 the client should repeat.
[[nodiscard]] HttpResponse retryLater(HttpResponse response);

template <class T>
Json orNull(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

[[nodiscard]] Json card(const CardSnapshot& card);
[[nodiscard]] Json partition(const PartitionStatus& p);
[[nodiscard]] Json partitions(const ServiceStatus& status);
[[nodiscard]] Json heldPartitions(const ServiceStatus& status);
[[nodiscard]] Json readiness(const ServiceStatus& status, int64_t max_lag);
[[nodiscard]] Json lateness(const LatenessReport& report);
[[nodiscard]] Json recentAlerts(const std::vector<RecentAlert>& alerts, std::string_view instance);

}  // namespace fraud::api::json_views
