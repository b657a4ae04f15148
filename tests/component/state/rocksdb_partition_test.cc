// The RocksDB store of one partition alone (the bottom layer), on disk in a temporary directory.
#include "state/rocksdb_partition.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "state/checkpoint_writer.h"
#include "state/database.h"
#include "state/key_layout.h"
#include "tests/support/sync_points.h"

namespace fraud::state {
namespace {

namespace fs = std::filesystem;
using detectors::CardRef;

CardRef refOf(uint8_t n) {
  CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

class RocksDbPartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rocksdb-partition-test-" + std::to_string(std::random_device{}()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    StateDbOptions options;
    options.dir = dir_.string();
    auto db = Database::open(options);
    ASSERT_TRUE(db) << db.message();
    db_ = std::move(*db);
    writer_ = std::make_unique<CheckpointWriter>(*db_);
  }
  void TearDown() override {
    writer_.reset();
    db_.reset();
    fs::remove_all(dir_);
  }
  static std::unique_ptr<CommittedBatch> batch(
      uint64_t seq, const std::map<CardRef, std::optional<std::string>>& cards,
      int64_t next_offset) {
    auto batch = std::make_unique<CommittedBatch>();
    batch->seq = seq;
    for (const auto& [ref, value] : cards) {
      bool inserted = false;
      batch->changes.insert(ref, inserted) = value;
    }
    batch->checkpoint = PartitionCheckpoint{next_offset, std::nullopt, next_offset};
    return batch;
  }
  std::map<CardRef, std::string> scan(RocksDbPartition& partition) {
    std::map<CardRef, std::string> cards;
    partition.scan([&](const CardRef& ref, std::string_view value) { cards[ref] = value; });
    return cards;
  }

  fs::path dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<CheckpointWriter> writer_;
};

TEST_F(RocksDbPartitionTest, WritesCommittedBatchesInOrderWithTheirCheckpoint) {
  RocksDbPartition partition(*db_, *writer_, 3);
  partition.write(batch(1, {{refOf(1), "one"}, {refOf(2), "two"}}, 10));
  partition.write(batch(2, {{refOf(1), std::nullopt}, {refOf(3), "three"}}, 20));
  ASSERT_TRUE(partition.waitWritten(2).ok());
  EXPECT_EQ(partition.written(), 2u);
  EXPECT_EQ(scan(partition),
            (std::map<CardRef, std::string>{{refOf(2), "two"}, {refOf(3), "three"}}));
  EXPECT_EQ(partition.read(refOf(1)), std::nullopt);
  EXPECT_EQ(partition.read(refOf(3)), "three");
  EXPECT_EQ(PartitionCheckpoint::decode(*db_->get(checkpointKey(3))),
            (PartitionCheckpoint{20, std::nullopt, 20}));
  EXPECT_EQ(partition.scans(), 1u);
}

TEST_F(RocksDbPartitionTest, ReadsOnlyItsOwnPartition) {
  RocksDbPartition three(*db_, *writer_, 3);
  RocksDbPartition four(*db_, *writer_, 4);
  three.write(batch(1, {{refOf(1), "three"}}, 1));
  four.write(batch(1, {{refOf(2), "four"}}, 1));
  ASSERT_TRUE(three.waitWritten(1).ok());
  ASSERT_TRUE(four.waitWritten(1).ok());
  EXPECT_EQ(scan(three), (std::map<CardRef, std::string>{{refOf(1), "three"}}));
  EXPECT_EQ(four.read(refOf(1)), std::nullopt);
}

TEST_F(RocksDbPartitionTest, AfterAFailedWriteNoLaterBatchLands) {
  FRAUD_REQUIRE_TEST_HOOKS();
  RocksDbPartition partition(*db_, *writer_, 0);
  {
    const auto failing = fraud::testing::failCheckpointWrites("injected: disk full");
    partition.write(batch(1, {{refOf(1), "one"}}, 1));
    const base::Status first = partition.waitWritten(1);
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(first.code(), base::StatusCode::kIoError);
    EXPECT_NE(first.message().find("disk full"), std::string::npos) << first.message();
  }
  partition.write(batch(2, {{refOf(2), "two"}}, 2));
  EXPECT_EQ(partition.waitWritten(2), partition.writeStatus()) << "the first failure, still";
  ASSERT_FALSE(partition.writeStatus().ok());
  EXPECT_EQ(partition.writeStatus().code(), base::StatusCode::kIoError);
  EXPECT_NE(partition.writeStatus().message().find("disk full"), std::string::npos);
  EXPECT_EQ(partition.written(), 0u);
  EXPECT_TRUE(scan(partition).empty()) << "the disk would otherwise skip batch 1";
}

}  // namespace
}  // namespace fraud::state
