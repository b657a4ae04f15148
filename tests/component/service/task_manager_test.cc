// TaskManager with a fake consumer and restorer over real RocksDB: assignment, restore
// activation, revocation during a restore, rewinds and rebuilds.
#include "service/task_manager.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "state/card_state_codec.h"
#include "tests/support/captured_log.h"
#include "tests/support/manual_clock.h"
#include "tests/support/service_fakes.h"
#include "tests/support/sync_points.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service {
namespace {

using testing::FakeInput;
using testing::FakeRestorer;
using testing::ManualClock;
using testing::RecordingCollector;
using testing::TaskHarness;
using testing::TempStateDb;
using testing::txJson;

class TaskManagerTest : public ::testing::Test {
 protected:
  explicit TaskManagerTest(size_t card_cache_mb = 16)
      : db_(card_cache_mb), tasks_(harness_.context, db_, input_, restorer_, clock_) {}

  void feed(int32_t p, int64_t offset, const std::string& value,
            const std::string& card = "card-0001") {
    InputRecord record;
    record.offset = offset;
    record.key = card;
    record.value = value;
    ASSERT_EQ(tasks_.task(p)->process(record), PartitionTask::Processed::kDone);
  }
  // Commits what partition `p` did, as a successful transaction would.
  void commit(int32_t p) {
    RecordingCollector changelog;
    PartitionTask* t = tasks_.task(p);
    ASSERT_TRUE(t->prepareCommit(changelog, "changelog"));
    ASSERT_TRUE(t->markCommitted().committed);
  }
  // Writes a card value that is no card state (a corrupt write, a foreign tool) to partition
  // `p` on disk, behind the live store's back.
  void corruptOnDisk(int32_t p, const detectors::CardRef& ref,
                     const std::optional<state::PartitionCheckpoint>& checkpoint) {
    state::CardChange bad;
    bad.card_ref = ref;
    bad.encoded = std::string("\x07not a card state");
    ASSERT_TRUE((*db_).writeRestored(p, {bad}, checkpoint).ok());
  }

  TempStateDb db_;
  TaskHarness harness_;
  FakeInput input_;
  FakeRestorer restorer_;
  ManualClock clock_;
  TaskManager tasks_;
};

TEST_F(TaskManagerTest, AssignedPartitionIsPausedUntilItsRestoreCompletes) {
  tasks_.assign({0, 1});
  EXPECT_TRUE(input_.paused[0]);
  EXPECT_TRUE(input_.paused[1]);
  ASSERT_EQ(restorer_.queued.size(), 2u);
  EXPECT_FALSE(tasks_.task(0)->active());
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{42, 5'000, 7});
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
  EXPECT_TRUE(tasks_.task(0)->active());
  EXPECT_FALSE(input_.paused[0]);
  EXPECT_TRUE(input_.paused[1]);
  ASSERT_EQ(input_.seeks.size(), 1u);
  EXPECT_EQ(input_.seeks[0], (std::pair<int32_t, int64_t>{0, 42}));
  EXPECT_EQ(tasks_.task(0)->nextOffset(), 42);
}

TEST_F(TaskManagerTest, RevokeAndReassignDuringARestoreActivatesOnceFromTheNewerRestore) {
  tasks_.assign({5});
  const uint64_t first = restorer_.lastTicket(5);
  tasks_.remove({5});
  tasks_.assign({5});
  const uint64_t second = restorer_.lastTicket(5);
  ASSERT_NE(first, second);
  // Both restores report; the first one's checkpoint is stale.
  restorer_.complete(5, first, state::PartitionCheckpoint{10, std::nullopt, 0});
  restorer_.complete(5, second, state::PartitionCheckpoint{20, std::nullopt, 0});
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{5});
  EXPECT_EQ(tasks_.task(5)->nextOffset(), 20);
  ASSERT_EQ(input_.seeks.size(), 1u) << "activated exactly once";
  // A late duplicate of the newer result does not activate it again either.
  restorer_.complete(5, second, state::PartitionCheckpoint{20, std::nullopt, 0});
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_EQ(input_.seeks.size(), 1u);
}

TEST_F(TaskManagerTest, UnansweredStartOffsetIsAskedAgainNeverGuessed) {
  input_.unanswered_start_offsets = 2;
  input_.start_offset = 1'234;
  tasks_.assign({0});
  restorer_.complete(0, restorer_.lastTicket(0));  // no checkpoint: a new partition
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_FALSE(tasks_.task(0)->active()) << "no offset guessed while the cluster is silent";
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
  EXPECT_EQ(tasks_.task(0)->nextOffset(), 1'234);
  EXPECT_EQ(input_.start_offset_queries, 3);
}

TEST_F(TaskManagerTest, FailedRestoreIsRetriedUnderANewTicketAfterAWait) {
  tasks_.assign({0});
  const uint64_t first = restorer_.lastTicket(0);
  restorer_.fail(0, first, "restore of partition 0: broker went away");
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_EQ(restorer_.lastTicket(0), first) << "retried at once";
  clock_.advance(TaskManager::kFirstRestoreRetry);
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_NE(restorer_.lastTicket(0), first);
  EXPECT_TRUE(input_.paused[0]);
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{});
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
}

// A restore that keeps failing (the cluster refusing it for minutes) is asked again ever less
// often, up to kLastRestoreRetry apart; once one succeeds, the next failure waits the least again.
TEST_F(TaskManagerTest, RestoresFailingInARowWaitLongerEachTimeUpToTheLongestWait) {
  tasks_.assign({0});
  std::vector<std::chrono::milliseconds> waits;
  for (int failure = 0; failure < 8; ++failure) {
    const uint64_t ticket = restorer_.lastTicket(0);
    restorer_.fail(0, ticket, "restore of partition 0: changelog offsets: Not leader");
    std::chrono::milliseconds waited{0};
    for (; restorer_.lastTicket(0) == ticket && waited < std::chrono::seconds(60);
         waited += std::chrono::milliseconds(50)) {
      EXPECT_TRUE(tasks_.activateRestored().empty());
      clock_.advance(std::chrono::milliseconds(50));
    }
    waits.push_back(waited);
  }
  using std::chrono_literals::operator""ms;
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{150ms, 250ms, 450ms, 850ms, 1650ms,
                                                           3250ms, 5050ms, 5050ms}))
      << "each wait is the schedule's, plus the 50 ms of one loop";

  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{});
  ASSERT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
  tasks_.rebuild(0);
  const uint64_t after = restorer_.lastTicket(0);
  restorer_.fail(0, after, "restore of partition 0: broker went away");
  EXPECT_TRUE(tasks_.activateRestored().empty());
  clock_.advance(TaskManager::kFirstRestoreRetry);
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_NE(restorer_.lastTicket(0), after) << "the count of failures in a row was not reset";
}

// A partition revoked while it waits for its retry is not restored again; assigned anew, it
// restores at once.
TEST_F(TaskManagerTest, ARetryPendingForARevokedPartitionIsDropped) {
  tasks_.assign({0});
  restorer_.fail(0, restorer_.lastTicket(0), "restore of partition 0: broker went away");
  EXPECT_TRUE(tasks_.activateRestored().empty());
  tasks_.remove({0});
  const size_t queued = restorer_.queued.size();
  clock_.advance(TaskManager::kLastRestoreRetry);
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_EQ(restorer_.queued.size(), queued) << "a revoked partition was restored";
  tasks_.assign({0});
  EXPECT_EQ(restorer_.queued.size(), queued + 1);
}

TEST_F(TaskManagerTest, ASeekRefusedAtActivationRestoresThePartitionAgain) {
  const fraud::testing::CapturedLog log;
  tasks_.assign({0});
  const uint64_t first = restorer_.lastTicket(0);
  input_.fail_seeks = true;
  restorer_.complete(0, first, state::PartitionCheckpoint{42, 5'000, 7});
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_FALSE(tasks_.task(0)->active());
  EXPECT_TRUE(input_.paused[0]) << "not resumed at a position it could not seek to";
  EXPECT_NE(restorer_.lastTicket(0), first) << "restored again";
  EXPECT_EQ(log.count("error partition 0: cannot seek to offset 42 (Local: Erroneous state); "
                      "restoring again"),
            1u)
      << log.text();
  input_.fail_seeks = false;
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{42, 5'000, 7});
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
  EXPECT_EQ(input_.seeks, (std::vector<std::pair<int32_t, int64_t>>{{0, 42}}));
}

TEST_F(TaskManagerTest, ASeekRefusedByARewindRestoresThePartition) {
  const fraud::testing::CapturedLog log;
  tasks_.assign({0});
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{});
  ASSERT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
  feed(0, 0, txJson("a", "card-0001", "FR", 1'000));  // processed, nothing committed
  const size_t queued = restorer_.queued.size();
  input_.fail_seeks = true;
  tasks_.rewindAll();
  EXPECT_FALSE(tasks_.task(0)->active()) << "restoring: its position could not be set";
  ASSERT_EQ(restorer_.queued.size(), queued + 1);
  EXPECT_EQ(restorer_.queued.back().first, 0);
  EXPECT_TRUE(input_.paused[0]);
  EXPECT_EQ(log.count("error partition 0: cannot seek back to offset 0 (Local: Erroneous state); "
                      "restoring it"),
            1u)
      << log.text();
}

TEST_F(TaskManagerTest, ASeekRefusedWhenInputResumesRestoresThePartition) {
  const fraud::testing::CapturedLog log;
  tasks_.assign({0, 1});
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{7, std::nullopt, 0});
  restorer_.complete(1, restorer_.lastTicket(1), state::PartitionCheckpoint{});
  ASSERT_EQ(tasks_.activateRestored().size(), 2u);
  tasks_.pauseAll();
  const size_t queued = restorer_.queued.size();
  input_.fail_seeks = true;
  tasks_.resumeAll();
  EXPECT_FALSE(tasks_.task(0)->active());
  EXPECT_FALSE(tasks_.task(1)->active());
  ASSERT_EQ(restorer_.queued.size(), queued + 2);
  EXPECT_TRUE(input_.paused[0]) << "not resumed at a position it could not seek to";
  EXPECT_TRUE(input_.paused[1]);
  EXPECT_EQ(log.count("error partition 0: cannot seek to offset 7 (Local: Erroneous state); "
                      "restoring it"),
            1u)
      << log.text();
}

TEST_F(TaskManagerTest, RewindSeeksCommittedPositionsOrRestoresWhenDiskRefusedThem) {
  FRAUD_REQUIRE_TEST_HOOKS();
  tasks_.assign({0, 1});
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{});
  restorer_.complete(1, restorer_.lastTicket(1), state::PartitionCheckpoint{});
  ASSERT_EQ(tasks_.activateRestored().size(), 2u);
  input_.seeks.clear();
  // Partition 0: processed, nothing committed. Partition 1: committed, not yet on disk.
  feed(0, 0, txJson("a", "card-0001", "FR", 1'000));
  feed(1, 0, txJson("b", "card-0001", "FR", 1'000));
  commit(1);
  feed(1, 1, txJson("c", "card-0001", "DE", 2'000));
  uint64_t epoch = tasks_.rewindEpoch();
  size_t queued = restorer_.queued.size();
  tasks_.rewindAll();
  EXPECT_NE(tasks_.rewindEpoch(), epoch);
  EXPECT_EQ(input_.seeks, (std::vector<std::pair<int32_t, int64_t>>{{0, 0}, {1, 1}}));
  EXPECT_TRUE(tasks_.task(0)->active());
  EXPECT_TRUE(tasks_.task(1)->active()) << "its committed state reached disk before the rewind";
  EXPECT_EQ(restorer_.queued.size(), queued);

  // Now the disk refuses partition 1's next committed batch: its rewind needs the changelog.
  feed(1, 1, txJson("c", "card-0001", "DE", 2'000));
  commit(1);
  const auto failing = fraud::testing::failCheckpointWrites("injected: I/O error");
  feed(1, 2, txJson("d", "card-0001", "IT", 3'000));
  epoch = tasks_.rewindEpoch();
  queued = restorer_.queued.size();
  tasks_.rewindAll();
  EXPECT_NE(tasks_.rewindEpoch(), epoch);
  EXPECT_FALSE(tasks_.task(1)->active()) << "restoring from the changelog";
  ASSERT_EQ(restorer_.queued.size(), queued + 1);
  EXPECT_EQ(restorer_.queued.back().first, 1);
  EXPECT_TRUE(input_.paused[1]);
}

TEST_F(TaskManagerTest, UnreadableLocalStateRebuildsThePartitionInsteadOfEndingTheProcess) {
  ASSERT_NO_FATAL_FAILURE(
      corruptOnDisk(2, harness_.hasher.hash("card-0001"), state::PartitionCheckpoint{9, 1'000, 3}));
  tasks_.assign({2});
  restorer_.complete(2, restorer_.lastTicket(2), state::PartitionCheckpoint{9, 1'000, 3});
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_FALSE(tasks_.task(2)->active());
  EXPECT_FALSE((*db_).checkpoint(2).has_value()) << "the partition was cleared";
  // The rebuild's restore comes back with the changelog's truth and the task goes live.
  restorer_.complete(2, restorer_.lastTicket(2), state::PartitionCheckpoint{9, 1'000, 3});
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{2});
}

// A card cache far too small for the partition: the store's constructor stops decoding at its
// budget, so most cards are met outside the warm cache.
class TaskManagerSmallCache : public TaskManagerTest {
 protected:
  static constexpr int kCards = 30'000;  // far more than a 1 MiB cache holds

  TaskManagerSmallCache() : TaskManagerTest(/*card_cache_mb=*/1) {}

  // Partition 0 active with kCards cards, committed and persisted; `last_ref`: the card a scan
  // meets last.
  void fillCommittedPartition(detectors::CardRef& last_ref) {
    tasks_.assign({0});
    restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{0, std::nullopt, 0});
    ASSERT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
    for (int i = 0; i < kCards; ++i) {
      std::array<char, 16> buffer{};
      std::snprintf(buffer.data(), buffer.size(), "card-%05d", i);
      const std::string card(buffer.data());
      ASSERT_NO_FATAL_FAILURE(
          feed(0, i, txJson("t" + std::to_string(i), card, "FR", 1'000 + i), card));
      const auto ref = harness_.hasher.hash(card);
      if (i == 0 || ref.bytes > last_ref.bytes) last_ref = ref;
    }
    commit(0);
    ASSERT_TRUE(tasks_.task(0)->persist().ok());
  }
};

// The review's crash loop: the detector's start-up scan (PartitionDetector's constructor,
// through forEach) met the corrupt card outside the warm cache and threw through activation:
// std::terminate, on every restart. Now the partition is rebuilt.
TEST_F(TaskManagerSmallCache, CorruptCardOutsideTheWarmCacheRebuildsInsteadOfEndingTheProcess) {
  detectors::CardRef last_ref{};
  ASSERT_NO_FATAL_FAILURE(fillCommittedPartition(last_ref));
  tasks_.remove({0});
  // The card scanned last is corrupt on disk.
  ASSERT_NO_FATAL_FAILURE(corruptOnDisk(0, last_ref, state::PartitionCheckpoint{kCards, 1'000, 3}));

  tasks_.assign({0});
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{kCards, 1'000, 3});
  EXPECT_TRUE(tasks_.activateRestored().empty());
  EXPECT_FALSE(tasks_.task(0)->active());
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "the partition was cleared";
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{kCards, 1'000, 3});
  EXPECT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
}

// The same corrupt card met by a rewind (after an abort) rebuilds the partition too, instead of
// escaping from the commit's completion.
TEST_F(TaskManagerSmallCache, CorruptCardMetByARewindRebuildsThePartition) {
  detectors::CardRef last_ref{};
  ASSERT_NO_FATAL_FAILURE(fillCommittedPartition(last_ref));
  // Corrupt on disk behind the live store's back, then an abort rewinds the task.
  ASSERT_NO_FATAL_FAILURE(corruptOnDisk(0, last_ref, std::nullopt));
  tasks_.rewindAll();
  EXPECT_FALSE(tasks_.task(0)->active()) << "rebuilding";
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "the partition was cleared";
}

TEST_F(TaskManagerTest, RemovedPartitionsRestoreIsCancelled) {
  tasks_.assign({0});
  tasks_.remove({0});
  EXPECT_EQ(tasks_.task(0), nullptr);
  EXPECT_NE(std::find(restorer_.cancelled.begin(), restorer_.cancelled.end(), 0),
            restorer_.cancelled.end());
  restorer_.complete(0, restorer_.lastTicket(0), state::PartitionCheckpoint{});
  EXPECT_TRUE(tasks_.activateRestored().empty());
}

}  // namespace
}  // namespace fraud::service
