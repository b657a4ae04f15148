#include "loadgen/latency_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace fraud::loadgen {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(LatencyTracker, MatchesArrivalsByKeyAndReportsNearestRankPercentiles) {
  // Appended rather than `"k" + std::to_string(i)`: GCC 12 -O3 reports a false -Wrestrict on
  // that operator+ (GCC bug 105329).
  const auto key = [](int i) {
    std::string k = "k";
    k += std::to_string(i);
    return k;
  };
  LatencyTracker tracker;
  for (int i = 1; i <= 100; ++i) tracker.expect(key(i), 0);
  EXPECT_FALSE(tracker.allArrived());
  for (int i = 1; i <= 100; ++i) tracker.arrived(key(i), i * kMs);
  tracker.arrived("k7", 500 * kMs);   // a repeat does not count twice
  tracker.arrived("other", 1 * kMs);  // never expected
  const auto s = tracker.summary();
  EXPECT_TRUE(tracker.allArrived());
  EXPECT_EQ(s.expected, 100u);
  EXPECT_EQ(s.matched, 100u);
  EXPECT_EQ(s.repeated, 1u);
  EXPECT_EQ(s.unexpected, 1u);
  EXPECT_DOUBLE_EQ(*s.p50_ms, 50);
  EXPECT_DOUBLE_EQ(*s.p95_ms, 95);
  EXPECT_DOUBLE_EQ(*s.p99_ms, 99);
  EXPECT_DOUBLE_EQ(*s.max_ms, 100);
}

TEST(LatencyTracker, NoPercentilesWithoutMatches) {
  LatencyTracker tracker;
  tracker.expect("k", 0);
  const auto s = tracker.summary();
  EXPECT_EQ(s.matched, 0u);
  EXPECT_FALSE(s.p50_ms.has_value());
  EXPECT_FALSE(s.max_ms.has_value());
}

TEST(LatencyTracker, ExpectAndArriveFromTwoThreads) {
  LatencyTracker tracker;
  constexpr int kAlerts = 20'000;
  for (int i = 0; i < kAlerts; ++i) tracker.expect(std::to_string(i), i);
  std::thread consumer([&] {
    for (int i = 0; i < kAlerts; ++i) tracker.arrived(std::to_string(i), i + 5 * kMs);
  });
  for (int i = 0; i < kAlerts; ++i) tracker.expect("late-" + std::to_string(i), i);
  consumer.join();
  EXPECT_EQ(tracker.summary().matched, static_cast<uint64_t>(kAlerts));
  EXPECT_DOUBLE_EQ(*tracker.summary().max_ms, 5);
}

TEST(NearestRank, PicksTheCeilingRank) {
  const std::vector<int64_t> sorted = {10, 20, 30, 40};
  EXPECT_EQ(nearestRank(sorted, 50), 20);
  EXPECT_EQ(nearestRank(sorted, 51), 30);
  EXPECT_EQ(nearestRank(sorted, 100), 40);
  EXPECT_EQ(nearestRank(sorted, 0.1), 10);
  EXPECT_FALSE(nearestRank({}, 50).has_value());
}

}  // namespace
}  // namespace fraud::loadgen
