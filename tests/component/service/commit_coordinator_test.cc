// CommitCoordinator and TransactionalOutput against librdkafka's mock cluster with injected
// errors: commits, aborts mid-batch, fatal fencing, held-output bounds, lost partitions.
#include "service/commit_coordinator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "service/immediate_alert_output.h"
#include "tests/support/mock_cluster.h"
#include "tests/support/service_fakes.h"
#include "tests/support/sync_points.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service {
namespace {

using testing::FakeInput;
using testing::FakeRestorer;
using testing::kTestKey;
using testing::MockCluster;
using testing::TempStateDb;
using testing::txJson;
using Outcome = CommitCoordinator::Outcome;

size_t threadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

class CommitCoordinatorTest : public ::testing::Test {
 protected:
  CommitCoordinatorTest() {
    cluster_.createTopic(config_.input_topic, 2);
    cluster_.createTopic(config_.alerts_topic, 1);
    cluster_.createTopic(config_.dlq_topic, 1);
    cluster_.createTopic("changelog", 2);
    producer_ = cluster_.transactionalProducer(
        "commit-test-" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    output_ = std::make_unique<TransactionalOutput>(producer_.get(), [] {
      return kafka::GroupMetadata(rd_kafka_consumer_group_metadata_new("commit-test"));
    });
    context_ = std::make_unique<TaskContext>(
        TaskContext{config_, *output_, pipeline_, interval_, 1'000'000, [] { return int64_t{0}; }});
    tasks_ = std::make_unique<TaskManager>(*context_, db_, input_, restorer_);
    tasks_->assign({0, 1});
    for (const int32_t p : {0, 1}) {
      restorer_.complete(p, restorer_.lastTicket(p), state::PartitionCheckpoint{});
    }
    EXPECT_EQ(tasks_->activateRestored().size(), 2u);
    input_.seeks.clear();
  }
  ~CommitCoordinatorTest() override {
    commits_.reset();
    tasks_.reset();
    output_.reset();
  }

  void makeCoordinator(CommitCoordinator::Options options = {}) {
    options.input_topic = config_.input_topic;
    options.changelog_topic = "changelog";
    options.commit_interval = std::chrono::milliseconds(0);
    commits_ = std::make_unique<CommitCoordinator>(options, *output_, *tasks_, nullptr, nullptr,
                                                   interval_, nullptr);
  }

  // One valid record on partition p at offset o (a country per offset, so alerts come).
  void feed(int32_t p, int64_t o, std::optional<std::string> value = std::nullopt) {
    static constexpr const char* kCountries[] = {"FR", "DE", "ES", "IT", "PT", "NL"};
    if (!value) value = txJson("t" + std::to_string(o), "card-0001", kCountries[o % 6], 1'000 * o);
    InputRecord record;
    record.offset = o;
    record.key = "card-0001";
    record.value = *value;
    ASSERT_EQ(tasks_->task(p)->process(record), PartitionTask::Processed::kDone);
    commits_->recordProcessed();
  }

  ServiceConfig config_;
  detectors::CardHasher hasher_{kTestKey};
  detectors::RecordPipeline pipeline_{detectors::PipelineOptions{}, hasher_};
  IntervalMetrics interval_;
  MockCluster cluster_;
  TempStateDb db_;
  FakeInput input_;
  FakeRestorer restorer_;
  kafka::KafkaHandle producer_;
  std::unique_ptr<TransactionalOutput> output_;
  std::unique_ptr<TaskContext> context_;
  std::unique_ptr<TaskManager> tasks_;
  std::unique_ptr<CommitCoordinator> commits_;
};

TEST_F(CommitCoordinatorTest, CommitMovesCheckpointsAndOnlyCommittedStateIsPersisted) {
  makeCoordinator();
  for (int64_t o = 0; o < 4; ++o) feed(0, o);
  feed(1, 0);
  EXPECT_TRUE(commits_->persist()) << "nothing is committed yet: nothing to write";
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "uncommitted state never reaches disk";
  EXPECT_EQ(commits_->commitNow(), Outcome::kCommitted);
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, 4);
  EXPECT_EQ(tasks_->task(1)->committed().next_offset, 1);
  EXPECT_GT(tasks_->task(0)->committed().changelog_next_offset, 0) << "delivery report seen";
  EXPECT_TRUE(commits_->persist());
  ASSERT_TRUE((*db_).checkpoint(0).has_value());
  EXPECT_EQ((*db_).checkpoint(0)->next_offset, 4);
}

TEST_F(CommitCoordinatorTest, AbortMidBatchRewindsEveryTaskToItsCommittedCheckpoint) {
  makeCoordinator();
  feed(0, 0);
  feed(1, 0);
  ASSERT_EQ(commits_->commitNow(), Outcome::kCommitted);
  ASSERT_TRUE(commits_->persist());
  feed(0, 1);
  feed(0, 2);
  feed(1, 1);
  // The broker refuses the next transaction's partitions: the transaction must abort.
  cluster_.failNext(testing::kApiAddPartitionsToTxn, 1,
                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  const uint64_t epoch = tasks_->rewindEpoch();
  EXPECT_EQ(commits_->commitNow(), Outcome::kAborted);
  EXPECT_NE(tasks_->rewindEpoch(), epoch) << "records fetched before the rewind are dropped";
  EXPECT_EQ(tasks_->task(0)->nextOffset(), 1);
  EXPECT_EQ(tasks_->task(1)->nextOffset(), 1);
  EXPECT_EQ(input_.seeks, (std::vector<std::pair<int32_t, int64_t>>{{0, 1}, {1, 1}}));
  EXPECT_TRUE(commits_->blocked()) << "readiness reports outputs that cannot be written";
  EXPECT_EQ(interval_.tally.outcomes.records, 0u) << "aborted counts are not reported";
  // The records come again and commit once the broker takes them.
  feed(0, 1);
  feed(0, 2);
  feed(1, 1);
  EXPECT_EQ(commits_->commitNow(), Outcome::kCommitted);
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, 3);
  EXPECT_FALSE(commits_->blocked());
}

TEST_F(CommitCoordinatorTest, FatalFencingPersistsNothingEverAgain) {
  makeCoordinator();
  feed(0, 0);
  ASSERT_EQ(commits_->commitNow(), Outcome::kCommitted);
  ASSERT_TRUE(commits_->persist());
  feed(0, 1);
  feed(0, 2);
  // Another instance took our transactional id: the broker fences us at EndTxn.
  cluster_.failNext(testing::kApiEndTxn, 5, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  EXPECT_EQ(commits_->commitNow(), Outcome::kFatal);
  EXPECT_TRUE(commits_->fatal());
  // What a revocation or a shutdown would try next: none of it may reach the disk.
  EXPECT_FALSE(commits_->persist({0}));
  EXPECT_FALSE(commits_->persist());
  EXPECT_EQ((*db_).checkpoint(0)->next_offset, 1) << "the last committed checkpoint stays";
  EXPECT_EQ(commits_->commitNow(), Outcome::kFatal);
  EXPECT_EQ(commits_->abortUncommitted(), Outcome::kFatal);
  EXPECT_EQ(commits_->maybeCommit(), Outcome::kFatal);
}

TEST_F(CommitCoordinatorTest, OutputHeldDuringACommitPastItsBoundMakesInputWait) {
  CommitCoordinator::Options options;
  options.max_held_bytes = 256 * 1024;
  makeCoordinator(options);
  cluster_.setRoundTripMs(300);  // a slow broker keeps the commit in flight
  feed(0, 0);
  ASSERT_EQ(commits_->maybeCommit(), Outcome::kNone);
  ASSERT_TRUE(commits_->committing());
  const std::string poison(50'000, '!');  // each one a 50 kB dead letter
  int64_t offset = 1;
  while (!commits_->mustWait()) {
    ASSERT_LT(offset, 100) << "the bound never bit";
    feed(0, offset++, poison);
  }
  EXPECT_LE(output_->heldBytes(), options.max_held_bytes + poison.size() + 1'000);
  EXPECT_EQ(commits_->waitForCommit(), Outcome::kCommitted);
  EXPECT_EQ(output_->heldBytes(), 0u);
  EXPECT_FALSE(commits_->mustWait());
  cluster_.setRoundTripMs(0);
  EXPECT_EQ(commits_->commitNow(), Outcome::kCommitted);
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, offset);
}

TEST_F(CommitCoordinatorTest, LostPartitionsWaitForTheCommitInFlightThenAbortTheRest) {
  makeCoordinator();
  cluster_.setRoundTripMs(200);
  feed(0, 0);
  ASSERT_EQ(commits_->maybeCommit(), Outcome::kNone);
  ASSERT_TRUE(commits_->committing());
  feed(0, 1);  // held: it belongs to the next transaction
  const size_t restores = restorer_.queued.size();
  EXPECT_EQ(commits_->abortUncommitted(), Outcome::kAborted);
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, 1) << "the in-flight commit went through";
  EXPECT_FALSE(output_->hasOpenWork()) << "offset 1's outputs are gone";
  // That commit reaches disk before the rewind (never offset 1's uncommitted changes): the
  // partition rewinds locally and reads offset 1 again.
  EXPECT_TRUE(tasks_->task(0)->active());
  EXPECT_EQ(restorer_.queued.size(), restores) << "no restore from the changelog";
  EXPECT_EQ(tasks_->task(0)->nextOffset(), 1);
  ASSERT_TRUE((*db_).checkpoint(0).has_value());
  EXPECT_EQ((*db_).checkpoint(0)->next_offset, 1);
  EXPECT_TRUE(tasks_->task(1)->active()) << "partition 1 had nothing to throw away";
}

// The ingest thread never waits for the disk: a commit hands its state to the writer thread,
// and a failed background write ends the run (status 1; the changelog holds the state).
TEST_F(CommitCoordinatorTest, CheckpointWritesRunInTheBackgroundAndAFailedOneIsFatal) {
  FRAUD_REQUIRE_TEST_HOOKS();
  CommitCoordinator::Options options;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  options.commit_interval = std::chrono::milliseconds(0);
  makeCoordinator(options);
  feed(0, 0);
  ASSERT_EQ(commits_->maybeCommit(), Outcome::kNone) << "begins the commit, does not wait";
  ASSERT_EQ(commits_->waitForCommit(), Outcome::kCommitted);
  // The writer thread takes the batch; wait for it to land.
  for (int i = 0; i < 200 && !(*db_).checkpoint(0).has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE((*db_).checkpoint(0).has_value());
  EXPECT_EQ((*db_).checkpoint(0)->next_offset, 1);
  const auto failing = fraud::testing::failCheckpointWrites("injected: no space left on device");
  feed(0, 1);
  ASSERT_EQ(commits_->maybeCommit(), Outcome::kNone);
  // Handed to the writer, which fails it: this commit's hand-off learns of it when the writer
  // was quick (a slow build, ASan), else a later commit's does.
  const Outcome handed = commits_->waitForCommit();
  ASSERT_TRUE(handed == Outcome::kCommitted || handed == Outcome::kFatal)
      << static_cast<int>(handed);
  int64_t offset = 2;
  for (int i = 0; i < 100 && !commits_->fatal(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    feed(0, offset++);
    (void)commits_->commitNow();
  }
  EXPECT_TRUE(commits_->fatal()) << "the next commit's hand-off reports the failed write";
  EXPECT_EQ((*db_).checkpoint(0)->next_offset, 1) << "the disk keeps its last good checkpoint";
}

// --alert-delivery immediate: alerts leave at once on their own producer (here on a cluster of
// their own, so its errors can be injected alone); a commit goes through only once they are
// acknowledged, and an alert the broker refused aborts the commit, so the records behind it
// come again and the alert is sent again, with the same key and content.
TEST_F(CommitCoordinatorTest, ImmediateAlertNotAcknowledgedAbortsTheCommitAndIsSentAgain) {
  MockCluster alert_cluster;
  auto created = ImmediateAlertOutput::create(
      {{"bootstrap.servers", alert_cluster.bootstrap()}, {"message.timeout.ms", "3000"}},
      config_.alerts_topic, {});
  ASSERT_TRUE(created) << created.message();
  std::unique_ptr<ImmediateAlertOutput> alerts = std::move(*created);
  context_->alerts = alerts.get();
  ImmediateAlertOutput* raw = alerts.get();
  output_->setCommitPrecondition([raw] { return raw->flushForCommit(10'000); });
  makeCoordinator();
  // Three countries on one card: the third record raises an alert, produced immediately.
  feed(0, 0);
  feed(0, 1);
  alert_cluster.failNext(testing::kApiProduce, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  feed(0, 2);
  EXPECT_EQ(commits_->commitNow(), Outcome::kAborted) << "its alert was not acknowledged";
  EXPECT_EQ(raw->failures(), 1u);
  EXPECT_EQ(tasks_->task(0)->nextOffset(), 0) << "rewound to the last commit";
  feed(0, 0);
  feed(0, 1);
  feed(0, 2);
  EXPECT_EQ(commits_->commitNow(), Outcome::kCommitted);
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, 3);
  EXPECT_EQ(raw->failures(), 1u) << "the alert went out the second time";
  // Nothing of the alerts went through the transaction.
  output_->setCommitPrecondition(nullptr);
  context_->alerts = nullptr;
}

TEST_F(CommitCoordinatorTest, ImmediateAlertProducerFailedForGoodMakesTheCommitFatal) {
  // Before, a fatal error on the alerts' producer failed every commit's precondition: every
  // transaction aborted and rewound, forever, while /healthz said 200. Now the commit is fatal
  // and the stream thread stops with status 1 (as when fenced).
  MockCluster alert_cluster;
  auto created = ImmediateAlertOutput::create({{"bootstrap.servers", alert_cluster.bootstrap()}},
                                              config_.alerts_topic, {});
  ASSERT_TRUE(created) << created.message();
  std::unique_ptr<ImmediateAlertOutput> alerts = std::move(*created);
  context_->alerts = alerts.get();
  ImmediateAlertOutput* raw = alerts.get();
  output_->setCommitPrecondition([raw] { return raw->flushForCommit(10'000); });
  makeCoordinator();
  feed(0, 0);
  ASSERT_EQ(commits_->commitNow(), Outcome::kCommitted);
  ASSERT_EQ(
      rd_kafka_test_fatal_error(raw->producer(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                "injected by the test"),
      RD_KAFKA_RESP_ERR_NO_ERROR);
  feed(0, 1);
  EXPECT_EQ(commits_->commitNow(), Outcome::kFatal);
  EXPECT_TRUE(commits_->fatal());
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, 1) << "nothing after the last commit";
  output_->setCommitPrecondition(nullptr);
  context_->alerts = nullptr;
}

TEST_F(CommitCoordinatorTest, RevokeDuringACommitCommitsEverythingProcessed) {
  makeCoordinator();
  cluster_.setRoundTripMs(200);
  feed(0, 0);
  ASSERT_EQ(commits_->maybeCommit(), Outcome::kNone);
  feed(0, 1);
  feed(1, 0);
  EXPECT_EQ(commits_->commitNow(), Outcome::kCommitted);
  EXPECT_EQ(tasks_->task(0)->committed().next_offset, 2);
  EXPECT_EQ(tasks_->task(1)->committed().next_offset, 1);
  EXPECT_TRUE(commits_->persist({0}));
}

TEST_F(CommitCoordinatorTest, CommitsReuseOneCommitterThread) {
  makeCoordinator();
  feed(0, 0);
  ASSERT_EQ(commits_->commitNow(), Outcome::kCommitted);
  const size_t threads = threadCount();
  for (int64_t o = 1; o <= 20; ++o) {
    feed(0, o);
    ASSERT_EQ(commits_->commitNow(), Outcome::kCommitted);
  }
  EXPECT_EQ(threadCount(), threads);
}

}  // namespace
}  // namespace fraud::service
