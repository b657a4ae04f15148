// The whole ingest loop against librdkafka's mock cluster: records in, alerts out, and a fatal
// error (fenced by another instance) mid-stream that keeps coming back: after the recoveries the
// bound allows, run() must end cleanly: status 1, the consumer closed (its revoke callback run
// while every member still lives), nothing persisted past the last commit.
#include "service/stream_processor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

#include "tests/support/mock_cluster_service.h"

namespace fraud::service {
namespace {

using testing::txJson;
using namespace std::chrono_literals;

class StreamProcessorTest : public testing::MockClusterServiceTest {
 protected:
  StreamProcessorTest() : MockClusterServiceTest("processor-test") {}

  void produce(int32_t partition, const std::string& value) {
    MockClusterServiceTest::produce(partition, "card-0001", value);
  }
};

TEST_F(StreamProcessorTest, FencedAgainAfterEveryRecoveryEndsRunWithStatusOneAtTheBound) {
  // Each recovery from a fence rejoins the group, and the mock cluster keeps the member that
  // left until its session times out: a short one.
  const auto running = startProcessor(
      {{"log_level", "2"}, {"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "500"}});
  ASSERT_TRUE(running->startError().ok()) << running->startError().message();
  StreamProcessor& processor = running->processor();

  for (int i = 0; i < 20; ++i)
    produce(i % 2, txJson("a" + std::to_string(i), "card-0001", "FR", 1'000 + i));
  if (!running->waitFor([&] { return committedTransactions() >= 1; }, 30s)) {
    for (const auto& ps : processor.view().status().partitions) {
      ADD_FAILURE() << "partition " << ps.partition << " next offset " << ps.next_offset
                    << " phase " << static_cast<int>(ps.phase);
    }
  }
  ASSERT_GE(committedTransactions(), 1) << "no transaction committed within 30 s (or run() ended)";
  const auto status = processor.view().status();
  ASSERT_TRUE(status.consumer_joined);

  // Another instance takes our transactional id: every transaction from now on is fenced as it
  // adds its partitions, the replaced producers' too. (Fenced there, no record of it reaches the
  // mock cluster's log, which keeps aborted records: each recovery's restore finds nothing new
  // and the same records are processed again, into the next fenced transaction.)
  cluster_.failNext(testing::kApiAddPartitionsToTxn, 100, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  std::vector<std::optional<state::PartitionCheckpoint>> before;
  for (const int32_t p : {0, 1}) before.push_back((*db_).checkpoint(p));
  for (int i = 0; i < 20; ++i)
    produce(i % 2, txJson("b" + std::to_string(i), "card-0001", "DE", 5'000 + i));

  EXPECT_EQ(running->exitWithin(90s), 1) << "run() did not end after fencing";
  EXPECT_EQ(metrics_.producer_recoveries.Value(),
            static_cast<double>(ProducerRecovery::kMaxRecoveries));
  EXPECT_FALSE(processor.view().status().consumer_joined);
  // Nothing after the last successful commit reached the disk.
  for (const int32_t p : {0, 1}) {
    const auto after = (*db_).checkpoint(p);
    ASSERT_EQ(after.has_value(), before[static_cast<size_t>(p)].has_value());
    if (after) {
      EXPECT_EQ(after->next_offset, before[static_cast<size_t>(p)]->next_offset);
    }
  }
}

// Fenced when the offsets are sent, with the transaction's records already acknowledged: their
// delivery reports are served by the shutdown's last poll, after the revoke destroyed the tasks.
// Before, the checkpoint record's report wrote the offset through a pointer into its task (a
// heap use-after-free that the asan-ubsan preset reports); now it lands in the output's ledger.
TEST_F(StreamProcessorTest, FencedWhileSendingOffsetsEndsRunWithStatusOneAndTouchesNoFreedTask) {
  const auto running = startProcessor();
  ASSERT_TRUE(running->startError().ok()) << running->startError().message();
  for (int i = 0; i < 20; ++i)
    produce(i % 2, txJson("a" + std::to_string(i), "card-0001", "FR", 1'000 + i));
  ASSERT_TRUE(running->waitFor([&] { return committedTransactions() >= 1; }, 30s))
      << "no transaction committed within 30 s (or run() ended)";
  // An ACL refusal of the transactional id: fatal here, and not cured by a new producer, so the
  // run ends at the first one (a failover's fatal errors are recovered from: the tests of
  // producer_recovery_test.cc).
  cluster_.failNext(testing::kApiAddOffsetsToTxn, 100,
                    RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  // New records keep coming: the mock cluster keeps a failed transaction's records, so each
  // recovery's restore moves past them and only new records make the next transaction.
  const auto give_up_at = std::chrono::steady_clock::now() + 60s;
  std::optional<int> status;
  for (int i = 0; !(status = running->exitWithin(100ms)); ++i) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up_at) << "run() did not end after fencing";
    produce(i % 2, txJson("b" + std::to_string(i), "card-0001", "DE", 5'000 + i));
  }
  EXPECT_EQ(status, 1);
  EXPECT_EQ(metrics_.producer_recoveries.Value(), 0);
  EXPECT_FALSE(running->processor().view().status().consumer_joined);
}

// A transaction coordinator out for longer than max.poll.interval.ms, while the output held for
// the next transaction passes its bound: before, the ingest thread waited for the commit inside
// the loop and stopped polling, so librdkafka left the group and the partitions were revoked in
// the middle of the commit. Now input is paused and the consumer still polled: the member keeps
// its partitions and everything commits once the coordinator is back.
TEST_F(StreamProcessorTest, CoordinatorOutageLongerThanMaxPollIntervalKeepsThePartitions) {
  config_.max_held_output_mb = 1;
  const auto running = startProcessor({{"log_level", "2"},
                                       {"max.poll.interval.ms", "7000"},
                                       {"session.timeout.ms", "6000"},
                                       {"heartbeat.interval.ms", "500"}});
  ASSERT_TRUE(running->startError().ok()) << running->startError().message();
  produce(0, txJson("a0", "card-0001", "FR", 1'000));
  ASSERT_TRUE(running->waitFor([&] { return committedTransactions() >= 1; }, 60s, 50ms))
      << "no first commit";
  const double committed_before = committedTransactions();

  // Every EndTxn fails for a while (a coordinator failing over: longer than the 7 s poll
  // interval), and 2 MB of dead letters are held behind the commit: over the 1 MiB bound.
  cluster_.failNext(testing::kApiEndTxn, 30, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE);
  const std::string junk(10'000, 'x');
  for (int i = 0; i < 200; ++i) produce(i % 2, junk);
  const auto all_committed = [&] {
    const auto p0 = (*db_).checkpoint(0);
    const auto p1 = (*db_).checkpoint(1);
    return committedTransactions() > committed_before && p0 && p1 &&
           p0->next_offset + p1->next_offset >= 201;
  };
  const auto outage_started = std::chrono::steady_clock::now();
  EXPECT_TRUE(running->waitFor(all_committed, 120s, 50ms))
      << "not every record committed after the outage";
  EXPECT_GT(std::chrono::steady_clock::now() - outage_started, 7s)
      << "the outage was shorter than max.poll.interval.ms: nothing was tested";
  EXPECT_EQ(metrics_.rebalances.Add({{"kind", "lost"}}).Value(), 0) << "the partitions were lost";
  EXPECT_EQ(metrics_.rebalances.Add({{"kind", "revoke"}}).Value(), 0) << "the partitions moved";
  EXPECT_EQ(running->stop(60s), 0);
}

TEST_F(StreamProcessorTest, MaxEventsTooLargeForTheChangelogRecordLimitIsRefusedAtStart) {
  config_.detector.max_events = 100'000;  // one card's state would reach ~8 MB
  StreamProcessor processor(config_, {{"log_level", "2"}}, hasher_, *db_, metrics_);
  const auto started = processor.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.code(), base::StatusCode::kInvalidArgument);
  const std::string& error = started.message();
  EXPECT_NE(error.find("--max-events 100000"), std::string::npos) << error;
  EXPECT_NE(error.find("message.max.bytes"), std::string::npos) << error;
}

}  // namespace
}  // namespace fraud::service
