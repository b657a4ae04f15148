#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loadgen/random.h"

namespace fraud::loadgen {

// How late ordinary records are (model clock minus event time), as real traffic is: a mixture
// of records on time (under a second), a log-normal body of late ones, a heavy tail of
// stragglers up to `max_ms`, and (drawn by the traffic model) a share beyond any grace.
// Every sample uses integer arithmetic and exact IEEE operations only (no libm), so a seed gives
// the same lateness on every platform.
struct LatenessMixture {
  double body_fraction = 0.2;        // 0..1: log-normal body
  double body_median_ms = 2'000;     // > 0
  double body_sigma = 1.0;           // 0..3: of the underlying normal
  double straggler_fraction = 0.01;  // 0..1: Pareto (alpha 1) from 1 s to max_ms
  int64_t max_ms = 120'000;          // >= 1000: no sample (but beyond-grace ones) exceeds it

  [[nodiscard]] std::vector<std::string> validate() const;
  // One lateness in ms, in [0, max_ms].
  [[nodiscard]] int64_t draw(Xoshiro256& random) const;
};

// e^x for |x| <= 40 with exact IEEE operations only: 2^k * e^r, r in [-ln2/2, ln2/2], by a
// Taylor polynomial (relative error below 1e-12).
[[nodiscard]] double portableExp(double x);

// What lateness the generator produced, exactly enough to check the service's figures against:
// a histogram of 1-ms buckets to 10 s, then 100-ms buckets to the cap, and the exact count of
// samples beyond the grace. Not thread-safe.
class LatenessTruth {
 public:
  // One bucket of the histogram: samples from low_ms to high_ms, both included.
  struct Bucket {
    int64_t low_ms = 0;
    int64_t high_ms = 0;
    uint64_t count = 0;
  };

  LatenessTruth() = default;
  // `grace_ms`: the grace the service applies; beyondGrace() counts the samples above it.
  explicit LatenessTruth(int64_t grace_ms) : grace_ms_(grace_ms) {}

  void add(int64_t ms);
  [[nodiscard]] uint64_t count() const { return count_; }
  [[nodiscard]] int64_t graceMs() const { return grace_ms_; }
  // Samples later than the grace: the records the service drops as too late (exact).
  [[nodiscard]] uint64_t beyondGrace() const { return beyond_grace_; }
  // The smallest lateness L such that at least q of the samples are <= L (bucket upper bound).
  [[nodiscard]] int64_t quantile(double q) const;
  // Share of samples above `ms`.
  [[nodiscard]] double shareAbove(int64_t ms) const;
  [[nodiscard]] int64_t max() const { return max_; }
  // Every non-empty bucket, ascending: for a chart.
  [[nodiscard]] std::vector<Bucket> buckets() const;

 private:
  static constexpr int64_t kFineMs = 10'000;    // 1-ms buckets below
  static constexpr int64_t kCoarseMs = 100;     // above
  static constexpr int64_t kCapMs = 3'600'000;  // one hour; above shares the last bucket
  static constexpr size_t kBuckets = kFineMs + (kCapMs - kFineMs) / kCoarseMs + 1;
  static size_t bucketOf(int64_t ms);
  static int64_t lowerBound(size_t b);
  static int64_t upperBound(size_t b);

  std::vector<uint64_t> counts_ = std::vector<uint64_t>(kBuckets, 0);
  uint64_t count_ = 0;
  int64_t max_ = 0;
  int64_t grace_ms_ = 120'000;
  uint64_t beyond_grace_ = 0;
};

}  // namespace fraud::loadgen
