#include "loadgen/latency_tracker.h"

#include <algorithm>
#include <cmath>

namespace fraud::loadgen {

std::optional<int64_t> nearestRank(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return std::nullopt;
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

void LatencyTracker::expect(const std::string& idempotency_key, int64_t produced_ns) {
  base::MutexLock lock(mutex_);
  expected_.try_emplace(idempotency_key, Entry{produced_ns, false});
}

void LatencyTracker::arrived(const std::string& idempotency_key, int64_t arrived_ns) {
  base::MutexLock lock(mutex_);
  const auto found = expected_.find(idempotency_key);
  if (found == expected_.end()) {
    ++unexpected_;
    return;
  }
  if (found->second.arrived) {
    ++repeated_;
    return;
  }
  found->second.arrived = true;
  latencies_ns_.push_back(arrived_ns - found->second.produced_ns);
  produced_ns_.push_back(found->second.produced_ns);
}

bool LatencyTracker::allArrived() const {
  base::MutexLock lock(mutex_);
  return latencies_ns_.size() == expected_.size();
}

std::vector<LatencySample> LatencyTracker::samples() const {
  base::MutexLock lock(mutex_);
  std::vector<LatencySample> out;
  out.reserve(latencies_ns_.size());
  for (size_t i = 0; i < latencies_ns_.size(); ++i)
    out.push_back({produced_ns_[i], latencies_ns_[i]});
  return out;
}

LatencyTracker::Summary LatencyTracker::summary() const {
  base::MutexLock lock(mutex_);
  Summary s;
  s.expected = expected_.size();
  s.matched = latencies_ns_.size();
  s.unexpected = unexpected_;
  s.repeated = repeated_;
  std::vector<int64_t> sorted = latencies_ns_;
  std::sort(sorted.begin(), sorted.end());
  const auto ms = [&](double p) -> std::optional<double> {
    const auto ns = nearestRank(sorted, p);
    if (!ns) return std::nullopt;
    return static_cast<double>(*ns) / 1e6;
  };
  s.p50_ms = ms(50);
  s.p95_ms = ms(95);
  s.p99_ms = ms(99);
  s.max_ms = ms(100);
  return s;
}

}  // namespace fraud::loadgen
