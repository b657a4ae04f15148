// RocksDB on disk in a temporary directory.
#include "state/state_db.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

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

// A cache that could not hold the whole partition: forEach reads the disk and the pending
// changes; one that holds it answers from memory. Both see every card once.
TEST_F(StateDbTest, ForEachSeesEveryCardWhetherTheCacheHoldsThePartitionOrNot) {
  std::vector<CardChange> changes;
  for (int i = 0; i < 20'000; ++i) {
    CardRef ref;
    ref.bytes[0] = static_cast<uint8_t>(i >> 8);
    ref.bytes[1] = static_cast<uint8_t>(i);
    changes.push_back(
        {ref, encodeCardState(CardState{{{10 + i, Country::of('D', 'E'), "x"}}, std::nullopt})});
  }
  ASSERT_EQ(db_->writeRestored(3, changes, PartitionCheckpoint{1, 10, 0}), std::nullopt);
  for (const size_t cache_mb : {size_t{1}, size_t{64}}) {
    options_.card_cache_mb = cache_mb;  // 1 MiB: far less than 20,000 cached cards take
    db_.reset();
    reopen();
    auto store = db_->cardStore(3);
    size_t visited = 0;
    std::set<CardRef> seen;
    store->forEach([&](const CardRef& ref, const CardState& state) {
      ++visited;
      seen.insert(ref);
      EXPECT_EQ(state.events.size(), 1u);
    });
    EXPECT_EQ(visited, 20'000u) << cache_mb << " MiB cache";
    EXPECT_EQ(seen.size(), 20'000u);
  }
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

CardState stateAt(detectors::EventTime t, std::string_view tx) {
  return CardState{{{t, Country::of('D', 'E'), detectors::TxId(tx)}}, std::nullopt};
}

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
      ASSERT_EQ(restore->erase(ref), std::nullopt);
      expected[ref] = std::nullopt;
    } else {
      const CardState state = stateAt(i, "tx-" + std::to_string(i));
      ASSERT_EQ(restore->put(ref, encodeCardState(state)), std::nullopt);
      expected[ref] = state;
    }
  }
  ASSERT_EQ(restore->finish(PartitionCheckpoint{60'000, 59'999, 60'000}), std::nullopt);
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

TEST_F(StateDbTest, RestoreFromScratchDropsLeftoversAndLeavesOtherPartitions) {
  // Cards without a checkpoint (a restore that a crash interrupted), and a neighbour.
  ASSERT_EQ(db_->writeRestored(5, {{refOf(1), encodeCardState(stateAt(1, "a"))}}, std::nullopt),
            std::nullopt);
  ASSERT_EQ(db_->writeRestored(6, {{refOf(1), encodeCardState(stateAt(2, "b"))}},
                               PartitionCheckpoint{1, 2, 1}),
            std::nullopt);
  auto restore = db_->beginRestore(5, /*from_scratch=*/true);
  ASSERT_EQ(restore->put(refOf(2), encodeCardState(stateAt(3, "c"))), std::nullopt);
  ASSERT_EQ(restore->finish(PartitionCheckpoint{7, 3, 1}), std::nullopt);
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
  ASSERT_EQ(db_->writeRestored(3,
                               {{refOf(1), encodeCardState(stateAt(1, "a"))},
                                {refOf(2), encodeCardState(stateAt(1, "b"))},
                                {refOf(3), encodeCardState(stateAt(1, "c"))}},
                               PartitionCheckpoint{3, 1, 3}),
            std::nullopt);
  auto restore = db_->beginRestore(3, /*from_scratch=*/false);
  ASSERT_EQ(restore->erase(refOf(1)), std::nullopt);
  ASSERT_EQ(restore->put(refOf(2), encodeCardState(stateAt(5, "d"))), std::nullopt);
  ASSERT_EQ(restore->finish(PartitionCheckpoint{9, 5, 5}), std::nullopt);
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
  ASSERT_EQ(restore->erase(refOf(1)), std::nullopt);  // erasing in an empty partition: no file
  ASSERT_EQ(restore->finish(PartitionCheckpoint{4, std::nullopt, 2}), std::nullopt);
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
        std::string error;
        auto db = StateDb::open(options, error);
        if (db == nullptr) std::_Exit(2);
        auto restore = db->beginRestore(1, /*from_scratch=*/true);
        if (restore->put(refOf(1), encodeCardState(stateAt(1, "a")))) std::_Exit(3);
        if (restore->finish(PartitionCheckpoint{5, 1, 2})) std::_Exit(4);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  ::unsetenv("FRAUD_STATE_DB_CRASH_DIR");
  std::string error;
  auto db = StateDb::open(options, error);  // the format version was flushed at creation
  ASSERT_NE(db, nullptr) << error;
  EXPECT_EQ(db->checkpoint(1), std::nullopt) << "the checkpoint lived in the memtable only";
  // The next restore starts from scratch and drops what the interrupted one ingested.
  auto restore = db->beginRestore(1, /*from_scratch=*/true);
  ASSERT_EQ(restore->put(refOf(2), encodeCardState(stateAt(2, "b"))), std::nullopt);
  ASSERT_EQ(restore->finish(PartitionCheckpoint{6, 2, 3}), std::nullopt);
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

// Failover review: writeCommitted() returned while the newest commit still waited behind a
// slow write, so a revoke reported a partition written that was not.
TEST_F(StateDbTest, WriteCommittedReturnsOnlyOnceTheNewestCommitIsOnDisk) {
  std::atomic<int> writes{0};
  // Slows the first background write (after RocksDB took it, before it counts as written): the
  // second commit is made while the first is still in flight.
  db_->setWriteObserver([&](double) {
    if (writes++ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  (void)store->takeCommitChanges();
  store->commitSucceeded(PartitionCheckpoint{1, 100, 1});
  store->handOff();
  store->modify(refOf(2)).events.push_back(detectors::Event{200, Country::of('D', 'E'), "b"});
  (void)store->takeCommitChanges();
  store->commitSucceeded(PartitionCheckpoint{2, 200, 2});
  ASSERT_EQ(store->writeCommitted(), std::nullopt);
  EXPECT_EQ(db_->checkpoint(0), (PartitionCheckpoint{2, 200, 2})) << "read from RocksDB";
  EXPECT_FALSE(store->hasUnpersistedChanges());
}

// Failover review: an abort left the cache incomplete for good, so every later rewind scanned
// and decoded the whole partition on disk again.
TEST_F(StateDbTest, RewindsAfterAnAbortReadTheCommittedStateWithoutScanningTheDisk) {
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  store->modify(refOf(2)).events.push_back(detectors::Event{110, Country::of('D', 'E'), "b"});
  ASSERT_EQ(store->persist(PartitionCheckpoint{1, 110, 0}), std::nullopt);
  const std::map<CardRef, CardState> committed = {{refOf(1), *store->find(refOf(1))},
                                                  {refOf(2), *store->find(refOf(2))}};
  const size_t scans = store->diskScans();
  for (int rewind = 0; rewind < 5; ++rewind) {
    store->modify(refOf(1)).events.push_back(detectors::Event{200, Country::of('F', 'R'), "c"});
    store->modify(refOf(9)).events.push_back(detectors::Event{210, Country::of('F', 'R'), "d"});
    store->erase(refOf(2));
    if (rewind % 2 == 1) (void)store->takeCommitChanges();  // aborted after staging
    ASSERT_TRUE(store->discardChanges());
    std::map<CardRef, CardState> seen;
    store->forEach([&](const CardRef& ref, const CardState& state) { seen.emplace(ref, state); });
    EXPECT_EQ(seen, committed) << "rewind " << rewind;
    EXPECT_EQ(store->cardCount(), 2u);
    ASSERT_NE(store->find(refOf(1)), nullptr);
    EXPECT_EQ(*store->find(refOf(1)), committed.at(refOf(1)));
    EXPECT_EQ(store->find(refOf(9)), nullptr);
  }
  EXPECT_EQ(store->diskScans(), scans) << "rewinds answered from the cache";
}

// Failover review: the store's failure contract (detectors/card_store.h): what it cannot read
// throws CardStoreError, and it stays usable for the other cards.
TEST_F(StateDbTest, AnUnreadableCardThrowsCardStoreErrorAndOtherCardsStayReadable) {
  options_.card_cache_mb = 1;  // far less than the cards take: the cache is incomplete
  reopen();
  std::vector<CardChange> changes;
  for (int i = 0; i < 20'000; ++i) {
    CardRef ref;
    ref.bytes[0] = static_cast<uint8_t>(i >> 8);
    ref.bytes[1] = static_cast<uint8_t>(i);
    changes.push_back({ref, encodeCardState(stateAt(10 + i, "x"))});
  }
  const CardRef corrupt = refOf(0xff);  // last in key order: beyond the warmed cache
  changes.push_back({corrupt, std::string("\xff not a card state")});
  ASSERT_EQ(db_->writeRestored(3, changes, PartitionCheckpoint{1, 10, 0}), std::nullopt);
  auto store = db_->cardStore(3);
  EXPECT_THROW(store->forEach([](const CardRef&, const CardState&) {}), detectors::CardStoreError);
  EXPECT_THROW((void)store->find(corrupt), detectors::CardStoreError);
  EXPECT_THROW((void)store->modify(corrupt), detectors::CardStoreError);
  const CardRef last = changes[19'999].card_ref;  // also beyond the warmed cache
  ASSERT_NE(store->find(last), nullptr);
  EXPECT_EQ(*store->find(last), stateAt(10 + 19'999, "x"));
  store->modify(refOf(0xfe)) = stateAt(5, "y");
  EXPECT_EQ(store->persist(PartitionCheckpoint{2, 10, 0}), std::nullopt);
}

TEST_F(StateDbTest, AnUnreadableCheckpointThrowsCardStoreError) {
  db_.reset();
  rawPut(options_.dir, std::string("P\0\0\0\3", 5), "not a checkpoint");
  reopen();
  EXPECT_THROW((void)db_->checkpoint(3), detectors::CardStoreError);
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
