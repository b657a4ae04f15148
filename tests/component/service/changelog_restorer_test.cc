// ChangelogRestorer against librdkafka's mock cluster and real RocksDB, a case for each branch of
// service/changelog_restorer.cc the mock can reach: where a restore starts (the local
// checkpoint, the changelog's start when the disk does not match it or cannot be read), what it
// applies (cards, erasures, checkpoints; a hostile changelog is counted and survived, never the
// end of the process), how it is reported (tickets, progress, cancellation) and how it fails
// (settings, offsets, the disk). The wait for a transaction left open needs a broker:
// tests/integration/service/changelog_restore_test.cc.
#include "service/changelog_restorer.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "service/kafka/producer.h"
#include "state/card_state_codec.h"
#include "tests/support/mock_cluster.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service {
namespace {

using testing::MockCluster;
using testing::TempStateDb;
using Clock = std::chrono::steady_clock;

constexpr int16_t kApiListOffsets = 2;

detectors::CardRef refOf(uint8_t n) {
  detectors::CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

detectors::CardState stateAt(int64_t time) {
  detectors::CardState state;
  state.events.push_back(detectors::Event{time, detectors::Country::of('F', 'R'), "t"});
  return state;
}

class ChangelogRestorerTest : public ::testing::Test {
 protected:
  ChangelogRestorerTest() {
    cluster_.createTopic(topic_, 2);
    EXPECT_TRUE(producer_.ok()) << producer_.error();
  }

  [[nodiscard]] kafka::KafkaProperties properties() const {
    return {{"bootstrap.servers", cluster_.bootstrap()}, {"log_level", "2"}};
  }
  // A started restorer over db_ (stopped by its destructor, before db_ and the cluster go).
  std::unique_ptr<ChangelogRestorer> started() {
    auto restorer = std::make_unique<ChangelogRestorer>(properties(), topic_, *db_);
    EXPECT_EQ(restorer->start(), std::nullopt);
    return restorer;
  }

  void sendCard(int32_t partition, const detectors::CardRef& ref,
                const detectors::CardState& state) {
    ASSERT_TRUE(producer_.send(topic_, partition, ref.raw(), state::encodeCardState(state)))
        << producer_.error();
  }
  void sendCheckpoint(int32_t partition, const state::PartitionCheckpoint& checkpoint) {
    ASSERT_TRUE(producer_.send(topic_, partition, kChangelogCheckpointKey, checkpoint.encode()))
        << producer_.error();
  }
  // A card's erasure: a record with a null value.
  void sendTombstone(int32_t partition, const detectors::CardRef& ref) {
    std::string error;
    auto conf = kafka::makeKafkaConf(properties(), error);
    ASSERT_TRUE(conf) << error;
    auto producer = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(conf), error);
    ASSERT_TRUE(producer) << error;
    const std::string key(ref.raw());
    ASSERT_EQ(kafka::produceWaiting(producer.get(), {topic_.c_str(), partition, key, std::nullopt},
                                    std::chrono::seconds(10)),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    ASSERT_EQ(rd_kafka_flush(producer.get(), 10'000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  // The partition as a previous restore or owner left it on disk.
  void writeLocal(int32_t partition,
                  const std::vector<std::pair<detectors::CardRef, int64_t>>& cards,
                  const std::optional<state::PartitionCheckpoint>& checkpoint) {
    std::vector<state::CardChange> changes;
    changes.reserve(cards.size());
    for (const auto& [ref, time] : cards) {
      changes.push_back(state::CardChange{ref, state::encodeCardState(stateAt(time))});
    }
    ASSERT_EQ((*db_).writeRestored(partition, changes, checkpoint), std::nullopt);
  }

  // The next `count` results, waiting up to 30 s.
  static std::vector<RestoreResult> waitForResults(ChangelogRestorer& restorer, size_t count) {
    std::vector<RestoreResult> results;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (results.size() < count && Clock::now() < deadline) {
      for (auto& r : restorer.takeCompleted()) results.push_back(std::move(r));
      if (results.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return results;
  }
  // The one result of a restore of one partition.
  static RestoreResult waitForResult(ChangelogRestorer& restorer) {
    auto results = waitForResults(restorer, 1);
    EXPECT_EQ(results.size(), 1u) << "no restore completed within 30 s";
    return results.empty() ? RestoreResult{} : std::move(results[0]);
  }
  // The card's state as a task would find it, or nothing.
  std::optional<detectors::CardState> cardOf(int32_t partition, const detectors::CardRef& ref) {
    auto store = (*db_).cardStore(partition);
    const detectors::CardState* state = store->find(ref);
    return state == nullptr ? std::nullopt : std::optional<detectors::CardState>(*state);
  }

  const std::string topic_ = "changelog";
  MockCluster cluster_;
  kafka::SyncProducer producer_{properties()};
  TempStateDb db_;
};

TEST_F(ChangelogRestorerTest, MalformedChangelogRecordsAreCountedAndSurvived) {
  const detectors::CardState good = stateAt(1'000);
  const auto good_ref = refOf(1);
  const auto bad_ref = refOf(2);
  sendCard(0, good_ref, good);
  ASSERT_TRUE(producer_.send(topic_, 0, bad_ref.raw(), "\x07 no card state"));
  ASSERT_TRUE(producer_.send(topic_, 0, "who-wrote-this", "{}"));
  ASSERT_TRUE(producer_.send(topic_, 0, kChangelogCheckpointKey, "garbage"));
  sendCheckpoint(0, state::PartitionCheckpoint{42, 1'000, 0});

  auto restorer = started();
  restorer->enqueue({{0, 7}, {1, 8}});  // partition 1's changelog is empty
  const auto results = waitForResults(*restorer, 2);
  ASSERT_EQ(results.size(), 2u) << "restores did not complete within 30 s";
  const auto& p0 = results[0].partition == 0 ? results[0] : results[1];
  const auto& p1 = results[0].partition == 0 ? results[1] : results[0];

  EXPECT_FALSE(p0.error.has_value()) << *p0.error;
  EXPECT_EQ(p0.ticket, 7u);
  EXPECT_EQ(p0.records, 5u);
  EXPECT_EQ(p0.malformed, 3u) << "the bad card, the unknown key, the bad checkpoint";
  ASSERT_TRUE(p0.checkpoint.has_value());
  EXPECT_EQ(p0.checkpoint->next_offset, 42);
  EXPECT_EQ(p0.checkpoint->changelog_next_offset, 5);
  EXPECT_EQ(cardOf(0, good_ref), good);  // reading every card back must not throw
  EXPECT_EQ(cardOf(0, bad_ref), std::nullopt) << "the malformed card was dropped";

  EXPECT_FALSE(p1.error.has_value());
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
  EXPECT_FALSE(result.error.has_value()) << *result.error;
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
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(result.records, 1u);
  ASSERT_TRUE(result.checkpoint.has_value());
  EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{10, 1'000, 2}));
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
}

// A disk whose checkpoint lies past the changelog's end (the topic was recreated) does not
// match it: the local cards are dropped and the whole changelog is restored.
TEST_F(ChangelogRestorerTest, ALocalCheckpointPastTheChangelogsEndRebuildsFromItsStart) {
  sendCard(0, refOf(2), stateAt(2'000));
  sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});
  writeLocal(0, {{refOf(9), 1'000}}, state::PartitionCheckpoint{500, 1'000, 50});

  auto restorer = started();
  restorer->enqueue({{0, 1}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(result.records, 2u);
  ASSERT_TRUE(result.checkpoint.has_value());
  EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{7, 2'000, 2}));
  EXPECT_EQ(cardOf(0, refOf(9)), std::nullopt) << "the local card did not survive";
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
}

// A local checkpoint that does not decode: the partition is cleared and rebuilt from the
// changelog's start, and the restore goes on.
TEST_F(ChangelogRestorerTest, AnUnreadableLocalCheckpointRebuildsFromTheChangelog) {
  sendCard(0, refOf(2), stateAt(2'000));
  sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});
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
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(result.records, 2u);
  ASSERT_TRUE(result.checkpoint.has_value());
  EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{7, 2'000, 2}));
  EXPECT_EQ(cardOf(0, refOf(9)), std::nullopt) << "the partition was cleared first";
  EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
}

// The disk refuses the restored state (here: its restore folder is gone, so no file can be
// written for ingestion): the restore is reported failed, with no checkpoint to consume from.
TEST_F(ChangelogRestorerTest, ARestoreTheDiskCannotTakeIsReportedFailedWithoutACheckpoint) {
  sendCard(0, refOf(2), stateAt(2'000));
  sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});
  std::filesystem::remove_all(db_.dir() / "restore");

  auto restorer = started();
  restorer->enqueue({{0, 4}});
  const RestoreResult result = waitForResult(*restorer);
  ASSERT_TRUE(result.error.has_value());
  EXPECT_NE(result.error->find("restore of partition 0"), std::string::npos) << *result.error;
  EXPECT_EQ(result.ticket, 4u);
  EXPECT_FALSE(result.checkpoint.has_value());
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "no checkpoint without its cards";
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
  EXPECT_TRUE(result.error.has_value()) << "restored " << result.records << " records, checkpoint "
                                        << (result.checkpoint ? "set" : "none");
  EXPECT_FALSE(result.checkpoint.has_value());
  EXPECT_NE(result.error.value_or("").find("changelog offsets"), std::string::npos)
      << result.error.value_or("");
}

TEST_F(ChangelogRestorerTest, ARefusedConsumerSettingIsReportedByStart) {
  auto settings = properties();
  settings["no.such.setting"] = "1";
  ChangelogRestorer restorer(settings, topic_, *db_);
  const auto error = restorer.start();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->rfind("restore consumer configuration: ", 0), 0u) << *error;
  EXPECT_NE(error->find("no.such.setting"), std::string::npos) << *error;
}

// A partition queued twice before its restore began is restored once, under the newer ticket;
// its progress is 0 while queued and gone once it is reported.
TEST_F(ChangelogRestorerTest, QueuedTwiceItIsRestoredOnceUnderTheNewerTicket) {
  sendCard(0, refOf(2), stateAt(2'000));
  ChangelogRestorer restorer(properties(), topic_, *db_);
  restorer.enqueue({{0, 1}, {0, 2}});
  EXPECT_EQ(restorer.progress(0), 0.0);
  EXPECT_EQ(restorer.progress(1), std::nullopt) << "not queued";
  ASSERT_EQ(restorer.start(), std::nullopt);
  const RestoreResult result = waitForResult(restorer);
  EXPECT_EQ(result.partition, 0);
  EXPECT_EQ(result.ticket, 2u);
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(result.records, 1u);
  EXPECT_EQ(restorer.progress(0), std::nullopt);
  restorer.enqueue({{1, 3}});  // one more round: the loop took both tickets in one
  const RestoreResult next = waitForResult(restorer);
  EXPECT_EQ(next.partition, 1);
  EXPECT_TRUE(restorer.takeCompleted().empty()) << "partition 0 was reported once";
  restorer.stop();
}

// A restore cancelled while it runs (here: while a slow broker answers its offsets requests) is
// abandoned and never reported; the partition queued again is, under its new ticket. (Queued
// again before the cancelled restore ended, the stale ticket may be reported too: RestoreQueue
// lets the task manager drop it. The wait for a transaction left open is not testable here:
// the mock cluster hands uncommitted records to read_committed consumers;
// tests/integration/service/changelog_restore_test.cc has it on a broker.)
TEST_F(ChangelogRestorerTest, ACancelledRestoreIsNeverReportedAndOneQueuedAgainIs) {
  sendCard(0, refOf(1), stateAt(1'000));
  auto restorer = started();
  cluster_.setRoundTripMs(3'000);
  restorer->enqueue({{0, 1}});
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the restore is asking for offsets
  restorer->cancel(0);
  EXPECT_EQ(restorer->progress(0), std::nullopt);
  cluster_.setRoundTripMs(0);
  // Restores run one round after another: partition 1's result comes after the cancelled round.
  restorer->enqueue({{1, 5}});
  const RestoreResult other = waitForResult(*restorer);
  EXPECT_EQ(other.partition, 1) << "ticket " << other.ticket << " reported";
  restorer->enqueue({{0, 2}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_EQ(result.partition, 0);
  EXPECT_EQ(result.ticket, 2u);
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(cardOf(0, refOf(1)), stateAt(1'000));
  EXPECT_TRUE(restorer->takeCompleted().empty());
}

TEST_F(ChangelogRestorerTest, AStandbyCopyCatchesUpSoThatTheActiveRestoreReadsOnlyTheTail) {
  sendCard(0, refOf(1), stateAt(1'000));
  sendCard(0, refOf(2), stateAt(1'000));
  sendCheckpoint(0, state::PartitionCheckpoint{10, 1'000, 0});
  PartitionLeases leases;
  ChangelogRestorer standby(properties(), topic_, *db_,
                            {ChangelogRestorer::Role::kStandby, &leases});
  ChangelogRestorer active(properties(), topic_, *db_, {ChangelogRestorer::Role::kActive, &leases});
  ASSERT_EQ(standby.start(), std::nullopt);
  ASSERT_EQ(active.start(), std::nullopt);

  standby.enqueue({{0, 1}});
  const RestoreResult caught_up = waitForResult(standby);
  ASSERT_FALSE(caught_up.error.has_value()) << *caught_up.error;
  EXPECT_FALSE(caught_up.busy);
  EXPECT_EQ(caught_up.records, 3u);
  EXPECT_EQ(caught_up.changelog_start, 0);
  EXPECT_EQ(caught_up.changelog_next, 3);
  const auto on_disk = (*db_).checkpoint(0);
  ASSERT_TRUE(on_disk.has_value()) << "the copy's checkpoint is on disk";
  EXPECT_EQ(on_disk->next_offset, 10);
  EXPECT_EQ(on_disk->changelog_next_offset, 3);

  // The owner goes on; then the partition moves here: the restore reads the tail alone.
  sendCard(0, refOf(3), stateAt(2'000));
  sendCheckpoint(0, state::PartitionCheckpoint{20, 2'000, 0});
  standby.cancel(0);
  active.enqueue({{0, 9}});
  const RestoreResult restored = waitForResult(active);
  ASSERT_FALSE(restored.error.has_value()) << *restored.error;
  EXPECT_EQ(restored.records, 2u) << "only what the copy lacked";
  ASSERT_TRUE(restored.checkpoint.has_value());
  EXPECT_EQ(restored.checkpoint->next_offset, 20);
  for (uint8_t n : {1, 2, 3}) EXPECT_TRUE(cardOf(0, refOf(n)).has_value()) << "card " << int{n};

  // While another restore holds the partition, a standby round gives way and writes nothing.
  {
    auto held = leases.acquire(0);
    sendCard(0, refOf(4), stateAt(3'000));
    standby.enqueue({{0, 2}});
    const RestoreResult gave_way = waitForResult(standby);
    EXPECT_TRUE(gave_way.busy);
    EXPECT_FALSE(gave_way.error.has_value());
  }
  EXPECT_EQ((*db_).checkpoint(0)->changelog_next_offset, 5) << "the busy round wrote nothing";
  standby.stop();
  active.stop();
}

}  // namespace
}  // namespace fraud::service
