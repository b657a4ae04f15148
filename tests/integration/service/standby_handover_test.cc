// A clean stop under static membership with standby replicas hands the partitions over: the
// instance leaves the group, so they move at once to the member that keeps their warm copies,
// rather than waiting out the restart (before, a static member's partitions stayed with it until
// it came back or its session timed out). Without standbys the partitions still wait.
#include <set>

#include "tests/integration/service/live_service_fixture.h"
#include "tests/integration/service/partitions_view.h"
#include "tests/support/http_probe.h"

namespace fraud::testing {
namespace {

size_t activeCount(uint16_t port) { return PartitionsView::of(port).active.size(); }
size_t warmCopies(uint16_t port) { return PartitionsView::of(port).warm_copies.size(); }

class StandbyHandoverTest : public LiveServiceTest {
 protected:
  // Static members with a 30 s session: a partition left with a stopped member waits that long.
  ChildProcess& startMember(const std::string& id, uint16_t port, bool standbys) {
    std::vector<std::string> extra = {"--http-port", std::to_string(port), "--static-membership",
                                      "--kafka", "session.timeout.ms=30000"};
    if (standbys) extra.insert(extra.end(), {"--standby-replicas", "1"});
    return startInstance(id, extra);
  }
  // Whether `port`'s instance holds every partition active within `limit`.
  bool holdsAllWithin(uint16_t port, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (activeCount(port) == static_cast<size_t>(kPartitions)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  void bothHoldSome(uint16_t a, uint16_t b) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while ((activeCount(a) == 0 || activeCount(b) == 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_GT(activeCount(a), 0u);
    ASSERT_GT(activeCount(b), 0u);
  }
};

TEST_F(StandbyHandoverTest, AStoppedStaticMemberWithStandbysHandsItsPartitionsOverAtOnce) {
  const auto records = generateStream({.records = 45'000, .cards = 1'500, .step_ms = 5});
  const auto third = static_cast<std::ptrdiff_t>(records.size() / 3);
  produce({records.begin(), records.begin() + third});
  const uint16_t port_a = freeTcpPort();
  const uint16_t port_b = freeTcpPort();
  auto& a = startMember("a", port_a, true);
  auto& b = startMember("b", port_b, true);
  bothHoldSome(port_a, port_b);
  ASSERT_TRUE(kafka_->waitForCaughtUp(group_, input_, seconds(120))) << a.stderrText();
  // a keeps warm copies of what b holds (its owner map, refreshed every 5 s, names b's
  // partitions, and a catch-up round has run), and b's owner map names a.
  const size_t held_by_b = activeCount(port_b);
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (warmCopies(port_a) < held_by_b && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(warmCopies(port_a), held_by_b) << a.stderrText();
  std::this_thread::sleep_for(seconds(6));  // b's owner map refreshed since a held partitions

  ASSERT_TRUE(stopCleanly(b));
  EXPECT_TRUE(holdsAllWithin(port_a, seconds(15)))
      << "b's partitions waited for b (its 30 s session) instead of moving to a's copies; b:\n"
      << b.stderrText();
  produce({records.begin() + third, records.begin() + 2 * third});
  ASSERT_TRUE(kafka_->waitForCaughtUp(group_, input_, seconds(120))) << a.stderrText();

  auto& b_again = startMember("b", port_b, true);
  bothHoldSome(port_a, port_b);
  produce({records.begin() + 2 * third, records.end()});
  expectAlertsMatchReplay();
  stopCleanly(b_again);
  stopCleanly(a);
}

TEST_F(StandbyHandoverTest, WithoutStandbysAStoppedStaticMemberKeepsItsPartitions) {
  produce(generateStream({.records = 10'000, .cards = 500, .step_ms = 5}));
  const uint16_t port_a = freeTcpPort();
  const uint16_t port_b = freeTcpPort();
  auto& a = startMember("a", port_a, false);
  auto& b = startMember("b", port_b, false);
  bothHoldSome(port_a, port_b);
  const size_t held_by_a = activeCount(port_a);
  ASSERT_TRUE(stopCleanly(b));
  std::this_thread::sleep_for(seconds(5));  // long enough for a hand-over, short of the session
  EXPECT_EQ(activeCount(port_a), held_by_a) << "the partitions moved: today's behaviour changed";
  stopCleanly(a);
}

}  // namespace
}  // namespace fraud::testing
