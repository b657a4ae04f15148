// TransactionalOutput on librdkafka's mock cluster: the per-alert stage timings (commit_wait,
// commit) and the commit precondition of --alert-delivery immediate.
#include "service/transactional_output.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <map>

#include "service/metrics.h"
#include "tests/support/captured_log.h"
#include "tests/support/mock_cluster.h"

namespace fraud::service {
namespace {

using testing::MockCluster;

class TransactionalOutputTest : public ::testing::Test {
 protected:
  TransactionalOutputTest()
      : producer_(cluster_.transactionalProducer(
            "output-test-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()))),
        metrics_(registry_),
        output_(producer_.get()) {}

  void send(const std::string& topic) { output_.send(topic, 0, "key", "value", {}); }

  uint64_t count(const prometheus::Histogram& h) const {
    return h.Collect().histogram.sample_count;
  }

  MockCluster cluster_;
  kafka::KafkaHandle producer_;
  prometheus::Registry registry_;
  ServiceMetrics metrics_;
  TransactionalOutput output_;
  const std::string alerts_ = "alerts";
  const std::string dlq_ = "dlq";
};

// The commit's result carries where each changelog partition's checkpoint record landed, as the
// broker acknowledged it: a restore continues after it.
TEST_F(TransactionalOutputTest, AFinishedCommitReturnsWhereEachCheckpointRecordLanded) {
  cluster_.createTopic("changelog", 2);
  for (int i = 0; i < 3; ++i) output_.send("changelog", 0, "card", "state", {});
  output_.sendCheckpoint("changelog", 0, "checkpoint", "c0");
  output_.sendCheckpoint("changelog", 1, "checkpoint", "c1");
  output_.startCommit({});
  const auto first = output_.finishCommit(/*wait=*/true);
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->result, TransactionalOutput::Result::kCommitted);
  EXPECT_EQ(first->checkpoint_offsets, (std::map<int32_t, int64_t>{{0, 3}, {1, 0}}));
  EXPECT_GT(first->duration.count(), 0.0);
  output_.send("changelog", 0, "card", "state", {});
  output_.sendCheckpoint("changelog", 0, "checkpoint", "c0");
  output_.startCommit({});
  const auto second = output_.finishCommit(/*wait=*/true);
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ(second->result, TransactionalOutput::Result::kCommitted);
  ASSERT_EQ(second->checkpoint_offsets.size(), 1u) << "only this transaction's checkpoints";
  EXPECT_GT(second->checkpoint_offsets.at(0), 4) << "after the first's records and marker";
}

TEST_F(TransactionalOutputTest, EachAlertIsTimedToItsCommitAndHeldOnesToTheNext) {
  output_.timeRecordsOf(alerts_, metrics_.stage_commit_wait, metrics_.stage_commit);
  send(alerts_);
  send(alerts_);
  send(dlq_);  // not timed
  cluster_.setRoundTripMs(100);
  output_.startCommit({});
  EXPECT_EQ(count(metrics_.stage_commit_wait), 2u) << "the two alerts' wait ends at the start";
  send(alerts_);  // held: it goes in the next transaction
  ASSERT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kCommitted);
  EXPECT_EQ(count(metrics_.stage_commit), 2u);
  EXPECT_GE(metrics_.stage_commit.Collect().histogram.sample_sum, 2 * 0.1)
      << "each took the commit's time";
  output_.startCommit({});
  EXPECT_EQ(count(metrics_.stage_commit_wait), 3u) << "the held alert waited through the first";
  ASSERT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kCommitted);
  EXPECT_EQ(count(metrics_.stage_commit), 3u);
}

TEST_F(TransactionalOutputTest, AFailedPreconditionAbortsTheTransactionAndAnotherCommits) {
  std::atomic<int> asked{0};
  std::atomic<bool> allow{false};
  output_.setCommitPrecondition([&] {
    ++asked;
    return allow.load() ? CommitReadiness::kReady : CommitReadiness::kRetry;
  });
  send(alerts_);
  output_.startCommit({});
  EXPECT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kAborted);
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(output_.blocked()) << "readiness says outputs could not be written";
  allow = true;
  send(alerts_);
  output_.startCommit({});
  EXPECT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kCommitted);
  EXPECT_EQ(asked, 2);
  EXPECT_FALSE(output_.blocked());
}

// A record refused by the broker puts the transaction in an abortable state; a send after that
// fails at once. The commit that follows must abort the transaction in librdkafka too: left
// open, every later begin fails ("current transaction must be aborted") and nothing commits
// again (seen on the broker with an alerts topic whose record limit was lowered).
TEST_F(TransactionalOutputTest, ASendRefusedInAFailedTransactionAbortsItAndTheNextCommits) {
  cluster_.failNext(testing::kApiProduce, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  send(alerts_);
  // The refusal arrives: the transaction now requires an abort.
  EXPECT_EQ(rd_kafka_flush(producer_.get(), 10'000), RD_KAFKA_RESP_ERR_NO_ERROR);
  send(dlq_);  // refused by librdkafka at once: the transaction is in an error state
  output_.startCommit({});
  EXPECT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kAborted);
  EXPECT_TRUE(output_.blocked());
  // The mock cluster may refuse the first transaction after the abort once (its sequence
  // numbers: "skipped sequence numbers"); one of the next few commits. Left open, none would.
  TransactionalOutput::Result result = TransactionalOutput::Result::kAborted;
  for (int attempt = 0; attempt < 3 && result != TransactionalOutput::Result::kCommitted;
       ++attempt) {
    send(alerts_);
    output_.startCommit({});
    result = output_.finishCommit(/*wait=*/true)->result;
  }
  EXPECT_EQ(result, TransactionalOutput::Result::kCommitted)
      << "the failed transaction was never aborted";
  EXPECT_FALSE(output_.hasOpenWork());
}

TEST_F(TransactionalOutputTest, ARefusedBeginIsLoggedOnceAndItsRecordIsNotProduced) {
  // A transactional producer whose transactions were never initialised: librdkafka refuses the
  // begin ("Operation not valid in state Init"), neither fatal nor abortable.
  auto conf = kafka::makeKafkaConf({{"bootstrap.servers", cluster_.bootstrap()},
                                    {"transactional.id", "output-test-uninitialised"},
                                    {"log_level", "2"}});
  ASSERT_TRUE(conf) << conf.message();
  TransactionalOutput::installDeliveryReports(conf->get());
  auto made = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  ASSERT_TRUE(made) << made.message();
  const kafka::KafkaHandle uninitialised = std::move(*made);
  TransactionalOutput output(uninitialised.get());
  const fraud::testing::CapturedLog log;
  output.send(alerts_, 0, "key", "value", {});
  EXPECT_EQ(log.count("error begin transaction: "), 1u) << log.text();
  EXPECT_EQ(log.count("cannot produce"), 0u) << "nothing produced outside a transaction";
  EXPECT_TRUE(output.hasOpenWork()) << "the lost record makes the next commit an abort";
  output.startCommit({});
  EXPECT_EQ(output.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kAborted);
}

TEST_F(TransactionalOutputTest, AFatalPreconditionEndsTheOutputAsFatal) {
  // --alert-delivery immediate with an alert producer that failed for good: no commit can ever
  // go through, so the output must not abort and retry forever (a livelock behind a green
  // /healthz); it reports kFatal and the service stops with status 1.
  output_.setCommitPrecondition([] { return CommitReadiness::kFatal; });
  send(alerts_);
  output_.startCommit({});
  EXPECT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kFatal);
  EXPECT_TRUE(output_.fatal());
  send(alerts_);
  output_.startCommit({});
  EXPECT_EQ(output_.finishCommit(/*wait=*/true)->result, TransactionalOutput::Result::kFatal);
}

}  // namespace
}  // namespace fraud::service
