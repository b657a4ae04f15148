// The change-logging layer alone, over a sink of card states in memory.
#include "state/change_log.h"

#include <gtest/gtest.h>

#include "state/card_state_codec.h"
#include "tests/support/memory_card_source.h"

namespace fraud::state {
namespace {

using detectors::CardRef;
using detectors::CardState;
using detectors::Country;

CardRef refOf(uint8_t n) {
  CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

CardState stateAt(detectors::EventTime t) {
  return CardState{{{t, Country::of('D', 'E'), detectors::TxId("tx")}}, std::nullopt};
}

TEST(ChangeLog, StagesATransactionsChangesEncodedForTheChangelog) {
  MemoryCardSource sink;
  ChangeLog log(sink, 0);
  const CardState state = stateAt(5);
  (void)log.beginTransaction(1, 2);
  log.add(refOf(1), &state);
  log.add(refOf(2), nullptr);
  const auto& changes = log.transactionChanges();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(decodeCardState(*changes[0].encoded), state);
  EXPECT_FALSE(changes[1].encoded.has_value());
}

TEST(ChangeLog, CoalescesCommitsWhileTheLastHandOffIsInFlight) {
  MemoryCardSource sink;
  sink.hold = true;
  ChangeLog log(sink, 0);
  const CardState a1 = stateAt(1);
  const CardState a2 = stateAt(2);
  (void)log.beginTransaction(2, 2);
  log.add(refOf(1), &a1);
  log.add(refOf(2), &a1);
  log.commitSucceeded(PartitionCheckpoint{1, 1, 1});
  log.handOff();
  ASSERT_EQ(sink.in_flight.size(), 1u);
  (void)log.beginTransaction(2, 1);
  log.add(refOf(1), &a2);
  log.commitSucceeded(PartitionCheckpoint{2, 2, 2});
  log.handOff();
  (void)log.beginTransaction(1, 1);
  log.add(refOf(2), nullptr);
  log.commitSucceeded(PartitionCheckpoint{3, 2, 3});
  log.handOff();
  EXPECT_EQ(sink.in_flight.size(), 1u) << "held back behind the batch in flight";
  sink.release();
  log.handOff();
  ASSERT_EQ(sink.in_flight.size(), 1u);
  EXPECT_EQ(sink.in_flight.front()->changes.size(), 2u) << "one change per card";
  sink.release();
  EXPECT_EQ(sink.batches_written, 2u);
  EXPECT_EQ(*sink.cards.find(refOf(1)), a2);
  EXPECT_EQ(sink.cards.find(refOf(2)), nullptr);
  EXPECT_EQ(sink.checkpoint, (PartitionCheckpoint{3, 2, 3}));
  EXPECT_EQ(log.committedCardCount(), 1u);
}

// The failover review's finding at this layer: the newest commit must not stay behind.
TEST(ChangeLog, WriteCommittedWritesTheNewestCommitBehindOneInFlight) {
  MemoryCardSource sink;
  sink.hold = true;
  ChangeLog log(sink, 0);
  const CardState state = stateAt(1);
  (void)log.beginTransaction(1, 1);
  log.add(refOf(1), &state);
  log.commitSucceeded(PartitionCheckpoint{1, 1, 1});
  log.handOff();
  (void)log.beginTransaction(2, 1);
  log.add(refOf(2), &state);
  log.commitSucceeded(PartitionCheckpoint{2, 1, 2});
  ASSERT_TRUE(log.writeCommitted().ok());
  EXPECT_EQ(sink.checkpoint, (PartitionCheckpoint{2, 1, 2}));
  EXPECT_NE(sink.cards.find(refOf(2)), nullptr);
}

TEST(ChangeLog, AnAbortDropsTheStagedChangesAndKeepsTheCommittedCount) {
  MemoryCardSource sink;
  ChangeLog log(sink, 4);
  const CardState state = stateAt(1);
  (void)log.beginTransaction(5, 1);
  log.add(refOf(1), &state);
  log.abort();
  EXPECT_EQ(log.committedCardCount(), 4u);
  log.commitSucceeded(PartitionCheckpoint{7, 1, 7});  // a checkpoint alone
  ASSERT_TRUE(log.writeCommitted().ok());
  EXPECT_EQ(sink.cards.cardCount(), 0u);
  EXPECT_EQ(sink.checkpoint, (PartitionCheckpoint{7, 1, 7}));
}

TEST(ChangeLog, AWriteTheSinkRefusesIsAnIoErrorWithItsMessage) {
  MemoryCardSource sink;
  sink.fail_writes = "injected: disk full";
  ChangeLog log(sink, 0);
  const CardState state = stateAt(1);
  (void)log.beginTransaction(1, 1);
  log.add(refOf(1), &state);
  log.commitSucceeded(PartitionCheckpoint{1, 1, 1});
  const base::Status written = log.writeCommitted();
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.code(), base::StatusCode::kIoError);
  EXPECT_EQ(written.message(), "injected: disk full");
  EXPECT_EQ(sink.cards.find(refOf(1)), nullptr);
}

}  // namespace
}  // namespace fraud::state
