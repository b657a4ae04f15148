// PartitionRestore: restores written as sorted files that RocksDB ingests.
#include "state/partition_restore.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "state/card_state_codec.h"
#include "tests/component/state/state_db_fixture.h"

namespace fraud::state {
namespace {

TEST_F(StateDbTest, RestoreKeepsTheLastRecordOfEachCardAcrossFiles) {
  options_.restore_buffer_mb = 1;  // a file every MiB or so: many files, each overlapping
  reopen();
  auto restore = db_->beginRestore(4, /*from_scratch=*/true);
  std::map<CardRef, std::optional<CardState>> expected;
  std::mt19937 random(7);
  for (int i = 0; i < 60'000; ++i) {
    CardRef ref = refOf(0);
    const uint32_t card = random() % 3'000;
    std::memcpy(ref.bytes.data(), &card, sizeof(card));  // low bytes first: spread over buckets
    ref.bytes[31] = static_cast<uint8_t>(card);
    if (random() % 5 == 0) {
      ASSERT_TRUE(restore->erase(ref).ok());
      expected[ref] = std::nullopt;
    } else {
      const CardState state = stateAt(i, "tx-" + std::to_string(i));
      ASSERT_TRUE(restore->put(ref, encodeCardState(state)).ok());
      expected[ref] = state;
    }
  }
  ASSERT_TRUE(restore->finish(PartitionCheckpoint{60'000, 59'999, 60'000}).ok());
  EXPECT_GE(restore->filesWritten(), 3u);
  restore.reset();
  reopen();  // what was ingested and the checkpoint are on disk
  EXPECT_EQ(db_->checkpoint(4), (PartitionCheckpoint{60'000, 59'999, 60'000}));
  auto store = db_->cardStore(4);
  size_t live = 0;
  for (const auto& [ref, state] : expected) {
    const CardState* found = store->find(ref);
    if (state) {
      ++live;
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(*found, *state);
    } else {
      EXPECT_EQ(found, nullptr);
    }
  }
  EXPECT_EQ(store->cardCount(), live);
  EXPECT_TRUE(fs::is_empty(dir_ / "restore")) << "every file was moved into the database";
}

// Values of every size between small ones: those over a quarter of the buffer's 1 MiB chunks
// are kept apart, and each card still reads back what it was given.
TEST_F(StateDbTest, RestoreKeepsLargeValuesBesideSmallOnes) {
  auto restore = db_->beginRestore(6, /*from_scratch=*/true);
  std::map<CardRef, std::string> expected;
  for (int i = 0; i < 40; ++i) {
    CardRef ref = refOf(static_cast<uint8_t>(i + 1));
    CardState state;
    const int events = i % 4 == 0 ? 7'000 + i * 100 : 1 + i;  // about 400 KiB, or a few bytes
    for (int e = 0; e < events; ++e) {
      const std::string tx_id =
          "tx-" + std::to_string(i) + "-" + std::to_string(e) + std::string(40, 'x');
      state.events.push_back(
          detectors::Event{1'000 + e, detectors::Country::of('D', 'E'), detectors::TxId(tx_id)});
    }
    expected[ref] = encodeCardState(state);
    ASSERT_TRUE(restore->put(ref, expected[ref]).ok());
  }
  ASSERT_GT(expected[refOf(1)].size(), size_t{300} << 10) << "a value over a quarter of a chunk";
  ASSERT_TRUE(restore->finish(PartitionCheckpoint{40, 1'000, 40}).ok());
  restore.reset();
  auto store = db_->cardStore(6);
  for (const auto& [ref, encoded] : expected) {
    const CardState* found = store->find(ref);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(encodeCardState(*found), encoded);
  }
}

TEST_F(StateDbTest, RestoreFromScratchDropsLeftoversAndLeavesOtherPartitions) {
  // Cards without a checkpoint (a restore that a crash interrupted), and a neighbour.
  ASSERT_TRUE(
      db_->writeRestored(5, {{refOf(1), encodeCardState(stateAt(1, "a"))}}, std::nullopt).ok());
  ASSERT_TRUE(db_->writeRestored(6, {{refOf(1), encodeCardState(stateAt(2, "b"))}},
                                 PartitionCheckpoint{1, 2, 1})
                  .ok());
  auto restore = db_->beginRestore(5, /*from_scratch=*/true);
  ASSERT_TRUE(restore->put(refOf(2), encodeCardState(stateAt(3, "c"))).ok());
  ASSERT_TRUE(restore->finish(PartitionCheckpoint{7, 3, 1}).ok());
  auto five = db_->cardStore(5);
  EXPECT_EQ(five->find(refOf(1)), nullptr) << "left over, not in the changelog";
  ASSERT_NE(five->find(refOf(2)), nullptr);
  EXPECT_EQ(five->cardCount(), 1u);
  auto six = db_->cardStore(6);
  ASSERT_NE(six->find(refOf(1)), nullptr);
  EXPECT_EQ(*six->find(refOf(1)), stateAt(2, "b"));
  EXPECT_EQ(db_->checkpoint(6), (PartitionCheckpoint{1, 2, 1}));
}

TEST_F(StateDbTest, RestoreFromACheckpointUpdatesAndErasesOnTopOfLocalState) {
  ASSERT_TRUE(db_->writeRestored(3,
                                 {{refOf(1), encodeCardState(stateAt(1, "a"))},
                                  {refOf(2), encodeCardState(stateAt(1, "b"))},
                                  {refOf(3), encodeCardState(stateAt(1, "c"))}},
                                 PartitionCheckpoint{3, 1, 3})
                  .ok());
  auto restore = db_->beginRestore(3, /*from_scratch=*/false);
  ASSERT_TRUE(restore->erase(refOf(1)).ok());
  ASSERT_TRUE(restore->put(refOf(2), encodeCardState(stateAt(5, "d"))).ok());
  ASSERT_TRUE(restore->finish(PartitionCheckpoint{9, 5, 5}).ok());
  auto store = db_->cardStore(3);
  EXPECT_EQ(store->find(refOf(1)), nullptr) << "erased by the changelog";
  ASSERT_NE(store->find(refOf(2)), nullptr);
  EXPECT_EQ(*store->find(refOf(2)), stateAt(5, "d"));
  ASSERT_NE(store->find(refOf(3)), nullptr) << "untouched by the changelog: kept";
  EXPECT_EQ(store->cardCount(), 2u);
  EXPECT_EQ(db_->checkpoint(3), (PartitionCheckpoint{9, 5, 5}));
}

TEST_F(StateDbTest, RestoreOfNothingWritesOnlyTheCheckpoint) {
  auto restore = db_->beginRestore(8, /*from_scratch=*/true);
  ASSERT_TRUE(restore->erase(refOf(1)).ok());  // erasing in an empty partition: no file
  ASSERT_TRUE(restore->finish(PartitionCheckpoint{4, std::nullopt, 2}).ok());
  EXPECT_EQ(restore->filesWritten(), 0u);
  EXPECT_EQ(db_->checkpoint(8), (PartitionCheckpoint{4, std::nullopt, 2}));
  EXPECT_EQ(db_->cardStore(8)->cardCount(), 0u);
}

TEST_F(StateDbTest, ACrashAfterARestoreLeavesReadableStateAndNoCheckpoint) {
  // The death test's child runs this test again from the start in a new process (RocksDB's
  // background threads do not survive a fork): it finds the directory in the environment.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* inherited = std::getenv("FRAUD_STATE_DB_CRASH_DIR");
  const fs::path dir = inherited != nullptr ? fs::path(inherited) : dir_ / "crash";
  ::setenv("FRAUD_STATE_DB_CRASH_DIR", dir.c_str(), 1);
  StateDbOptions options = options_;
  options.dir = dir.string();
  // The child opens a fresh database, restores, and dies without closing it (no flush).
  EXPECT_EXIT(
      {
        db_.reset();
        fs::remove_all(dir_);  // the child's own fixture directory
        auto opened = StateDb::open(options);
        if (!opened) std::_Exit(2);
        const auto db = std::move(*opened);
        auto restore = db->beginRestore(1, /*from_scratch=*/true);
        if (!restore->put(refOf(1), encodeCardState(stateAt(1, "a"))).ok()) std::_Exit(3);
        if (!restore->finish(PartitionCheckpoint{5, 1, 2}).ok()) std::_Exit(4);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  ::unsetenv("FRAUD_STATE_DB_CRASH_DIR");
  auto opened = StateDb::open(options);  // the format version was flushed at creation
  ASSERT_TRUE(opened) << opened.message();
  const auto db = std::move(*opened);
  EXPECT_EQ(db->checkpoint(1), std::nullopt) << "the checkpoint lived in the memtable only";
  // The next restore starts from scratch and drops what the interrupted one ingested.
  auto restore = db->beginRestore(1, /*from_scratch=*/true);
  ASSERT_TRUE(restore->put(refOf(2), encodeCardState(stateAt(2, "b"))).ok());
  ASSERT_TRUE(restore->finish(PartitionCheckpoint{6, 2, 3}).ok());
  auto store = db->cardStore(1);
  EXPECT_EQ(store->find(refOf(1)), nullptr);
  EXPECT_NE(store->find(refOf(2)), nullptr);
}

TEST_F(StateDbTest, FilesOfAnInterruptedRestoreAreDroppedAtOpen) {
  db_.reset();
  { std::ofstream(dir_ / "restore" / "partition-1-0.sst") << "half a file"; }
  reopen();
  EXPECT_TRUE(fs::is_empty(dir_ / "restore"));
}

}  // namespace
}  // namespace fraud::state
