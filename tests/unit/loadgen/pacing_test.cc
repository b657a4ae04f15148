#include "loadgen/pacing.h"

#include <gtest/gtest.h>

namespace fraud::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(Pacer, FirstRecordIsDueAtOnceAndTheScheduleIsAbsolute) {
  const Pacer pacer(20'000);
  EXPECT_EQ(pacer.dueBy(nanoseconds(0)), 1u);
  EXPECT_EQ(pacer.dueBy(milliseconds(1)), 21u);
  EXPECT_EQ(pacer.dueBy(seconds(10)), 200'001u);
  EXPECT_EQ(pacer.dueAt(0), nanoseconds(0));
  EXPECT_EQ(pacer.dueAt(20'000), seconds(1));
  EXPECT_EQ(pacer.dueBy(nanoseconds(-5)), 0u);
}

TEST(Pacer, DueAtAndDueByAgree) {
  const Pacer pacer(7'777);
  for (uint64_t i = 1; i < 100'000; i += 37) {
    // Record i is due at dueAt(i): by then i + 1 records are due, just before it only i.
    EXPECT_EQ(pacer.dueBy(pacer.dueAt(i)), i + 1) << i;
    EXPECT_EQ(pacer.dueBy(pacer.dueAt(i) - nanoseconds(1)), i) << i;
  }
}

TEST(RateHistory, MaxDeviationIsTheWorstTenSecondMean) {
  RateHistory history;
  for (int s = 0; s < 30; ++s) history.add(seconds(s) + milliseconds(500), 1000);
  history.add(seconds(12), 500);  // one second at 1500: a 10-second window averages 1050
  const auto deviation = history.maxDeviation(1000, 10, 30);
  ASSERT_TRUE(deviation.has_value());
  EXPECT_DOUBLE_EQ(*deviation, 0.05);
}

TEST(RateHistory, NoDeviationFromFewerSecondsThanTheWindow) {
  RateHistory history;
  for (int s = 0; s < 9; ++s) history.add(seconds(s), 1000);
  EXPECT_FALSE(history.maxDeviation(1000, 10, 9).has_value());
  // Seconds that did not run in full are left out: the last, partial one does not count.
  history.add(seconds(9), 1000);
  history.add(seconds(10), 3);
  EXPECT_DOUBLE_EQ(*history.maxDeviation(1000, 10, 10), 0.0);
}

}  // namespace
}  // namespace fraud::loadgen
