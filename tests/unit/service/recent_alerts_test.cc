#include "service/recent_alerts.h"

#include <gtest/gtest.h>

#include <string>

namespace fraud::service {
namespace {

detectors::Alert alertOf(uint32_t revision) {
  detectors::Alert alert;
  alert.incident.start = 1000;
  alert.incident.end = 2000;
  alert.incident.revision = revision;
  alert.trigger_event_time = 1500;
  return alert;
}

detectors::AlertKey keyOf(int i) {
  return {"id" + std::to_string(i), "id" + std::to_string(i) + ":1"};
}

TEST(RecentAlerts, KeepsTheNewestUpToCapacityNewestFirst) {
  RecentAlerts ring(3);
  for (int i = 0; i < 5; ++i) ring.add(i % 2, alertOf(1), keyOf(i), 100 + i);
  const auto newest = ring.newest(10);
  ASSERT_EQ(newest.size(), 3u);
  EXPECT_EQ(newest[0].alert_id, "id4");
  EXPECT_EQ(newest[1].alert_id, "id3");
  EXPECT_EQ(newest[2].alert_id, "id2");
  EXPECT_EQ(newest[0].detected_at_ms, 104);
  EXPECT_EQ(ring.newest(1).size(), 1u);
}

TEST(RecentAlerts, AnAlertDetectedAgainAfterARewindIsKeptOnce) {
  RecentAlerts ring(10);
  ring.add(0, alertOf(1), keyOf(1), 100);
  ring.add(0, alertOf(1), keyOf(1), 200);
  ring.add(0, alertOf(1), keyOf(2), 300);
  EXPECT_EQ(ring.newest(10).size(), 2u);
}

TEST(RecentAlerts, AKeyEvictedFromTheRingMayComeBack) {
  RecentAlerts ring(2);
  ring.add(0, alertOf(1), keyOf(1), 1);
  ring.add(0, alertOf(1), keyOf(2), 2);
  ring.add(0, alertOf(1), keyOf(3), 3);  // evicts 1
  ring.add(0, alertOf(1), keyOf(1), 4);
  const auto newest = ring.newest(10);
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0].alert_id, "id1");
  EXPECT_EQ(newest[1].alert_id, "id3");
}

}  // namespace
}  // namespace fraud::service
