#include "loadgen/lateness_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fraud::loadgen {
namespace {

TEST(PortableExp, MatchesTheLibraryWithinRounding) {
  for (double x = -20; x <= 20; x += 0.37) {
    EXPECT_NEAR(portableExp(x) / std::exp(x), 1.0, 1e-12) << x;
  }
}

TEST(LatenessMixture, DrawsTheStatedSharesAndStaysUnderTheCap) {
  LatenessMixture mixture;
  mixture.body_fraction = 0.2;
  mixture.body_median_ms = 2'000;
  mixture.body_sigma = 1.0;
  mixture.straggler_fraction = 0.01;
  mixture.max_ms = 120'000;
  ASSERT_TRUE(mixture.validate().empty());
  Xoshiro256 random(5);
  LatenessTruth truth;
  for (int i = 0; i < 200'000; ++i) truth.add(mixture.draw(random));
  EXPECT_LE(truth.max(), 120'000);
  // 79 % on time (under a second); the body's median is 2 s, so about half of it is above.
  EXPECT_NEAR(truth.shareAbove(1'000), 0.01 + 0.2 * 0.75, 0.01);
  // The p50 is on time; the p99 lies in the body's tail or among the stragglers.
  EXPECT_LT(truth.quantile(0.5), 1'000);
  EXPECT_GT(truth.quantile(0.99), 5'000);
}

TEST(LatenessMixture, TheSameSeedGivesTheSameLateness) {
  LatenessMixture mixture;
  Xoshiro256 a(9);
  Xoshiro256 b(9);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(mixture.draw(a), mixture.draw(b));
}

TEST(LatenessMixture, RejectsSharesAboveOne) {
  LatenessMixture mixture;
  mixture.body_fraction = 0.7;
  mixture.straggler_fraction = 0.4;
  EXPECT_FALSE(mixture.validate().empty());
}

TEST(LatenessTruth, QuantilesAreExactToTheMillisecondBelowTenSeconds) {
  LatenessTruth truth;
  for (int64_t ms = 1; ms <= 1000; ++ms) truth.add(ms);
  EXPECT_EQ(truth.quantile(0.5), 500);
  EXPECT_EQ(truth.quantile(0.99), 990);
  EXPECT_EQ(truth.quantile(1.0), 1000);
  EXPECT_DOUBLE_EQ(truth.shareAbove(900), 0.1);
}

TEST(LatenessTruth, CountsTheSamplesBeyondTheGraceExactlyAndBucketsThemAll) {
  LatenessTruth truth(120'050);  // inside the 100-ms bucket 120000..120099
  for (const int64_t ms : {0, 7, 7, 10'050, 120'000, 120'050, 120'051, 120'099, 3'700'000}) {
    truth.add(ms);
  }
  EXPECT_EQ(truth.graceMs(), 120'050);
  EXPECT_EQ(truth.beyondGrace(), 3u);  // 120051, 120099 and the one past the cap
  const auto buckets = truth.buckets();
  uint64_t total = 0;
  for (const auto& b : buckets) {
    EXPECT_LE(b.low_ms, b.high_ms);
    total += b.count;
  }
  EXPECT_EQ(total, truth.count());
  ASSERT_GE(buckets.size(), 4u);
  EXPECT_EQ(buckets[1].low_ms, 7);  // 1-ms buckets below 10 s
  EXPECT_EQ(buckets[1].high_ms, 7);
  EXPECT_EQ(buckets[1].count, 2u);
  EXPECT_EQ(buckets[2].low_ms, 10'000);  // 100-ms buckets above
  EXPECT_EQ(buckets[2].high_ms, 10'099);
}

}  // namespace
}  // namespace fraud::loadgen
