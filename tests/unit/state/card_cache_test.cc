// The caching layer alone, over card states in memory.
#include "state/card_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "tests/support/memory_card_source.h"

namespace fraud::state {
namespace {

using detectors::CardRef;
using detectors::CardState;
using detectors::Country;

CardRef refOf(uint16_t n) {
  CardRef ref;
  ref.bytes[0] = static_cast<uint8_t>(n >> 8);
  ref.bytes[1] = static_cast<uint8_t>(n);
  return ref;
}

CardState stateAt(detectors::EventTime t) {
  return CardState{{{t, Country::of('D', 'E'), detectors::TxId("tx")}}, std::nullopt};
}

// The commit side is for the layer above; a test plays that layer.
class CommittingCache : public CardCache {
 public:
  using CardCache::CardCache;
  using CardCache::changedCount;
  using CardCache::hasUnwritten;
  using CardCache::rollBack;
  using CardCache::settle;
  using CardCache::takeChanged;
};

class CardCacheTest : public ::testing::Test {
 protected:
  void fill(uint16_t cards) {
    for (uint16_t i = 0; i < cards; ++i) source_.cards.modify(refOf(i)) = stateAt(i);
  }
  std::map<CardRef, CardState> contents(CardCache& cache) {
    std::map<CardRef, CardState> seen;
    cache.forEach([&](const CardRef& ref, const CardState& state) {
      EXPECT_TRUE(seen.emplace(ref, state).second) << "visited twice";
    });
    return seen;
  }

  MemoryCardSource source_;
  CacheBudget budget_{.used = 0, .limit = int64_t{1} << 20};
};

TEST_F(CardCacheTest, AWarmCacheHoldingThePartitionAnswersWithoutReadingBelow) {
  fill(3);
  CommittingCache cache(source_, budget_, 0);
  EXPECT_TRUE(cache.complete());
  EXPECT_EQ(cache.cardCount(), 3u);
  ASSERT_NE(cache.find(refOf(1)), nullptr);
  EXPECT_EQ(*cache.find(refOf(1)), stateAt(1));
  EXPECT_EQ(cache.find(refOf(7)), nullptr);
  EXPECT_EQ(contents(cache).size(), 3u);
  EXPECT_EQ(source_.scans, 1u) << "the warm-up only";
  EXPECT_GT(budget_.used.load(), 0);
}

TEST_F(CardCacheTest, OverItsBudgetItReadsThroughAndSeesEveryCardOnce) {
  fill(200);
  budget_.limit = 4000;  // a few cards
  CommittingCache cache(source_, budget_, 0);
  EXPECT_FALSE(cache.complete());
  EXPECT_EQ(cache.cardCount(), 200u);
  ASSERT_NE(cache.find(refOf(199)), nullptr);
  EXPECT_EQ(*cache.find(refOf(199)), stateAt(199));
  cache.modify(refOf(150)).events.push_back({500, Country::of('F', 'R'), "b"});
  const auto seen = contents(cache);
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(seen.at(refOf(150)).events.size(), 2u) << "the changed card from the cache";
}

TEST_F(CardCacheTest, FindCachedTellsHeldAndAbsentCardsOfACompleteCacheWithoutReadingBelow) {
  fill(3);
  CommittingCache cache(source_, budget_, 0);
  ASSERT_TRUE(cache.complete());
  cache.erase(refOf(2));
  using Kind = CardCache::Cached::Kind;
  const CardCache::Cached held = cache.findCached(refOf(1));
  ASSERT_EQ(held.kind, Kind::kHeld);
  EXPECT_EQ(*held.state, stateAt(1));
  EXPECT_EQ(cache.findCached(refOf(2)).kind, Kind::kAbsent) << "erased";
  EXPECT_EQ(cache.findCached(refOf(7)).kind, Kind::kAbsent) << "never held";
  EXPECT_EQ(source_.reads, 0u);
}

TEST_F(CardCacheTest, FindCachedOfAnIncompleteCacheLeavesWhatIsBelowUnknown) {
  fill(200);
  budget_.limit = 4000;  // a few cards
  CommittingCache cache(source_, budget_, 0);
  ASSERT_FALSE(cache.complete());
  using Kind = CardCache::Cached::Kind;
  size_t held = 0;
  std::optional<CardRef> below;
  for (uint16_t i = 0; i < 200; ++i) {
    const CardCache::Cached cached = cache.findCached(refOf(i));
    if (cached.kind == Kind::kHeld) {
      ++held;
      EXPECT_EQ(*cached.state, stateAt(i));
    } else {
      EXPECT_EQ(cached.kind, Kind::kUnknown) << i;
      below = refOf(i);
    }
  }
  EXPECT_GT(held, 0u);
  ASSERT_TRUE(below.has_value());
  EXPECT_EQ(source_.reads, 0u);
  EXPECT_EQ(cache.findCached(refOf(999)).kind, Kind::kUnknown) << "only the store below knows";
  ASSERT_NE(cache.find(*below), nullptr);  // read through: held from now on
  EXPECT_EQ(source_.reads, 1u);
  EXPECT_EQ(cache.findCached(*below).kind, Kind::kHeld);
}

TEST_F(CardCacheTest, ReleasesItsBudgetWhenDestroyed) {
  fill(10);
  { CommittingCache cache(source_, budget_, 0); }
  EXPECT_EQ(budget_.used.load(), 0);
}

TEST_F(CardCacheTest, TakeChangedHandsEachChangeOverOnceAndSettleMakesItClean) {
  fill(2);
  CommittingCache cache(source_, budget_, 0);
  cache.modify(refOf(0)).events.push_back({500, Country::of('F', 'R'), "b"});
  cache.erase(refOf(1));
  cache.modify(refOf(0)).events.push_back({600, Country::of('F', 'R'), "c"});
  EXPECT_EQ(cache.changedCount(), 2u);
  std::map<CardRef, std::optional<size_t>> taken;
  cache.takeChanged(1, [&](const CardRef& ref, const CardState* state) {
    taken[ref] = state ? std::optional(state->events.size()) : std::nullopt;
  });
  EXPECT_EQ(taken, (std::map<CardRef, std::optional<size_t>>{{refOf(0), 3}, {refOf(1), {}}}));
  size_t again = 0;
  cache.takeChanged(2, [&](const CardRef&, const CardState*) { ++again; });
  EXPECT_EQ(again, 0u);
  EXPECT_TRUE(cache.hasUnwritten());
  cache.settle(1);
  EXPECT_FALSE(cache.hasUnwritten());
  EXPECT_EQ(cache.cardCount(), 1u);
}

TEST_F(CardCacheTest, RollBackReadsTheChangedCardsBackWithoutAScan) {
  fill(2);
  CommittingCache cache(source_, budget_, 0);
  cache.modify(refOf(0)).events.push_back({500, Country::of('F', 'R'), "b"});
  cache.modify(refOf(9)) = stateAt(9);
  cache.erase(refOf(1));
  cache.takeChanged(1, [](const CardRef&, const CardState*) {});  // staged, then aborted
  cache.modify(refOf(0)).events.push_back({600, Country::of('F', 'R'), "c"});
  cache.rollBack(/*written=*/0, /*card_count=*/2, /*disk_holds_committed=*/true);
  EXPECT_TRUE(cache.complete());
  EXPECT_FALSE(cache.hasUnwritten());
  EXPECT_EQ(cache.cardCount(), 2u);
  EXPECT_EQ(contents(cache),
            (std::map<CardRef, CardState>{{refOf(0), stateAt(0)}, {refOf(1), stateAt(1)}}));
  EXPECT_EQ(source_.scans, 1u) << "the warm-up only";
}

TEST_F(CardCacheTest, EvictsOnlyCardsWhoseChangesAreOnDisk) {
  budget_.limit = 4000;
  CommittingCache cache(source_, budget_, 0);
  for (uint16_t i = 0; i < 100; ++i) cache.modify(refOf(i)) = stateAt(i);
  cache.takeChanged(1, [&](const CardRef& ref, const CardState* state) {
    source_.cards.modify(ref) = *state;  // what the layers below would write
  });
  cache.settle(0);
  EXPECT_GT(budget_.used.load(), budget_.limit) << "nothing written: nothing evictable";
  EXPECT_TRUE(cache.complete());
  cache.settle(1);
  EXPECT_LE(budget_.used.load(), budget_.limit);
  EXPECT_FALSE(cache.complete());
  for (uint16_t i = 0; i < 100; ++i) {
    ASSERT_NE(cache.find(refOf(i)), nullptr);
    EXPECT_EQ(*cache.find(refOf(i)), stateAt(i));
  }
}

TEST_F(CardCacheTest, BytesThatDoNotDecodeThrowCardStoreErrorAndOtherCardsStayReadable) {
  fill(50);
  budget_.limit = 2000;
  CommittingCache cache(source_, budget_, 0);
  ASSERT_FALSE(cache.complete());
  source_.corrupt = refOf(999);
  EXPECT_THROW((void)cache.find(refOf(999)), detectors::CardStoreError);
  EXPECT_THROW((void)cache.modify(refOf(999)), detectors::CardStoreError);
  EXPECT_THROW(cache.forEach([](const CardRef&, const CardState&) {}), detectors::CardStoreError);
  ASSERT_NE(cache.find(refOf(49)), nullptr);
  EXPECT_EQ(*cache.find(refOf(49)), stateAt(49));
  EXPECT_EQ(cache.cardCount(), 50u);
}

TEST_F(CardCacheTest, AWarmUpMeetingBadBytesThrowsCardStoreErrorAndReleasesItsBudget) {
  fill(5);
  source_.corrupt = refOf(999);
  EXPECT_THROW(CommittingCache(source_, budget_, 0), detectors::CardStoreError);
  EXPECT_EQ(budget_.used.load(), 0);
}

}  // namespace
}  // namespace fraud::state
