#include "loadgen/run_summary.h"

namespace fraud::loadgen {

using nlohmann::ordered_json;

ordered_json latencyJson(const LatencyTracker::Summary& s) {
  ordered_json out;
  out["expected_alerts"] = s.expected;
  out["matched"] = s.matched;
  out["unexpected_arrivals"] = s.unexpected;
  out["repeated_arrivals"] = s.repeated;
  const auto ms = [](const std::optional<double>& v) {
    return v ? ordered_json(*v) : ordered_json();
  };
  out["p50_ms"] = ms(s.p50_ms);
  out["p95_ms"] = ms(s.p95_ms);
  out["p99_ms"] = ms(s.p99_ms);
  out["max_ms"] = ms(s.max_ms);
  return out;
}

ordered_json lagJson(const std::string& group, const LagSampler::Summary& l,
                     std::optional<int64_t> at_production_end) {
  ordered_json out = {{"group", group}, {"samples", l.samples}, {"max", l.max},
                      {"p50", l.p50},   {"p99", l.p99},         {"last", l.last}};
  out["at_production_end"] = at_production_end ? ordered_json(*at_production_end) : ordered_json();
  return out;
}

ordered_json latenessJson(const LatenessTruth& late, const std::string& model) {
  const double share = late.count() == 0 ? 0.0
                                         : static_cast<double>(late.beyondGrace()) /
                                               static_cast<double>(late.count());
  return {{"model", model},
          {"count", late.count()},
          {"p50_ms", late.quantile(0.5)},
          {"p99_ms", late.quantile(0.99)},
          {"p999_ms", late.quantile(0.999)},
          {"max_ms", late.max()},
          {"grace_ms", late.graceMs()},
          {"beyond_grace", late.beyondGrace()},
          {"beyond_grace_share", share}};
}

}  // namespace fraud::loadgen
