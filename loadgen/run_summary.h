#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "loadgen/lag_sampler.h"
#include "loadgen/latency_tracker.h"
#include "loadgen/lateness_model.h"

namespace fraud::loadgen {

// The sections of the production run's summary (stdout JSON; loadgen/README.md, "Summary")
// that stand for one measurement each.

// "latency": expected and matched alerts, stray arrivals, the percentiles (null when none).
[[nodiscard]] nlohmann::ordered_json latencyJson(const LatencyTracker::Summary& summary);

// "consumer_lag": the group's lag samples; `at_production_end` null when none was taken by then.
[[nodiscard]] nlohmann::ordered_json lagJson(const std::string& group,
                                             const LagSampler::Summary& summary,
                                             std::optional<int64_t> at_production_end);

// "lateness": what lateness the model stamped on the valid records (model clock minus event
// time), the truth for the service's lateness figures (GET /v1/lateness), and the share beyond
// the grace (the service drops those as too late). `model`: classic or mixture.
[[nodiscard]] nlohmann::ordered_json latenessJson(const LatenessTruth& truth,
                                                  const std::string& model);

}  // namespace fraud::loadgen
