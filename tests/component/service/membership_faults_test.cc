// The group membership's fault paths on librdkafka's mock cluster, the whole ingest loop
// running:
// - a producer fenced by a newer epoch of its transactional id (a survivor took this member's
//   partitions while it was paused past its session) must not reopen what it held: it rejoins
//   the group and takes only what the new assignment gives (Kafka Streams' TaskMigrated path);
// - a fatal consumer error (FENCED_INSTANCE_ID: two processes with one group.instance.id) must
//   stop serving at once and end the run with status 1, not be logged and ignored.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "service/stream_processor.h"
#include "tests/support/mock_cluster_service.h"

namespace fraud::service {
namespace {

using testing::txJson;
using namespace std::chrono_literals;

class MembershipFaultsTest : public testing::MockClusterServiceTest {
 protected:
  MembershipFaultsTest() : MockClusterServiceTest("membership-test") {}

  [[nodiscard]] double rebalances(const char* kind) {
    return metrics_.rebalances.Add({{"kind", kind}}).Value();
  }
  [[nodiscard]] size_t activePartitions(StreamProcessor& processor) {
    size_t active = 0;
    for (const auto& ps : processor.view().status().partitions) {
      if (ps.phase == api::PartitionPhase::kActive) ++active;
    }
    return active;
  }
};

TEST_F(MembershipFaultsTest, FencedProducerRejoinsTheGroupInsteadOfReopeningWhatItHeld) {
  // The mock cluster keeps a member that left until its session times out: a short one.
  const auto running = startProcessor(
      {{"log_level", "2"}, {"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "500"}});
  ASSERT_TRUE(running->startError().ok()) << running->startError().message();
  StreamProcessor& processor = running->processor();
  for (int i = 0; i < 10; ++i)
    produce(i % 2, "card-0001", txJson("a" + std::to_string(i), "card-0001", "FR", 1'000 + i));
  ASSERT_TRUE(running->waitFor([&] { return committedTransactions() >= 1; }, 30s))
      << "no transaction committed within 30 s (or run() ended)";
  ASSERT_TRUE(running->waitFor([&] { return activePartitions(processor) == 2; }, 30s));
  const double assigned_before = rebalances("assign");
  ASSERT_EQ(assigned_before, 1);

  // A survivor fenced our transactional id: the next transaction is refused as fenced.
  cluster_.failNext(testing::kApiAddPartitionsToTxn, 1, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  for (int i = 0; i < 10; ++i)
    produce(i % 2, "card-0001", txJson("b" + std::to_string(i), "card-0001", "DE", 5'000 + i));

  ASSERT_TRUE(running->waitFor([&] { return metrics_.producer_recoveries.Value() >= 1; }, 30s))
      << "the fenced producer was not replaced";
  // Before: the held partitions were reopened at once, with no new assignment.
  EXPECT_TRUE(running->waitFor([&] { return rebalances("assign") > assigned_before; }, 30s))
      << "the member did not rejoin the group after it was fenced";
  EXPECT_GE(rebalances("revoke") + rebalances("lost"), 1) << "the rejoin revoked nothing";
  // The new assignment's partitions are restored and consumed again, and everything commits.
  const double committed_after_fence = committedTransactions();
  produce(0, "card-0001", txJson("c0", "card-0001", "IT", 9'000));
  EXPECT_TRUE(running->waitFor(
      [&] {
        const auto p0 = (*db_).checkpoint(0);
        const auto p1 = (*db_).checkpoint(1);
        return activePartitions(processor) == 2 &&
               committedTransactions() > committed_after_fence && p0 && p1 &&
               p0->next_offset + p1->next_offset == 21;
      },
      60s))
      << "not every record committed after the rejoin";
  EXPECT_EQ(metrics_.producer_recoveries.Value(), 1);
  EXPECT_EQ(running->stop(30s), 0);
}

TEST_F(MembershipFaultsTest, FencedInstanceIdStopsServingAndEndsTheRunWithStatusOne) {
  config_.static_membership = true;
  const auto running = startProcessor({{"log_level", "2"}, {"heartbeat.interval.ms", "300"}});
  ASSERT_TRUE(running->startError().ok()) << running->startError().message();
  StreamProcessor& processor = running->processor();
  produce(0, "card-0001", txJson("a0", "card-0001", "FR", 1'000));
  ASSERT_TRUE(running->waitFor([&] { return committedTransactions() >= 1; }, 30s))
      << "no transaction committed within 30 s (or run() ended)";
  ASSERT_TRUE(processor.view().status().consumer_joined);

  // Another process joined with our group.instance.id: the coordinator fences us (fatal in
  // librdkafka's consumer). Before: logged as a warning, tasks kept "active", lookups answered.
  cluster_.failNext(testing::kApiHeartbeat, 50, RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID);
  EXPECT_EQ(running->exitWithin(30s), 1) << "run() went on after a fatal consumer error";
  const auto status = processor.view().status();
  EXPECT_FALSE(status.consumer_joined);
  EXPECT_EQ(activePartitions(processor), 0u) << "a fenced member still serves partitions";
}

}  // namespace
}  // namespace fraud::service
