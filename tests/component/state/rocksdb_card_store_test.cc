// RocksDbCardStore: the layers together over RocksDB on disk.
#include "state/rocksdb_card_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "state/card_state_codec.h"
#include "tests/component/state/state_db_fixture.h"

namespace fraud::state {
namespace {

TEST_F(StateDbTest, PersistedChangesAndCheckpointSurviveReopen) {
  {
    auto store = db_->cardStore(3);
    store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
    store->modify(refOf(2)).events.push_back(detectors::Event{200, Country::of('F', 'R'), "b"});
    const PartitionCheckpoint checkpoint{42, 200, 7};
    ASSERT_TRUE(store->persist(checkpoint).ok());
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
  ASSERT_TRUE(store->persist(PartitionCheckpoint{1, 100, 0}).ok());
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
  ASSERT_TRUE(store->persist(PartitionCheckpoint{1, 100, 0}).ok());
  store->erase(refOf(1));
  EXPECT_EQ(store->find(refOf(1)), nullptr);
  const auto changes = store->takeCommitChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].encoded.has_value());
  ASSERT_TRUE(store->persist(PartitionCheckpoint{2, 100, 0}).ok());
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
    ASSERT_TRUE(store->persist(PartitionCheckpoint{round, 0, 0}).ok());
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
  ASSERT_TRUE(store->persist(PartitionCheckpoint{3, 120, 9}).ok());
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
  ASSERT_TRUE(store->persist(PartitionCheckpoint{1, 100, 0}).ok());
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
  ASSERT_TRUE(db_->writeRestored(3, changes, PartitionCheckpoint{1, 10, 0}).ok());
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
  ASSERT_TRUE(store->handOff().ok());
  store->modify(refOf(2)).events.push_back(detectors::Event{200, Country::of('D', 'E'), "b"});
  (void)store->takeCommitChanges();
  store->commitSucceeded(PartitionCheckpoint{2, 200, 2});
  ASSERT_TRUE(store->writeCommitted().ok());
  EXPECT_EQ(db_->checkpoint(0), (PartitionCheckpoint{2, 200, 2})) << "read from RocksDB";
  EXPECT_FALSE(store->hasUnpersistedChanges());
}

// Failover review: an abort left the cache incomplete for good, so every later rewind scanned
// and decoded the whole partition on disk again.
TEST_F(StateDbTest, RewindsAfterAnAbortReadTheCommittedStateWithoutScanningTheDisk) {
  auto store = db_->cardStore(0);
  store->modify(refOf(1)).events.push_back(detectors::Event{100, Country::of('D', 'E'), "a"});
  store->modify(refOf(2)).events.push_back(detectors::Event{110, Country::of('D', 'E'), "b"});
  ASSERT_TRUE(store->persist(PartitionCheckpoint{1, 110, 0}).ok());
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
  ASSERT_TRUE(db_->writeRestored(3, changes, PartitionCheckpoint{1, 10, 0}).ok());
  auto store = db_->cardStore(3);
  EXPECT_THROW(store->forEach([](const CardRef&, const CardState&) {}), detectors::CardStoreError);
  EXPECT_THROW((void)store->find(corrupt), detectors::CardStoreError);
  EXPECT_THROW((void)store->modify(corrupt), detectors::CardStoreError);
  const CardRef last = changes[19'999].card_ref;  // also beyond the warmed cache
  ASSERT_NE(store->find(last), nullptr);
  EXPECT_EQ(*store->find(last), stateAt(10 + 19'999, "x"));
  store->modify(refOf(0xfe)) = stateAt(5, "y");
  EXPECT_TRUE(store->persist(PartitionCheckpoint{2, 10, 0}).ok());
}

// A restore batch holds a card once per commit that changed it, in changelog order: written in
// key order, each card's last change must be the one that stays.
TEST_F(StateDbTest, ARestoreBatchKeepsEachCardsLastChangeWhateverItsKeyOrder) {
  const auto state = [](int64_t t) { return encodeCardState(stateAt(t, "x")); };
  const std::vector<CardChange> changes = {
      {refOf(3), state(10)},    {refOf(1), state(20)}, {refOf(3), std::nullopt},  // 3 erased last
      {refOf(2), std::nullopt}, {refOf(1), state(30)}, {refOf(2), state(40)},     // 2 put last
  };
  ASSERT_TRUE(db_->writeRestored(4, changes, PartitionCheckpoint{6, 10, 0}).ok());
  auto store = db_->cardStore(4);
  EXPECT_EQ(store->find(refOf(3)), nullptr) << "a card erased after it was put stays erased";
  ASSERT_NE(store->find(refOf(1)), nullptr);
  EXPECT_EQ(*store->find(refOf(1)), stateAt(30, "x"));
  ASSERT_NE(store->find(refOf(2)), nullptr) << "a card put after it was erased is there";
  EXPECT_EQ(*store->find(refOf(2)), stateAt(40, "x"));
}

}  // namespace
}  // namespace fraud::state
