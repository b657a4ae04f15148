// CommitCoordinator over a fake transaction sink (tests/support/fake_sinks.h) and real tasks:
// what a commit carries as plain values, what each result does to the tasks' checkpoints, and
// the bounds, with no Kafka client anywhere. The same coordinator over librdkafka's mock cluster
// is in commit_coordinator_test.cc.
#include <gtest/gtest.h>

#include <algorithm>

#include "service/changelog_format.h"
#include "tests/support/commit_harness.h"

namespace fraud::service {
namespace {

using testing::CommitHarness;
using Outcome = CommitCoordinator::Outcome;

// Where the sink's committed records put partition p's checkpoint record (its offset there).
int64_t checkpointOffset(const testing::FakeTransactionSink& sink, int32_t p) {
  for (size_t i = sink.committed.size(); i-- > 0;) {
    const auto& r = sink.committed[i];
    if (r.topic == "changelog" && r.partition == p && r.key == kChangelogCheckpointKey) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

TEST(CommitCoordinatorSink, ACommitCarriesEachDirtyTasksPositionAsPlainOffsets) {
  CommitHarness h;
  h.activate({0, 1, 2});
  for (int64_t o = 0; o < 4; ++o) h.feed(0, o);
  h.feed(2, 0);
  ASSERT_EQ(h.commits.commitNow(), Outcome::kCommitted);
  ASSERT_EQ(h.sink.commits.size(), 1u);
  const InputOffsets& sent = h.sink.commits[0];
  EXPECT_EQ(sent.topic, "transactions");
  EXPECT_EQ(sent.metadata, "instance-a") << "the owner, for a later owner's fencer";
  ASSERT_EQ(sent.offsets.size(), 2u) << "partition 1 processed nothing";
  EXPECT_EQ(sent.offsets[0].partition, 0);
  EXPECT_EQ(sent.offsets[0].next_offset, 4);
  EXPECT_EQ(sent.offsets[1].partition, 2);
  EXPECT_EQ(sent.offsets[1].next_offset, 1);
  EXPECT_EQ(h.tasks.task(0)->committed().next_offset, 4);
  EXPECT_EQ(h.tasks.task(2)->committed().next_offset, 1);
  EXPECT_FALSE(h.tasks.task(0)->inFlight().has_value());
}

TEST(CommitCoordinatorSink, TheAcknowledgedCheckpointOffsetBecomesEachTasksRestorePoint) {
  CommitHarness h;
  h.activate({0, 1});
  h.feed(0, 0);
  h.feed(1, 0);
  h.feed(1, 1);
  ASSERT_EQ(h.commits.commitNow(), Outcome::kCommitted);
  for (const int32_t p : {0, 1}) {
    const int64_t at = checkpointOffset(h.sink, p);
    ASSERT_GE(at, 0) << "partition " << p << " wrote its checkpoint record";
    EXPECT_EQ(h.tasks.task(p)->committed().changelog_next_offset, at + 1)
        << "a restore of partition " << p << " continues after its checkpoint record";
  }
}

TEST(CommitCoordinatorSink, AnAbortedCommitRewindsEveryTaskAndMovesNoCheckpoint) {
  CommitHarness h;
  h.activate({0, 1});
  h.feed(0, 0);
  ASSERT_EQ(h.commits.commitNow(), Outcome::kCommitted);
  h.input.seeks.clear();
  h.feed(0, 1);
  h.feed(1, 0);
  h.sink.results = {TransactionResult::kAborted};
  EXPECT_EQ(h.commits.commitNow(), Outcome::kAborted);
  EXPECT_EQ(h.tasks.task(0)->committed().next_offset, 1);
  EXPECT_EQ(h.tasks.task(0)->nextOffset(), 1) << "back to its committed checkpoint";
  EXPECT_EQ(h.tasks.task(1)->nextOffset(), 0);
  EXPECT_EQ(h.input.seeks, (std::vector<std::pair<int32_t, int64_t>>{{0, 1}, {1, 0}}));
  EXPECT_EQ(h.interval.tally.outcomes.records, 0u) << "aborted counts are not reported";
  EXPECT_FALSE(h.commits.fatal());
}

TEST(CommitCoordinatorSink, AFatalResultIsTheProducersAndEndsUntilItIsReplaced) {
  CommitHarness h;
  h.activate({0});
  h.feed(0, 0);
  h.sink.results = {TransactionResult::kFatal};
  EXPECT_EQ(h.commits.commitNow(), Outcome::kFatal);
  EXPECT_TRUE(h.commits.producerFailed());
  EXPECT_EQ(h.commits.maybeCommit(), Outcome::kFatal);
  EXPECT_FALSE(h.commits.persist());
  h.commits.resumeWithNewProducer();
  EXPECT_FALSE(h.commits.fatal());
}

// A task rebuilt (restored again) while a commit it prepared is in flight is a new start: the
// commit's checkpoint describes the state it threw away, so its result must not become the
// task's committed checkpoint.
TEST(CommitCoordinatorSink, ATaskRestartedDuringTheCommitIgnoresItsResult) {
  CommitHarness h;
  h.activate({0});
  for (int64_t o = 0; o < 3; ++o) h.feed(0, o);
  h.sink.hold_commits = true;
  ASSERT_EQ(h.commits.maybeCommit(), Outcome::kNone);
  ASSERT_TRUE(h.commits.committing());
  ASSERT_TRUE(h.tasks.task(0)->inFlight().has_value());
  h.tasks.rebuild(0);
  h.restorer.complete(0, h.restorer.lastTicket(0), state::PartitionCheckpoint{});
  ASSERT_EQ(h.tasks.activateRestored(), std::vector<int32_t>{0});
  EXPECT_EQ(h.commits.waitForCommit(), Outcome::kCommitted);
  EXPECT_EQ(h.tasks.task(0)->committed().next_offset, 0) << "the restored checkpoint stays";
  EXPECT_FALSE(h.tasks.task(0)->inFlight().has_value());
}

TEST(CommitCoordinatorSink, OffsetsCommittedOutsideTheTransactionArePlainValuesToo) {
  auto options = CommitHarness::defaultOptions();
  options.commit_offsets_outside_transaction = true;
  CommitHarness h(options);
  h.activate({3});
  h.feed(3, 0);
  h.feed(3, 1);
  ASSERT_EQ(h.commits.commitNow(), Outcome::kCommitted);
  ASSERT_EQ(h.offsets_outside.size(), 1u);
  EXPECT_EQ(h.offsets_outside[0].topic, "transactions");
  ASSERT_EQ(h.offsets_outside[0].offsets.size(), 1u);
  EXPECT_EQ(h.offsets_outside[0].offsets[0].partition, 3);
  EXPECT_EQ(h.offsets_outside[0].offsets[0].next_offset, 2);
}

TEST(CommitCoordinatorSink, RecordsProcessedDuringACommitPastTheirBoundMakeInputWait) {
  auto options = CommitHarness::defaultOptions();
  options.max_held_records = 3;
  CommitHarness h(options);
  h.activate({0});
  h.feed(0, 0);
  h.sink.hold_commits = true;
  ASSERT_EQ(h.commits.maybeCommit(), Outcome::kNone);
  int64_t offset = 1;
  while (!h.commits.mustWait()) {
    ASSERT_LT(offset, 10) << "the bound never bit";
    h.feed(0, offset++);
  }
  EXPECT_EQ(offset, 5) << "waits once more than 3 records are processed during the commit";
  EXPECT_FALSE(h.sink.held.sent.empty()) << "their outputs are held by the sink";
  EXPECT_EQ(h.commits.waitForCommit(), Outcome::kCommitted);
  EXPECT_FALSE(h.commits.mustWait());
}

TEST(CommitCoordinatorSink, DeliveriesAndTheOutputsLastStepGoToTheSink) {
  CommitHarness h;
  h.commits.serveDeliveries();
  EXPECT_EQ(h.sink.served, 1);
  h.commits.closeOutput(/*clean=*/true, 100);
  EXPECT_EQ(h.sink.drained, 1);
  EXPECT_EQ(h.sink.discarded, 0);
  h.commits.closeOutput(/*clean=*/false, 100);
  EXPECT_EQ(h.sink.discarded, 1);
}

}  // namespace
}  // namespace fraud::service
