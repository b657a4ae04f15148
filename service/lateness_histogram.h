#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace fraud::service {

// A log-bucketed histogram of lateness in ms with fixed buckets (no allocation): values below
// 16 have a bucket each; above, every power of two is cut into 16 buckets, so a bucket's upper
// bound is at most 1/16 above any value in it. Values beyond 2^31 ms (about 25 days) share the
// last bucket. `Count` is uint32_t for a minute's slot, uint64_t for sums over many. Not
// thread-safe.
template <class Count>
class BasicLatenessHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int64_t kSub = int64_t{1} << kSubBits;  // buckets per power of two
  static constexpr int kTopBit = 31;
  static constexpr size_t kBuckets = kSub + (kTopBit - kSubBits + 1) * kSub;

  [[nodiscard]] static size_t bucketOf(int64_t ms) {
    if (ms < kSub) return static_cast<size_t>(std::max<int64_t>(ms, 0));
    const int top =
        std::min(static_cast<int>(std::bit_width(static_cast<uint64_t>(ms))) - 1, kTopBit);
    if (top == kTopBit && ms >= (int64_t{1} << (kTopBit + 1))) return kBuckets - 1;
    const int64_t sub = (ms >> (top - kSubBits)) & (kSub - 1);
    return static_cast<size_t>(kSub + (top - kSubBits) * kSub + sub);
  }
  // The largest value bucket `b` holds.
  [[nodiscard]] static int64_t upperBound(size_t b) {
    if (b < static_cast<size_t>(kSub)) return static_cast<int64_t>(b);
    const int top = static_cast<int>((b - kSub) / kSub) + kSubBits;
    const int64_t sub = static_cast<int64_t>((b - kSub) % kSub);
    return ((kSub + sub + 1) << (top - kSubBits)) - 1;
  }

  void add(int64_t ms) { ++counts_[bucketOf(ms)]; }
  void addCount(size_t b, uint64_t n) { counts_[b] += static_cast<Count>(n); }
  template <class Other>
  void merge(const BasicLatenessHistogram<Other>& other) {
    for (size_t b = 0; b < kBuckets; ++b) addCount(b, other.count(b));
  }
  void clear() { counts_.fill(0); }
  [[nodiscard]] uint64_t count(size_t b) const { return counts_[b]; }
  [[nodiscard]] uint64_t total() const {
    uint64_t n = 0;
    for (const Count c : counts_) n += c;
    return n;
  }
  // The upper bound of the bucket where the `q` quantile (0 < q <= 1) falls: the smallest bound
  // at or below which at least q of the values lie. 0 when empty.
  [[nodiscard]] int64_t quantile(double q) const {
    const uint64_t n = total();
    if (n == 0) return 0;
    const double want = q * static_cast<double>(n);
    uint64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (static_cast<double>(seen) >= want) return upperBound(b);
    }
    return upperBound(kBuckets - 1);
  }
  // Values certainly above `ms` (those of buckets wholly above it; the bucket holding `ms` is
  // counted as kept, so this errs low by at most that bucket).
  [[nodiscard]] uint64_t countAbove(int64_t ms) const {
    uint64_t n = 0;
    for (size_t b = bucketOf(ms) + 1; b < kBuckets; ++b) n += counts_[b];
    return n;
  }

 private:
  std::array<Count, kBuckets> counts_{};
};

using MinuteLatenessHistogram = BasicLatenessHistogram<uint32_t>;
using LatenessHistogram = BasicLatenessHistogram<uint64_t>;

}  // namespace fraud::service
