#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "detectors/base/mutex.h"
#include "loadgen/run_series.h"

namespace fraud::loadgen {

// End-to-end latency of alerts: from the production of the record that triggers an alert to the
// alert's arrival on the alerts topic, matched by idempotency key. Times are nanoseconds of one
// monotonic clock. Thread-safe: the producer thread expects, the alerts consumer thread arrives.
class LatencyTracker {
 public:
  void expect(const std::string& idempotency_key, int64_t produced_ns) FRAUD_EXCLUDES(mutex_);
  void arrived(const std::string& idempotency_key, int64_t arrived_ns) FRAUD_EXCLUDES(mutex_);

  struct Summary {
    uint64_t expected = 0;
    uint64_t matched = 0;     // expected alerts that arrived
    uint64_t unexpected = 0;  // arrivals of keys never expected (earlier runs, other traffic)
    uint64_t repeated = 0;    // second and later arrivals of a matched key
    // Milliseconds, nearest rank; nothing when no alert matched.
    std::optional<double> p50_ms, p95_ms, p99_ms, max_ms;
  };
  [[nodiscard]] Summary summary() const FRAUD_EXCLUDES(mutex_);
  [[nodiscard]] bool allArrived() const FRAUD_EXCLUDES(mutex_);
  // Every matched alert, in arrival order.
  [[nodiscard]] std::vector<LatencySample> samples() const FRAUD_EXCLUDES(mutex_);

 private:
  struct Entry {
    int64_t produced_ns = 0;
    bool arrived = false;
  };
  mutable base::Mutex mutex_;
  std::unordered_map<std::string, Entry> expected_ FRAUD_GUARDED_BY(mutex_);
  std::vector<int64_t> latencies_ns_ FRAUD_GUARDED_BY(mutex_);
  // produced_ns_[i]: when latencies_ns_[i]'s trigger record was produced.
  std::vector<int64_t> produced_ns_ FRAUD_GUARDED_BY(mutex_);
  uint64_t unexpected_ FRAUD_GUARDED_BY(mutex_) = 0;
  uint64_t repeated_ FRAUD_GUARDED_BY(mutex_) = 0;
};

// The nearest-rank percentile `p` (0 < p <= 100) of sorted values; nothing when empty.
[[nodiscard]] std::optional<int64_t> nearestRank(const std::vector<int64_t>& sorted, double p);

}  // namespace fraud::loadgen
