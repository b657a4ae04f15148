// The live store's commit side over a storage in memory: what a commit's result does down the
// layers, and what becomes of its last write when the store is closed or dropped.
#include "state/live_card_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "detectors/base/broken_invariant.h"
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

class LiveCardStoreTest : public ::testing::Test {
 protected:
  LiveCardStoreTest() {
    budget_.limit = int64_t{16} << 20;
    auto storage = std::make_unique<MemoryCardSource>();
    storage_ = storage.get();
    store_ = std::make_unique<LiveCardStore>(std::move(storage), budget_, 0);
  }

  // Card n changed and committed with checkpoint {n, n, n}, not yet handed off.
  void commitCard(uint8_t n) {
    store_->modify(refOf(n)) =
        CardState{{{n, Country::of('D', 'E'), detectors::TxId("tx")}}, std::nullopt};
    (void)store_->takeCommitChanges();
    store_->commitSucceeded(PartitionCheckpoint{n, n, n});
  }

  CacheBudget budget_;
  MemoryCardSource* storage_ = nullptr;  // owned by store_
  std::unique_ptr<LiveCardStore> store_;
};

TEST_F(LiveCardStoreTest, CloseWritesTheCommittedStateAndDropsTheStaged) {
  commitCard(1);
  store_->modify(refOf(2)) =
      CardState{{{2, Country::of('F', 'R'), detectors::TxId("tx")}}, std::nullopt};
  (void)store_->takeCommitChanges();  // staged, never committed
  ASSERT_TRUE(store_->close().ok());
  EXPECT_EQ(storage_->checkpoint, (PartitionCheckpoint{1, 1, 1}));
  EXPECT_NE(storage_->cards.find(refOf(1)), nullptr);
  EXPECT_EQ(storage_->cards.find(refOf(2)), nullptr) << "uncommitted: never on disk";
}

TEST_F(LiveCardStoreTest, CloseReportsAFinalWriteTheStorageRefused) {
  commitCard(1);
  storage_->fail_writes = "injected: no space left on device";
  const base::Status closed = store_->close();
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.code(), base::StatusCode::kIoError);
  EXPECT_THAT(closed.message(), ::testing::HasSubstr("no space left"));
  const uint64_t unchecked = base::brokenInvariantCount(base::Invariant::kCardStoreUnclosed);
  store_.reset();
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kCardStoreUnclosed), unchecked)
      << "closed already: its failure was reported to the caller, not counted again";
}

TEST_F(LiveCardStoreTest, ADroppedStoreWhoseFinalWriteFailsCountsIt) {
  commitCard(1);
  storage_->fail_writes = "injected: no space left on device";
  const uint64_t unchecked = base::brokenInvariantCount(base::Invariant::kCardStoreUnclosed);
  store_.reset();
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kCardStoreUnclosed), unchecked + 1);
}

TEST_F(LiveCardStoreTest, ADroppedStoreWhoseFinalWriteLandsCountsNothing) {
  commitCard(1);
  const uint64_t unchecked = base::brokenInvariantCount(base::Invariant::kCardStoreUnclosed);
  store_.reset();
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kCardStoreUnclosed), unchecked);
}

TEST_F(LiveCardStoreTest, AHandOffReportsAnEarlierBackgroundWriteThatFailed) {
  commitCard(1);
  EXPECT_TRUE(store_->handOff().ok());
  EXPECT_EQ(storage_->batches_written, 1u);
  storage_->fail_writes = "injected: disk full";
  commitCard(2);
  const base::Status handed = store_->handOff();
  ASSERT_FALSE(handed.ok());
  EXPECT_THAT(handed.message(), ::testing::HasSubstr("disk full"));
  EXPECT_FALSE(store_->writeCommitted().ok());
}

}  // namespace
}  // namespace fraud::state
