// ChangelogRestorer against librdkafka's mock cluster and real RocksDB: where a restore starts
// (the local checkpoint; the changelog's start when the disk does not match it, before or past
// it, or cannot be read), what it applies (cards, erasures, checkpoints; a hostile changelog is
// counted and survived, never the end of the process) and how it fails (the disk, at the end or
// mid-read; fetches; offsets). How restores are run and reported:
// changelog_restorer_rounds_test.cc. The wait for a transaction left open needs a broker:
// tests/integration/service/changelog_restore_test.cc.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <array>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "service/task_manager.h"
#include "tests/component/service/changelog_restorer_fixture.h"
#include "tests/support/service_fakes.h"

namespace fraud::service {
namespace {

using testing::ChangelogRestorerTest;
using testing::kApiFetch;
using testing::kApiListOffsets;
using testing::largeStateAt;
using testing::refOf;
using testing::stateAt;
using testing::TempStateDb;

TEST_F(ChangelogRestorerTest, MalformedChangelogRecordsAreCountedAndSurvived) {
  const detectors::CardState good = stateAt(1'000);
  const auto good_ref = refOf(1);
  const auto bad_ref = refOf(2);
  sendCard(0, good_ref, good);
  ASSERT_TRUE(producer_.send(topic_, 0, bad_ref.raw(), "\x07 no card state").ok());
  ASSERT_TRUE(producer_.send(topic_, 0, "who-wrote-this", "{}").ok());
  ASSERT_TRUE(producer_.send(topic_, 0, kChangelogCheckpointKey, "garbage").ok());
  sendCheckpoint(0, state::PartitionCheckpoint{42, 1'000, 0});

  auto restorer = started();
  restorer->enqueue({{0, 7}, {1, 8}});  // partition 1's changelog is empty
  const auto results = waitForResults(*restorer, 2);
  ASSERT_EQ(results.size(), 2u) << "restores did not complete within 30 s";
  const auto& p0 = results[0].partition == 0 ? results[0] : results[1];
  const auto& p1 = results[0].partition == 0 ? results[1] : results[0];

  EXPECT_TRUE(p0.error.ok()) << p0.error.message();
  EXPECT_EQ(p0.ticket, 7u);
  EXPECT_EQ(p0.records, 5u);
  EXPECT_EQ(p0.malformed, 3u) << "the bad card, the unknown key, the bad checkpoint";
  ASSERT_TRUE(p0.checkpoint.has_value());
  EXPECT_EQ(p0.checkpoint->next_offset, 42);
  EXPECT_EQ(p0.checkpoint->changelog_next_offset, 5);
  EXPECT_EQ(cardOf(0, good_ref), good);  // reading every card back must not throw
  EXPECT_EQ(cardOf(0, bad_ref), std::nullopt) << "the malformed card was dropped";

  EXPECT_TRUE(p1.error.ok());
  EXPECT_EQ(p1.ticket, 8u);
  EXPECT_FALSE(p1.checkpoint.has_value()) << "an empty changelog partition: a new partition";
  EXPECT_EQ(p1.records, 0u);
}

// The local checkpoint says where the changelog is to be read from: what lies before it is on
// disk already (here: card 1's newer state, which the record at offset 0 must not replace).
// Later records are applied, an erasure included, and the last checkpoint record wins.
TEST_F(ChangelogRestorerTest, ResumesAfterTheLocalCheckpointAndAppliesWhatFollows) {
  sendCard(0, refOf(1), stateAt(1'000));                        // offset 0: older than the disk
  sendCheckpoint(0, state::PartitionCheckpoint{10, 1'000, 0});  // 1
  sendCard(0, refOf(2), stateAt(2'000));                        // 2
  sendTombstone(0, refOf(3));                                   // 3
  sendCheckpoint(0, state::PartitionCheckpoint{20, 2'000, 0});  // 4
  writeLocal(0, {{refOf(1), 1'500}, {refOf(3), 1'200}}, state::PartitionCheckpoint{10, 1'500, 2});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.records, 3u) << "offsets 2, 3 and 4 only";
  EXPECT_EQ(result.malformed, 0u);
  ASSERT_TRUE(result.checkpoint.has_value());
  EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{20, 2'000, 5}));
  EXPECT_EQ(cardOf(0, refOf(1)), stateAt(1'500)) << "the disk's state, not offset 0's";
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
  EXPECT_EQ(cardOf(0, refOf(3)), std::nullopt) << "erased by the tombstone";
  EXPECT_EQ((*db_).checkpoint(0), result.checkpoint) << "the checkpoint is written with them";
}

// Card changes after the last checkpoint record (a commit's records whose checkpoint record was
// compacted or not yet read): the local checkpoint stands, continuing at the changelog's end.
TEST_F(ChangelogRestorerTest, WithoutALaterCheckpointRecordTheLocalOneStandsAtTheEnd) {
  sendCheckpoint(0, state::PartitionCheckpoint{10, 1'000, 0});  // offset 0
  sendCard(0, refOf(2), stateAt(2'000));                        // 1
  writeLocal(0, {}, state::PartitionCheckpoint{10, 1'000, 1});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.records, 1u);
  ASSERT_TRUE(result.checkpoint.has_value());
  EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{10, 1'000, 2}));
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
}

// A disk whose checkpoint lies past the changelog's end (the topic was recreated) does not
// match it: the local cards are dropped and the whole changelog is restored.
TEST_F(ChangelogRestorerTest, ALocalCheckpointPastTheChangelogsEndRebuildsFromItsStart) {
  sendCardAndCheckpoint();
  writeLocal(0, {{refOf(9), 1'000}}, state::PartitionCheckpoint{500, 1'000, 50});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  expectRebuiltFromTheChangelog(waitForResult(*restorer));
}

// A disk whose checkpoint lies before the changelog's start (the records after it were removed
// by retention or compaction; here the mock cluster's log keeps 5 MB) does not match it either.
TEST_F(ChangelogRestorerTest, ALocalCheckpointBeforeTheChangelogsStartRebuildsFromItsStart) {
  const std::string filler(900'000, 'f');
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(producer_.send(topic_, 0, "filler", filler).ok());
  sendCard(0, refOf(2), stateAt(2'000));                       // offset 7
  sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});  // 8
  writeLocal(0, {{refOf(9), 1'000}}, state::PartitionCheckpoint{5, 1'000, 1});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_GT(result.changelog_start, 1) << "the log's start did not move: nothing was tested";
  EXPECT_EQ(result.records, static_cast<uint64_t>(9 - result.changelog_start));
  EXPECT_EQ(result.malformed, static_cast<uint64_t>(7 - result.changelog_start)) << "fillers";
  ASSERT_TRUE(result.checkpoint.has_value());
  EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{7, 2'000, 9}));
  EXPECT_EQ(cardOf(0, refOf(9)), std::nullopt) << "the local card did not survive";
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
}

// A local checkpoint at the changelog's end: nothing to read, the checkpoint stands.
TEST_F(ChangelogRestorerTest, ALocalCheckpointAtTheChangelogsEndIsDoneWithoutReading) {
  sendCardAndCheckpoint();
  writeLocal(0, {{refOf(2), 2'000}}, state::PartitionCheckpoint{7, 2'000, 2});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.records, 0u);
  EXPECT_EQ(result.changelog_start, 2);
  EXPECT_EQ(result.checkpoint, (state::PartitionCheckpoint{7, 2'000, 2}));
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
}

// A local checkpoint that does not decode: the partition is cleared and rebuilt from the
// changelog's start, and the restore goes on.
TEST_F(ChangelogRestorerTest, AnUnreadableLocalCheckpointRebuildsFromTheChangelog) {
  sendCardAndCheckpoint();
  writeLocal(0, {{refOf(9), 1'000}}, std::nullopt);
  db_.close();
  {
    // Partition 0's checkpoint key (state/key_layout.h: 'P' be32(partition)), written past
    // StateDb as a disk fault would leave it.
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), db_.dir().string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(
        db->Put(rocksdb::WriteOptions(), std::string("P\0\0\0\0", 5), "not a checkpoint").ok());
  }
  db_.reopen();
  ASSERT_THROW((void)(*db_).checkpoint(0), detectors::CardStoreError);

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  expectRebuiltFromTheChangelog(waitForResult(*restorer));
}

// A checkpoint record of the right form whose values no owner writes (a foreign or broken
// producer on the changelog): stream time INT64_MAX would late-drop every later record for good,
// INT64_MIN overflow the detector, next offset -1 or -2 (librdkafka's logical end and
// beginning) skip the backlog or replay the partition. It is counted, logged and not adopted;
// the checkpoint read before it (here: a good one) no longer stands either, since the cards
// after it belong to commits it does not describe: the partition ends with no checkpoint, as
// one that never had any (its task starts at the group's committed offset). Its cards are
// restored all the same.
TEST_F(ChangelogRestorerTest, ACheckpointRecordOutOfBoundsIsNotAdopted) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::array<state::PartitionCheckpoint, 3> bad = {
      {{8, kMax, 0}, {-1, 3'000, 0}, {-2, kMin, 0}}};
  for (int32_t p = 0; p < 3; ++p) {
    sendCard(p, refOf(1), stateAt(1'000));                       // offset 0
    sendCheckpoint(p, state::PartitionCheckpoint{7, 2'000, 0});  // 1
    sendCard(p, refOf(2), stateAt(3'000));                       // 2
    sendCheckpoint(p, bad.at(static_cast<size_t>(p)));           // 3
  }
  auto restorer = started();
  restorer->enqueue({{0, 1}, {1, 2}, {2, 3}});
  const auto results = waitForResults(*restorer, 3);
  ASSERT_EQ(results.size(), 3u) << "restores did not complete within 30 s";
  for (const RestoreResult& result : results) {
    SCOPED_TRACE("partition " + std::to_string(result.partition));
    EXPECT_TRUE(result.error.ok()) << result.error.message();
    EXPECT_EQ(result.records, 4u);
    EXPECT_EQ(result.malformed, 1u) << "the rejected checkpoint is counted";
    EXPECT_EQ(result.checkpoint, std::nullopt)
        << "adopted: next offset " << result.checkpoint->next_offset << ", stream time "
        << result.checkpoint->stream_time.value_or(-1);
    EXPECT_EQ(result.changelog_next, 4);
    EXPECT_EQ(cardOf(result.partition, refOf(1)), stateAt(1'000));
    EXPECT_EQ(cardOf(result.partition, refOf(2)), stateAt(3'000));
  }
}

// A good checkpoint record after a rejected one is the partition's checkpoint again.
TEST_F(ChangelogRestorerTest, AGoodCheckpointRecordAfterARejectedOneIsAdopted) {
  sendCheckpoint(0, state::PartitionCheckpoint{8, std::numeric_limits<int64_t>::max(), 0});
  sendCard(0, refOf(2), stateAt(3'000));
  sendCheckpoint(0, state::PartitionCheckpoint{9, 3'000, 0});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.malformed, 1u);
  EXPECT_EQ(result.checkpoint, (state::PartitionCheckpoint{9, 3'000, 3}));
}

// A local checkpoint whose values are out of bounds is refused like one that does not decode
// (counted too): the partition is rebuilt from the changelog's start.
TEST_F(ChangelogRestorerTest, ALocalCheckpointOutOfBoundsRebuildsFromTheChangelog) {
  sendCardAndCheckpoint();
  writeLocal(0, {{refOf(9), 1'000}}, state::PartitionCheckpoint{-2, 1'000, 1});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  expectRebuiltFromTheChangelog(result);
  EXPECT_EQ(result.malformed, 1u) << "the rejected local checkpoint is counted";
}

// What the task manager makes of a restore whose last checkpoint record was rejected: a
// partition without a checkpoint, consumed from the group's committed offset (FakeInput's
// start offset) with no stream time yet, its cards restored; the record counted once.
TEST_F(ChangelogRestorerTest, ATaskWhoseCheckpointRecordWasRejectedStartsAtTheCommittedOffset) {
  sendCard(0, refOf(1), stateAt(1'000));
  sendCheckpoint(0, state::PartitionCheckpoint{7, std::numeric_limits<int64_t>::max(), 0});

  auto restorer = started();
  testing::TaskHarness harness;
  testing::FakeInput input;
  input.start_offset = 1'234;
  TaskManager tasks(harness.context, db_, input, *restorer);
  tasks.assign({0});
  std::vector<int32_t> activated;
  const auto deadline = testing::Clock::now() + std::chrono::seconds(30);
  while (activated.empty() && testing::Clock::now() < deadline) {
    activated = tasks.activateRestored();
    if (activated.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(activated, std::vector<int32_t>{0}) << "not activated within 30 s";
  EXPECT_EQ(tasks.task(0)->nextOffset(), 1'234);
  EXPECT_EQ(input.start_offset_queries, 1) << "asked where the group stands";
  const TaskStatus status = tasks.task(0)->status(0);
  EXPECT_EQ(status.stream_time_ms, std::nullopt);
  EXPECT_EQ(status.cards, 1u);
  EXPECT_EQ(tasks.takeMalformedChangelogRecords(), 1u);
}

// The disk refuses the restored state (here: its restore folder is gone, so no file can be
// written for ingestion): the restore is reported failed, with no checkpoint to consume from.
TEST_F(ChangelogRestorerTest, ARestoreTheDiskCannotTakeIsReportedFailedWithoutACheckpoint) {
  sendCardAndCheckpoint();
  std::filesystem::remove_all(db_.dir() / "restore");

  auto restorer = started();
  restorer->enqueue({{0, 4}});
  const RestoreResult result = waitForResult(*restorer);
  ASSERT_FALSE(result.error.ok());
  EXPECT_NE(result.error.message().find("restore of partition 0"), std::string::npos)
      << result.error.message();
  EXPECT_EQ(result.ticket, 4u);
  EXPECT_FALSE(result.checkpoint.has_value());
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "no checkpoint without its cards";
}

// The same while the changelog is read: restores together buffer at most --restore-buffer-mb
// (here 1 MiB) before they write a file, and that write fails: the restore ends there.
TEST_F(ChangelogRestorerTest, AFileTheDiskCannotTakeMidReadEndsTheRestoreFailed) {
  TempStateDb small_buffer(/*card_cache_mb=*/16, /*restore_buffer_mb=*/1);
  constexpr int kCards = 40;  // about 2.8 MB
  for (int n = 1; n <= kCards; ++n) sendCard(0, refOf(static_cast<uint8_t>(n)), largeStateAt(n));
  sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});
  std::filesystem::remove_all(small_buffer.dir() / "restore");

  ChangelogRestorer restorer(properties(), topic_, *small_buffer);
  ASSERT_TRUE(restorer.start().ok());
  restorer.enqueue({{0, 4}});
  const RestoreResult result = waitForResult(restorer);
  ASSERT_FALSE(result.error.ok());
  EXPECT_NE(result.error.message().find("restore of partition 0"), std::string::npos)
      << result.error.message();
  EXPECT_LT(result.records, static_cast<uint64_t>(kCards)) << "it read on past the failure";
  EXPECT_FALSE(result.checkpoint.has_value());
  restorer.stop();
  EXPECT_FALSE((*small_buffer).checkpoint(0).has_value());
}

// A fetch the cluster refuses reaches the restore as a consumer error: it fails (and is retried
// by the task manager) instead of waiting for an end it will not reach.
TEST_F(ChangelogRestorerTest, AFetchTheClusterRefusesFailsTheRestore) {
  sendCardAndCheckpoint();
  cluster_.failNext(kApiFetch, 1, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);

  auto restorer = started();
  restorer->enqueue({{0, 3}});
  const RestoreResult result = waitForResult(*restorer);
  ASSERT_FALSE(result.error.ok()) << "restored " << result.records << " records";
  EXPECT_NE(result.error.message().find("restore of partition 0"), std::string::npos)
      << result.error.message();
  EXPECT_EQ(result.ticket, 3u);
  EXPECT_FALSE(result.checkpoint.has_value());
}

// The changelog's offsets cannot be had: the restore fails (and is retried by the task
// manager), it never passes for an empty partition, which would start the task from nothing.
TEST_F(ChangelogRestorerTest, ChangelogOffsetsTheClusterRefusesFailTheRestore) {
  sendCard(0, refOf(2), stateAt(2'000));
  sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});
  cluster_.failNext(kApiListOffsets, 4, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_FALSE(result.error.ok()) << "restored " << result.records << " records, checkpoint "
                                  << (result.checkpoint ? "set" : "none");
  EXPECT_FALSE(result.checkpoint.has_value());
  EXPECT_NE(result.error.message().find("changelog offsets"), std::string::npos)
      << result.error.message();
}

// A broker went and its partitions are led elsewhere: both clients of the restorer still hold
// the old leader from their last restore, and librdkafka does not learn the new one from the
// refusal ("Not leader for partition") by itself. The next restore asks the new leader.
class ChangelogRestorerLeaderTest : public ChangelogRestorerTest {
 protected:
  ChangelogRestorerLeaderTest() : ChangelogRestorerTest(3) {}
};

TEST_F(ChangelogRestorerLeaderTest, ARestoreAfterTheLeaderMovedAsksTheNewLeader) {
  sendCardAndCheckpoint();
  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult first = waitForResult(*restorer);
  ASSERT_TRUE(first.error.ok()) << first.error.message();
  ASSERT_EQ(first.records, 2u);

  uint64_t ticket = 1;
  for (const int32_t leader : {2, 3, 1}) {
    SCOPED_TRACE("led by broker " + std::to_string(leader));
    cluster_.moveLeader(topic_, 0, leader);
    const auto card = refOf(static_cast<uint8_t>(10 + leader));
    sendCard(0, card, stateAt(3'000 + leader));
    restorer->enqueue({{0, ++ticket}});
    const RestoreResult moved = waitForResult(*restorer);
    EXPECT_TRUE(moved.error.ok()) << moved.error.message();
    EXPECT_EQ(moved.ticket, ticket);
    EXPECT_EQ(cardOf(0, card), stateAt(3'000 + leader));
  }
}

}  // namespace
}  // namespace fraud::service
