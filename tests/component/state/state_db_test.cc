// StateDb: opening, format version, checkpoints, partitions.
#include "state/state_db.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "state/card_state_codec.h"
#include "tests/component/state/state_db_fixture.h"

namespace fraud::state {
namespace {

TEST_F(StateDbTest, RestoredChangesAndClearPartition) {
  std::vector<CardChange> changes = {
      {refOf(5), encodeCardState(CardState{{{10, Country::of('D', 'E'), "x"}}, std::nullopt})}};
  ASSERT_TRUE(db_->writeRestored(2, changes, PartitionCheckpoint{9, 10, 3}).ok());
  EXPECT_EQ(db_->cardStore(2)->cardCount(), 1u);
  EXPECT_EQ(db_->checkpoint(2), (PartitionCheckpoint{9, 10, 3}));
  ASSERT_TRUE(db_->clearPartition(2).ok());
  EXPECT_EQ(db_->cardStore(2)->cardCount(), 0u);
  EXPECT_EQ(db_->checkpoint(2), std::nullopt);
}

TEST_F(StateDbTest, RefusesStateOfAnotherFormatVersion) {
  db_.reset();
  rawPut(options_.dir, "F", "999");
  const auto opened = StateDb::open(options_);
  EXPECT_FALSE(opened);
  const std::string& error = opened.message();
  EXPECT_NE(error.find("format version 999"), std::string::npos) << error;
}

TEST_F(StateDbTest, RefusesADirectoryOfSomeoneElsesRocksDb) {
  db_.reset();
  const auto other = dir_ / "other";
  rawPut(other.string(), "unrelated", "data");
  options_.dir = other.string();
  const auto opened = StateDb::open(options_);
  EXPECT_FALSE(opened);
  const std::string& error = opened.message();
  EXPECT_NE(error.find("no format version"), std::string::npos) << error;
}

TEST_F(StateDbTest, AnUnreadableCheckpointThrowsCardStoreError) {
  db_.reset();
  rawPut(options_.dir, std::string("P\0\0\0\3", 5), "not a checkpoint");
  reopen();
  EXPECT_THROW((void)db_->checkpoint(3), detectors::CardStoreError);
}

// A checkpoint on disk whose values are out of bounds (state/partition_checkpoint.h) is refused
// like one that does not decode: a restore then rebuilds the partition from the changelog.
TEST_F(StateDbTest, ACheckpointOutOfBoundsOnDiskIsRefusedLikeAnUnreadableOne) {
  ASSERT_TRUE(
      db_->writeRestored(3, {}, PartitionCheckpoint{9, std::numeric_limits<int64_t>::max(), 3})
          .ok());
  EXPECT_THROW((void)db_->checkpoint(3), detectors::CardStoreError);
  ASSERT_TRUE(db_->writeRestored(4, {}, PartitionCheckpoint{-1, 10, 3}).ok());
  EXPECT_THROW((void)db_->checkpoint(4), detectors::CardStoreError);
}

// A state directory that is a plain file, or lies under one: RocksDB cannot open it, and the
// database that did not open is dropped without touching its handle (it used to be flushed:
// SIGSEGV after the message was written).
TEST_F(StateDbTest, AStateDirThatIsAPlainFileIsRefusedWithItsPathNamed) {
  db_.reset();
  const auto file = dir_ / "plain-file";
  std::ofstream(file) << "not a directory";
  for (const fs::path& path : {file, file / "under"}) {
    options_.dir = path.string();
    const auto opened = StateDb::open(options_);
    EXPECT_FALSE(opened) << path;
    const std::string& error = opened.message();
    EXPECT_NE(error.find("cannot open state in " + path.string()), std::string::npos) << error;
  }
}

// The same for a directory RocksDB refuses for another reason: one this process has open
// already (its LOCK is held).
TEST_F(StateDbTest, AStateDirOpenAlreadyIsRefusedAndTheOpenOneKeepsWorking) {
  const auto opened = StateDb::open(options_);
  EXPECT_FALSE(opened);
  const std::string& error = opened.message();
  EXPECT_NE(error.find("cannot open state in " + options_.dir), std::string::npos) << error;
  ASSERT_TRUE(db_->writeRestored(1, {}, PartitionCheckpoint{1, 2, 3}).ok());
  EXPECT_EQ(db_->checkpoint(1), (PartitionCheckpoint{1, 2, 3}));
}

// A state directory whose parents do not exist yet is created with them (RocksDB makes the
// last one only), as the service's configuration check lets it be.
TEST_F(StateDbTest, AStateDirIsCreatedWithItsParents) {
  db_.reset();
  options_.dir = (dir_ / "a" / "b" / "state").string();
  reopen();
  EXPECT_TRUE(fs::is_directory(options_.dir));
}

TEST(StateDbOptions, ValidateReportsEveryProblem) {
  StateDbOptions options;
  options.block_cache_mb = 1;
  options.write_buffer_mb = 0;
  options.card_cache_mb = 0;
  options.restore_buffer_mb = 0;
  // dir, block cache, write buffer, card cache, restore buffer
  EXPECT_EQ(options.validate().size(), 5u);
}

}  // namespace
}  // namespace fraud::state
