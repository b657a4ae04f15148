// A member paused (SIGSTOP) past its session timeout while the other takes its partitions and
// fences its transactional id, then resumed: it must not process or serve partitions it no
// longer owns (before, it reopened everything it held as soon as its fenced producer was
// replaced), and the alerts stay exactly those `replay` gives, each once.
#include <set>

#include "tests/integration/service/live_service_fixture.h"
#include "tests/integration/service/partitions_view.h"
#include "tests/support/http_probe.h"

namespace fraud::testing {
namespace {

std::set<int> activePartitions(uint16_t port) { return PartitionsView::of(port).active; }

TEST_F(LiveServiceTest, PausedPastItsSessionAndResumedAMemberServesOnlyWhatItIsGivenAgain) {
  const auto records = generateStream({.records = 60'000, .cards = 2'000, .step_ms = 5});
  const auto third = static_cast<std::ptrdiff_t>(records.size() / 3);
  const auto sixth = third / 2;
  produce({records.begin(), records.begin() + sixth});
  const uint16_t port_a = freeTcpPort();
  const uint16_t port_b = freeTcpPort();
  auto& a = startInstance("a", {"--http-port", std::to_string(port_a)});
  ASSERT_TRUE(kafka_->waitForCaughtUp(group_, input_, seconds(120))) << a.stderrText();
  auto& b = startInstance("b", {"--http-port", std::to_string(port_b)});
  auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (activePartitions(port_b).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(activePartitions(port_b).empty()) << "b never took a partition: " << b.stderrText();
  // b commits on its partitions before the pause, so that a finds b as their last committer and
  // fences it (with nothing committed by b, a Release build on Debian 13 found a alone and had
  // no one to fence).
  produce({records.begin() + sixth, records.begin() + third});
  ASSERT_TRUE(kafka_->waitForCaughtUp(group_, input_, seconds(120))) << b.stderrText();

  // Paused past session.timeout.ms (6 s): the group gives b's partitions to a, whose fencer
  // fences b's transactional id.
  b.signal(SIGSTOP);
  produce({records.begin() + third, records.begin() + 2 * third});
  deadline = std::chrono::steady_clock::now() + seconds(60);
  while (activePartitions(port_a).size() < static_cast<size_t>(kPartitions) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(activePartitions(port_a).size(), static_cast<size_t>(kPartitions))
      << "a did not take b's partitions: " << a.stderrText();
  ASSERT_TRUE(kafka_->waitForCaughtUp(group_, input_, seconds(120))) << a.stderrText();
  EXPECT_NE(a.stderrText().find("fenced departed owner b"), std::string::npos)
      << "a did not fence b: nothing was tested";

  // Resumed: never may a partition be active on both instances.
  b.signal(SIGCONT);
  produce({records.begin() + 2 * third, records.end()});
  int both = 0;
  std::string overlap;
  deadline = std::chrono::steady_clock::now() + seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto on_b = activePartitions(port_b);
    const auto on_a = activePartitions(port_a);
    for (const int p : on_b) {
      if (on_a.count(p) > 0) {
        ++both;
        overlap = "partition " + std::to_string(p);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(both, 0) << "active on both instances at once (" << overlap << "); b's log:\n"
                     << b.stderrText();
  expectAlertsMatchReplay();
  stopCleanly(b);
  stopCleanly(a);
}

}  // namespace
}  // namespace fraud::testing
