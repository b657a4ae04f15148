// TransactionalOutput on librdkafka's mock cluster: the per-alert stage timings (commit_wait,
// commit) and the commit precondition of --alert-delivery immediate.
#include "service/transactional_output.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>

#include "service/metrics.h"
#include "tests/unit/service/mock_cluster.h"

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

TEST_F(TransactionalOutputTest, EachAlertIsTimedToItsCommitAndHeldOnesToTheNext) {
  output_.timeRecordsOf(alerts_, metrics_.stage_commit_wait, metrics_.stage_commit);
  send(alerts_);
  send(alerts_);
  send(dlq_);  // not timed
  cluster_.setRoundTripMs(100);
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(count(metrics_.stage_commit_wait), 2u) << "the two alerts' wait ends at the start";
  send(alerts_);  // held: it goes in the next transaction
  ASSERT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kCommitted);
  EXPECT_EQ(count(metrics_.stage_commit), 2u);
  EXPECT_GE(metrics_.stage_commit.Collect().histogram.sample_sum, 2 * 0.1)
      << "each took the commit's time";
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(count(metrics_.stage_commit_wait), 3u) << "the held alert waited through the first";
  ASSERT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kCommitted);
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
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kAborted);
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(output_.blocked()) << "readiness says outputs could not be written";
  allow = true;
  send(alerts_);
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kCommitted);
  EXPECT_EQ(asked, 2);
  EXPECT_FALSE(output_.blocked());
}

TEST_F(TransactionalOutputTest, AFatalPreconditionEndsTheOutputAsFatal) {
  // --alert-delivery immediate with an alert producer that failed for good: no commit can ever
  // go through, so the output must not abort and retry forever (a livelock behind a green
  // /healthz); it reports kFatal and the service stops with status 1.
  output_.setCommitPrecondition([] { return CommitReadiness::kFatal; });
  send(alerts_);
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kFatal);
  EXPECT_TRUE(output_.fatal());
  send(alerts_);
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kFatal);
}

TEST_F(TransactionalOutputTest, ARecordLostBeforeTheCommitAbortsTheTransactionSoTheNextCommits) {
  // The broker refuses an alert (too large): librdkafka puts the transaction in its
  // abortable-error state, and the next produce fails locally, before any commit began. That
  // transaction must still be aborted (by the committer), else every later begin fails with
  // "must be aborted" and nothing commits again: a loop the live test of an unwritable alerts
  // topic caught under load.
  cluster_.failNext(testing::kApiProduce, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  send(alerts_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!output_.blocked() && std::chrono::steady_clock::now() < deadline) {
    send(alerts_);  // fails locally once the refusal has put the transaction in error
    rd_kafka_poll(producer_.get(), 10);
  }
  ASSERT_TRUE(output_.blocked()) << "no produce failed: the injected refusal did not land";
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kAborted);
  // librdkafka may refuse the first commit after that abort once more (its idempotence
  // sequence is reset by the abort): an abort and a retry, as the service does. Then commits.
  int rounds = 0;
  auto result = TransactionalOutput::Result::kAborted;
  while (result != TransactionalOutput::Result::kCommitted && rounds < 5) {
    ++rounds;
    send(alerts_);
    output_.startCommit(nullptr, nullptr);
    result = output_.finishCommit(/*wait=*/true).value_or(TransactionalOutput::Result::kFatal);
  }
  EXPECT_EQ(result, TransactionalOutput::Result::kCommitted) << "after " << rounds << " rounds";
  EXPECT_LE(rounds, 2);
  send(alerts_);
  output_.startCommit(nullptr, nullptr);
  EXPECT_EQ(output_.finishCommit(/*wait=*/true), TransactionalOutput::Result::kCommitted);
}

}  // namespace
}  // namespace fraud::service
