// ChangelogRestorer against librdkafka's mock cluster and real RocksDB: how restores are run and
// reported: start()'s errors, tickets, rounds, cancellation, stop(), progress, and the standby
// role beside the active one. What a restore reads and applies: changelog_restorer_test.cc.
// Branches no test reaches without a fault-injection seam: a RocksDB write refused while a
// partition is cleared, the end-offset client failing where the consumer did not,
// rd_kafka_assign() failing, and an exception out of a round.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "tests/component/service/changelog_restorer_fixture.h"

namespace fraud::service {
namespace {

using testing::ChangelogRestorerTest;
using testing::refOf;
using testing::stateAt;
using Clock = std::chrono::steady_clock;

TEST_F(ChangelogRestorerTest, ARefusedConsumerSettingIsReportedByStart) {
  auto settings = properties();
  settings["no.such.setting"] = "1";
  ChangelogRestorer restorer(settings, topic_, *db_);
  const auto started = restorer.start();
  ASSERT_FALSE(started.ok());
  const std::string& error = started.message();
  EXPECT_EQ(error.rfind("restore consumer configuration: ", 0), 0u) << error;
  EXPECT_NE(error.find("no.such.setting"), std::string::npos) << error;
}

TEST_F(ChangelogRestorerTest, AConsumerLibrdkafkaCannotMakeIsReportedByStart) {
  auto settings = properties();
  settings["security.protocol"] = "ssl";
  // Accepted as a setting; rd_kafka_new() fails to load it.
  settings["ssl.ca.location"] = "/nonexistent/ca.pem";
  ChangelogRestorer restorer(settings, topic_, *db_);
  const auto started = restorer.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.message().rfind("restore consumer: ", 0), 0u) << started.message();
}

// A partition queued twice before its restore began is restored once, under the newer ticket;
// its progress is 0 while queued and gone once it is reported.
TEST_F(ChangelogRestorerTest, QueuedTwiceItIsRestoredOnceUnderTheNewerTicket) {
  sendCard(0, refOf(2), stateAt(2'000));
  ChangelogRestorer restorer(properties(), topic_, *db_);
  restorer.enqueue({{0, 1}, {0, 2}});
  EXPECT_EQ(restorer.progress(0), 0.0);
  EXPECT_EQ(restorer.progress(1), std::nullopt) << "not queued";
  ASSERT_TRUE(restorer.start().ok());
  const RestoreResult result = waitForResult(restorer);
  EXPECT_EQ(result.partition, 0);
  EXPECT_EQ(result.ticket, 2u);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.records, 1u);
  EXPECT_EQ(restorer.progress(0), std::nullopt);
  restorer.enqueue({{1, 3}});  // one more round: the loop took both tickets in one
  const RestoreResult next = waitForResult(restorer);
  EXPECT_EQ(next.partition, 1);
  EXPECT_TRUE(restorer.takeCompleted().empty()) << "partition 0 was reported once";
  restorer.stop();
}

// An active restore hands over the partition's store with its card cache warmed on the
// restorer's thread (the ingest thread only installs it); a standby's catch-up hands over none.
TEST_F(ChangelogRestorerTest, AnActiveRestoreHandsOverTheWarmedStoreAStandbyNone) {
  sendCard(0, refOf(1), stateAt(1'000));
  sendCard(0, refOf(2), stateAt(2'000));
  ChangelogRestorer restorer(properties(), topic_, *db_);
  ASSERT_TRUE(restorer.start().ok());
  restorer.enqueue({{0, 1}});
  RestoreResult result = waitForResult(restorer);
  ASSERT_TRUE(result.error.ok()) << result.error.message();
  ASSERT_NE(result.store, nullptr);
  EXPECT_TRUE(result.store->complete()) << "warmed: every card in memory";
  EXPECT_EQ(result.store->cardCount(), 2u);
  ASSERT_NE(result.store->find(refOf(2)), nullptr);
  EXPECT_EQ(*result.store->find(refOf(2)), stateAt(2'000));
  restorer.stop();

  PartitionLeases leases;
  ChangelogRestorer standby(properties(), topic_, *db_,
                            {ChangelogRestorer::Role::kStandby, &leases});
  ASSERT_TRUE(standby.start().ok());
  standby.enqueue({{0, 2}});
  const RestoreResult copy = waitForResult(standby);
  EXPECT_TRUE(copy.error.ok());
  EXPECT_EQ(copy.store, nullptr);
  standby.stop();
}

// A partition cancelled while still queued is dropped from the queue: never restored nor
// reported, while the others queued with it are.
TEST_F(ChangelogRestorerTest, APartitionCancelledWhileQueuedIsNeverRestored) {
  sendCard(0, refOf(1), stateAt(1'000));
  ChangelogRestorer restorer(properties(), topic_, *db_);
  restorer.enqueue({{0, 1}, {1, 2}});
  restorer.cancel(0);
  EXPECT_EQ(restorer.progress(0), std::nullopt);
  EXPECT_EQ(restorer.progress(1), 0.0);
  ASSERT_TRUE(restorer.start().ok());
  const RestoreResult result = waitForResult(restorer);
  EXPECT_EQ(result.partition, 1);
  EXPECT_EQ(result.ticket, 2u);
  restorer.stop();
  EXPECT_TRUE(restorer.takeCompleted().empty()) << "partition 0 was restored";
  EXPECT_EQ(cardOf(0, refOf(1)), std::nullopt);
}

// A restore cancelled while it runs (here: while a slow broker answers its offsets requests) is
// abandoned and never reported, whether it had records to read (partition 0) or ended at once
// (partition 1, empty); the partition queued again is, under its new ticket. (Queued again
// before the cancelled restore ended: the next test. The wait for a transaction left open is
// not testable here: the mock cluster hands uncommitted records to read_committed consumers;
// tests/integration/service/changelog_restore_test.cc has it on a broker.)
TEST_F(ChangelogRestorerTest, ACancelledRestoreIsNeverReportedAndOneQueuedAgainIs) {
  sendCard(0, refOf(1), stateAt(1'000));
  auto restorer = started();
  cluster_.setRoundTripMs(3'000);
  restorer->enqueue({{0, 1}, {1, 2}});
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the restore is asking for offsets
  restorer->cancel(0);
  restorer->cancel(1);
  EXPECT_EQ(restorer->progress(0), std::nullopt);
  cluster_.setRoundTripMs(0);
  // Restores run one round after another: partition 2's result comes after the cancelled round.
  restorer->enqueue({{2, 5}});
  const RestoreResult other = waitForResult(*restorer);
  EXPECT_EQ(other.partition, 2) << "partition " << other.partition << " ticket " << other.ticket
                                << " reported";
  restorer->enqueue({{0, 3}});
  const RestoreResult result = waitForResult(*restorer);
  EXPECT_EQ(result.partition, 0);
  EXPECT_EQ(result.ticket, 3u);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(cardOf(0, refOf(1)), stateAt(1'000));
  EXPECT_TRUE(restorer->takeCompleted().empty());
}

// A partition revoked and assigned again while its restore reads (the eager protocol: every
// partition revoked, then assigned): the running restore is abandoned at once, never reported,
// and a fresh one, under the new ticket, restores the partition from its start. (It used to
// read on to its end and be reported under the old ticket, the new one waiting behind it: the
// partition dark about twice as long.)
TEST_F(ChangelogRestorerTest, ARestoreCancelledAndQueuedAgainWhileItReadsStopsForTheNewOne) {
  for (uint8_t n = 1; n <= 20; ++n) sendCard(0, refOf(n), stateAt(n));
  auto settings = properties();
  settings["max.partition.fetch.bytes"] = "1";  // one record set a fetch
  ChangelogRestorer restorer(settings, topic_, *db_);
  ASSERT_TRUE(restorer.start().ok());
  cluster_.setRoundTripMs(100);
  restorer.enqueue({{0, 1}});
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (restorer.progress(0).value_or(0) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GT(restorer.progress(0).value_or(0), 0) << "the first restore never read";
  restorer.cancel(0);          // revoked
  restorer.enqueue({{0, 2}});  // and assigned again
  EXPECT_EQ(restorer.progress(0), 0.0) << "the new restore is queued";
  cluster_.setRoundTripMs(0);
  const RestoreResult result = waitForResult(restorer);
  EXPECT_EQ(result.ticket, 2u) << "the cancelled restore was reported";
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.changelog_start, 0);
  EXPECT_EQ(result.records, 20u) << "the new restore read the whole changelog";
  for (uint8_t n = 1; n <= 20; ++n) EXPECT_EQ(cardOf(0, refOf(n)), stateAt(n)) << int{n};
  restorer.stop();
  EXPECT_TRUE(restorer.takeCompleted().empty()) << "more than one restore was reported";
}

// A standby round whose partition is assigned here meanwhile (cancelled while the round asks
// for offsets) takes nothing: no lease, no write, no result.
TEST_F(ChangelogRestorerTest, AStandbyRoundCancelledBeforeItBeginsTakesNothing) {
  sendCard(0, refOf(1), stateAt(1'000));
  sendCheckpoint(0, state::PartitionCheckpoint{10, 1'000, 0});
  PartitionLeases leases;
  ChangelogRestorer standby(properties(), topic_, *db_,
                            {ChangelogRestorer::Role::kStandby, &leases});
  ASSERT_TRUE(standby.start().ok());
  cluster_.setRoundTripMs(1'500);
  standby.enqueue({{0, 1}});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // asking for offsets
  standby.cancel(0);
  cluster_.setRoundTripMs(0);
  standby.enqueue({{1, 2}});  // the next round, after the cancelled one
  const RestoreResult next = waitForResult(standby);
  EXPECT_EQ(next.partition, 1) << "partition " << next.partition << " reported";
  EXPECT_TRUE(standby.takeCompleted().empty());
  EXPECT_FALSE(leases.held(0));
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "the cancelled round wrote nothing";
  standby.stop();
}

// stop() while a restore runs ends it unreported, its lease released and nothing written: the
// partition is restored again after the next start.
TEST_F(ChangelogRestorerTest, AStopDuringARestoreEndsItUnreportedAndReleasesItsLease) {
  sendCard(0, refOf(1), stateAt(1'000));
  sendCheckpoint(0, state::PartitionCheckpoint{10, 1'000, 0});
  PartitionLeases leases;
  ChangelogRestorer active(properties(), topic_, *db_, {ChangelogRestorer::Role::kActive, &leases});
  ASSERT_TRUE(active.start().ok());
  cluster_.setRoundTripMs(1'000);
  active.enqueue({{0, 1}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // asking for offsets
  // stop() says so at once and returns once the round has seen it; the broker speeds up
  // meanwhile.
  std::thread speed_up([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cluster_.setRoundTripMs(0);
  });
  active.stop();
  speed_up.join();
  EXPECT_TRUE(active.takeCompleted().empty());
  EXPECT_FALSE(leases.held(0));
  EXPECT_FALSE((*db_).checkpoint(0).has_value()) << "the stopped restore wrote nothing";
}

// Progress is reported while a restore reads (here: one small fetch a slow round trip), between
// 0 when it is queued and its end, when it is reported and its progress gone.
TEST_F(ChangelogRestorerTest, ProgressIsReportedWhileARestoreReads) {
  for (uint8_t n = 1; n <= 20; ++n) sendCard(0, refOf(n), stateAt(n));
  auto settings = properties();
  settings["max.partition.fetch.bytes"] = "1";  // one record set a fetch
  ChangelogRestorer restorer(settings, topic_, *db_);
  ASSERT_TRUE(restorer.start().ok());
  cluster_.setRoundTripMs(100);
  restorer.enqueue({{0, 1}});
  std::optional<double> midway;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!midway && Clock::now() < deadline) {
    const auto progress = restorer.progress(0);
    if (progress && *progress > 0 && *progress < 1) midway = progress;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  cluster_.setRoundTripMs(0);
  EXPECT_TRUE(midway.has_value()) << "no progress between 0 and 1 was seen";
  const RestoreResult result = waitForResult(restorer);
  EXPECT_TRUE(result.error.ok()) << result.error.message();
  EXPECT_EQ(result.records, 20u);
  EXPECT_EQ(restorer.progress(0), std::nullopt);
  restorer.stop();
}

TEST_F(ChangelogRestorerTest, AStandbyCopyCatchesUpSoThatTheActiveRestoreReadsOnlyTheTail) {
  sendCard(0, refOf(1), stateAt(1'000));
  sendCard(0, refOf(2), stateAt(1'000));
  sendCheckpoint(0, state::PartitionCheckpoint{10, 1'000, 0});
  PartitionLeases leases;
  ChangelogRestorer standby(properties(), topic_, *db_,
                            {ChangelogRestorer::Role::kStandby, &leases});
  ChangelogRestorer active(properties(), topic_, *db_, {ChangelogRestorer::Role::kActive, &leases});
  ASSERT_TRUE(standby.start().ok());
  ASSERT_TRUE(active.start().ok());

  standby.enqueue({{0, 1}});
  const RestoreResult caught_up = waitForResult(standby);
  ASSERT_TRUE(caught_up.error.ok()) << caught_up.error.message();
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
  ASSERT_TRUE(restored.error.ok()) << restored.error.message();
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
    EXPECT_TRUE(gave_way.error.ok());
  }
  EXPECT_EQ((*db_).checkpoint(0)->changelog_next_offset, 5) << "the busy round wrote nothing";
  standby.stop();
  active.stop();
}

}  // namespace
}  // namespace fraud::service
