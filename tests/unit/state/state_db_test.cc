// RocksDB on disk in a temporary directory.
#include "state/state_db.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <random>

#include "state/card_state_codec.h"

namespace fraud::state {
namespace {

namespace fs = std::filesystem;
using detectors::CardRef;
using detectors::CardState;
using detectors::Country;

CardRef refOf(uint8_t n) {
  CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

class StateDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("state-db-test-" + std::to_string(std::random_device{}()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_.dir = dir_.string();
    reopen();
  }
  void TearDown() override {
    db_.reset();
    fs::remove_all(dir_);
  }
  void reopen() {
    db_.reset();
    std::string error;
    db_ = StateDb::open(options_, error);
    ASSERT_NE(db_, nullptr) << error;
  }

  fs::path dir_;
  StateDbOptions options_;
  std::unique_ptr<StateDb> db_;
};

TEST_F(StateDbTest, PersistedChangesAndCheckpointSurviveReopen) {
  {
    auto store = db_->cardStore(3);
    store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
    store->modify(refOf(2)).events.push_back(detectors::Event{200, Country::of('F', 'R'), "b"});
    const PartitionCheckpoint checkpoint{42, 200, 7};
    ASSERT_EQ(store->persist(checkpoint), std::nullopt);
  }
  reopen();
  EXPECT_EQ(db_->checkpoint(3), (PartitionCheckpoint{42, 200, 7}));
  EXPECT_EQ(db_->checkpoint(4), std::nullopt);
  auto store = db_->cardStore(3);
  EXPECT_EQ(store->cardCount(), 2u);
  ASSERT_NE(store->find(refOf(1)), nullptr);
  EXPECT_EQ(store->find(refOf(1))->events.at(0).tx_id.view(), "a");
  EXPECT_EQ(db_->cardStore(4)->find(refOf(1)), nullptr);  // partitions are separate
}

TEST_F(StateDbTest, DiscardedChangesNeverReachDisk) {
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  ASSERT_EQ(store->persist(PartitionCheckpoint{1, 100, 0}), std::nullopt);
  store->modify(refOf(1)).events.push_back(detectors::Event{150, Country::of('F', 'R'), "b"});
  store->modify(refOf(9)).events.push_back(detectors::Event{160, Country::of('F', 'R'), "c"});
  store->erase(refOf(1));
  EXPECT_EQ(store->cardCount(), 1u);
  EXPECT_TRUE(store->discardChanges());
  EXPECT_EQ(store->cardCount(), 1u);
  ASSERT_NE(store->find(refOf(1)), nullptr);
  EXPECT_EQ(store->find(refOf(1))->events.size(), 1u);
  EXPECT_EQ(store->find(refOf(9)), nullptr);
}

TEST_F(StateDbTest, ErasedCardsAreDeletedAtPersist) {
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  ASSERT_EQ(store->persist(PartitionCheckpoint{1, 100, 0}), std::nullopt);
  store->erase(refOf(1));
  EXPECT_EQ(store->find(refOf(1)), nullptr);
  const auto changes = store->takeCommitChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].encoded.has_value());
  ASSERT_EQ(store->persist(PartitionCheckpoint{2, 100, 0}), std::nullopt);
  store.reset();
  reopen();
  EXPECT_EQ(db_->cardStore(0)->cardCount(), 0u);
}

TEST_F(StateDbTest, CacheEvictionUnderATinyBudgetKeepsEveryCardReadable) {
  options_.card_cache_mb = 1;
  reopen();
  auto store = db_->cardStore(0);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 20'000; ++i) {
      CardRef ref;
      ref.bytes[0] = static_cast<uint8_t>(i);
      ref.bytes[1] = static_cast<uint8_t>(i >> 8);
      store->modify(ref).events.push_back(
          detectors::Event{round * 1000 + i, Country::of('D', 'E'),
                           std::string_view("tx-" + std::to_string(round))});
    }
    ASSERT_EQ(store->persist(PartitionCheckpoint{round, 0, 0}), std::nullopt);
    EXPECT_LE(db_->cachedBytes(), 1u << 20);
  }
  for (int i = 0; i < 20'000; i += 997) {
    CardRef ref;
    ref.bytes[0] = static_cast<uint8_t>(i);
    ref.bytes[1] = static_cast<uint8_t>(i >> 8);
    const CardState* state = store->find(ref);
    ASSERT_NE(state, nullptr);
    EXPECT_EQ(state->events.size(), 3u);
  }
}

TEST_F(StateDbTest, CommitChangesAreReportedOnceAndPersistWritesEachCardOnce) {
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  auto first = store->takeCommitChanges();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(decodeCardState(*first[0].encoded)->events.size(), 1u);
  EXPECT_TRUE(store->takeCommitChanges().empty());
  store->modify(refOf(1)).events.push_back(detectors::Event{110, Country::of('F', 'R'), "b"});
  store->modify(refOf(2)).events.push_back(detectors::Event{120, Country::of('F', 'R'), "c"});
  auto second = store->takeCommitChanges();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_TRUE(store->hasUnpersistedChanges());
  ASSERT_EQ(store->persist(PartitionCheckpoint{3, 120, 9}), std::nullopt);
  EXPECT_FALSE(store->hasUnpersistedChanges());
  store.reset();
  reopen();
  auto reopened = db_->cardStore(0);
  EXPECT_EQ(reopened->find(refOf(1))->events.size(), 2u);
  EXPECT_EQ(reopened->cardCount(), 2u);
}

TEST_F(StateDbTest, ForEachSeesPersistedAndPendingCardsOnce) {
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  store->modify(refOf(2)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "b"});
  ASSERT_EQ(store->persist(PartitionCheckpoint{1, 100, 0}), std::nullopt);
  store->modify(refOf(2)).events.push_back(detectors::Event{110, Country::of('F', 'R'), "c"});
  store->modify(refOf(3)).events.push_back(detectors::Event{120, Country::of('F', 'R'), "d"});
  store->erase(refOf(1));
  std::map<CardRef, size_t> seen;
  store->forEach([&](const CardRef& ref, const CardState& state) {
    EXPECT_EQ(seen.count(ref), 0u);
    seen[ref] = state.events.size();
  });
  EXPECT_EQ(seen, (std::map<CardRef, size_t>{{refOf(2), 2}, {refOf(3), 1}}));
}

TEST_F(StateDbTest, RestoredChangesAndClearPartition) {
  std::vector<CardChange> changes = {
      {refOf(5), encodeCardState(CardState{{{10, Country::of('D', 'E'), "x"}}, std::nullopt})}};
  ASSERT_EQ(db_->writeRestored(2, changes, PartitionCheckpoint{9, 10, 3}), std::nullopt);
  EXPECT_EQ(db_->cardStore(2)->cardCount(), 1u);
  EXPECT_EQ(db_->checkpoint(2), (PartitionCheckpoint{9, 10, 3}));
  ASSERT_EQ(db_->clearPartition(2), std::nullopt);
  EXPECT_EQ(db_->cardStore(2)->cardCount(), 0u);
  EXPECT_EQ(db_->checkpoint(2), std::nullopt);
}

// Writes one raw key into the database directory, as another program (or build) would.
void rawPut(const std::string& dir, const std::string& key, const std::string& value) {
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, value).ok());
}

TEST_F(StateDbTest, RefusesStateOfAnotherFormatVersion) {
  db_.reset();
  rawPut(options_.dir, "F", "999");
  std::string error;
  EXPECT_EQ(StateDb::open(options_, error), nullptr);
  EXPECT_NE(error.find("format version 999"), std::string::npos) << error;
}

TEST_F(StateDbTest, RefusesADirectoryOfSomeoneElsesRocksDb) {
  db_.reset();
  const auto other = dir_ / "other";
  rawPut(other.string(), "unrelated", "data");
  options_.dir = other.string();
  std::string error;
  EXPECT_EQ(StateDb::open(options_, error), nullptr);
  EXPECT_NE(error.find("no format version"), std::string::npos) << error;
}

TEST(StateDbOptions, ValidateReportsEveryProblem) {
  StateDbOptions options;
  options.block_cache_mb = 1;
  options.write_buffer_mb = 0;
  options.card_cache_mb = 0;
  EXPECT_EQ(options.validate().size(), 4u);  // dir, block cache, write buffer, card cache
}

}  // namespace
}  // namespace fraud::state
