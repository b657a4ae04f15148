#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "loadgen/lateness_model.h"

namespace fraud::loadgen {

// The steady (monotonic) clock in nanoseconds since its epoch: the time base of every series
// below and of the latency measurement. Thread-safe.
[[nodiscard]] inline int64_t steadyClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One value at one time of the steady (monotonic) clock, in nanoseconds.
struct TimedValue {
  int64_t at_ns = 0;
  int64_t value = 0;
};

// One alert's end-to-end latency: when its trigger record was produced (steady clock) and how
// long after that the alert arrived.
struct LatencySample {
  int64_t produced_ns = 0;
  int64_t latency_ns = 0;
};

// What a production run saw over time, for the HTML report (`fraud-loadgen --report`).
// `runProduction` fills it at the end of the run when `ProductionOptions::series` points to one.
struct RunSeries {
  int64_t start_ns = 0;  // steady clock when production started
  double production_s = 0;
  std::vector<uint64_t> sent_per_second;  // records sent in each second after the start
  std::vector<TimedValue> lag;            // the lag group's lag, about once a second
  std::vector<LatencySample> latencies;   // the alerts that arrived, in arrival order
  LatenessTruth lateness;                 // the lateness stamped on the valid records; the grace
  nlohmann::ordered_json summary;         // the summary printed on stdout
};

}  // namespace fraud::loadgen
