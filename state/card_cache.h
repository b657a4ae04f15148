#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/card_store.h"
#include "state/card_map.h"

namespace fraud::state {

// The memory the caches of all partitions share (StateDbOptions::card_cache_mb). Any thread.
struct CacheBudget {
  std::atomic<int64_t> used{0};
  int64_t limit = 0;
};

// What a cache reads from below: the partition's card states as stored, encoded (the RocksDB
// store; tests: memory). Each call throws detectors::CardStoreError when the store cannot read
// what it holds.
class CardSource {
 public:
  virtual ~CardSource() = default;
  // The card's encoded state, or nothing when it holds none.
  [[nodiscard]] virtual std::optional<std::string> read(const detectors::CardRef& card_ref) = 0;
  // Visits every card held with its encoded state (valid during the call).
  virtual void scan(
      const std::function<void(const detectors::CardRef&, std::string_view encoded)>& visit) = 0;
};

// The caching layer of a partition's card store: decoded states over a CardSource, under a
// shared CacheBudget, evicted by CLOCK. The detector's find/modify/erase are answered here
// without a call below on a hit; a miss reads through (unless the cache is complete: it holds
// every card of the partition, so a miss is an absence, and forEach() needs no scan).
//
// It also keeps what changed, for the layers that write it down: a changed card is listed
// until takeChanged() hands it over as part of a transaction (seq), and stays unwritten (never
// evicted) until settle() learns that batch is on disk. Bad bytes below throw
// detectors::CardStoreError, from the call that met them; the cache stays usable.
// Not thread-safe: one thread at a time; only the budget is shared. The service runs no thread
// per partition: the store is built on fd-warmer (on the ingest thread when the warmer could
// not), then driven by the ingest thread and read by the HTTP threads, under PartitionTask::mu_.
class CardCache : public detectors::CardStore {
 public:
  // Warms the cache with the whole partition while the budget allows.
  CardCache(CardSource& source, CacheBudget& budget, int32_t partition);
  ~CardCache() override;
  CardCache(const CardCache&) = delete;
  CardCache& operator=(const CardCache&) = delete;

  [[nodiscard]] const detectors::CardState* find(const detectors::CardRef& card_ref) override;
  [[nodiscard]] detectors::CardState& modify(const detectors::CardRef& card_ref) override;
  void erase(const detectors::CardRef& card_ref) override;
  void prefetch(const detectors::CardRef& card_ref) override { cache_.prefetch(card_ref); }
  void prefetchMore(const detectors::CardRef& card_ref) override { cache_.prefetchEntry(card_ref); }
  [[nodiscard]] size_t cardCount() const override { return card_count_; }
  void forEach(const std::function<void(const detectors::CardRef&, const detectors::CardState&)>&
                   visit) override;

  // The cache holds every card of the partition.
  [[nodiscard]] bool complete() const { return complete_; }

  // What the cache alone tells of a card: never a read below (so never disk I/O), never an
  // allocation. kHeld: its state (valid until the next change of the cache). kAbsent: it has
  // none (erased, or missing from a complete cache). kUnknown: only the store below can tell
  // (then find() reads it through). Like find(), marks a held entry used (CLOCK).
  struct Cached {
    enum class Kind { kHeld, kAbsent, kUnknown };
    Kind kind = Kind::kUnknown;
    const detectors::CardState* state = nullptr;  // with kHeld
  };
  [[nodiscard]] Cached findCached(const detectors::CardRef& card_ref);

 protected:
  // The commit side, for the store that layers the change log under the cache (and tests).

  // Cards changed since the last call.
  [[nodiscard]] size_t changedCount() const { return changed_.size(); }
  // Visits each card changed since the last call, with its state (nullptr: erased), and marks
  // that change as part of the batch `seq`.
  template <typename Visit>
  void takeChanged(uint64_t seq, Visit&& visit);
  // Every batch up to `written` is on disk: its cards become clean (evictable), erased ones
  // leave; then evicts down to the budget.
  void settle(uint64_t written);
  // Back to the committed state, which batches up to `written` hold on disk, with
  // `card_count` cards: every change not on disk is forgotten and its card read again from
  // below. `disk_holds_committed` false: the disk lacks committed state (a failed write).
  void rollBack(uint64_t written, size_t card_count, bool disk_holds_committed);
  // Cards changed whose change is not on disk yet.
  [[nodiscard]] bool hasUnwritten() const { return !unwritten_.empty(); }

 private:
  struct Entry {
    detectors::CardState state;
    bool erased = false;
    bool changed = false;     // listed in changed_
    bool unwritten = false;   // listed in unwritten_: not evictable until on disk
    bool referenced = true;   // CLOCK bit
    uint64_t change_seq = 0;  // the batch holding its latest taken change
    size_t bytes = 0;         // estimate charged to the budget
  };
  void warm();
  Entry* load(const detectors::CardRef& card_ref);
  Entry* readThrough(const detectors::CardRef& card_ref);
  [[nodiscard]] detectors::CardState decode(std::string_view encoded) const;
  void charge(Entry& entry, size_t bytes);
  void markChanged(const detectors::CardRef& card_ref, Entry& entry);
  void evictIfOverBudget();

  CardSource& source_;
  CacheBudget& budget_;
  int32_t partition_;
  CardMap<Entry> cache_;
  std::vector<detectors::CardRef> changed_;
  std::vector<detectors::CardRef> unwritten_;
  size_t card_count_ = 0;
  bool complete_ = true;
  uint64_t settled_seq_ = 0;  // settle() has seen every batch up to here written
};

template <typename Visit>
void CardCache::takeChanged(uint64_t seq, Visit&& visit) {
  for (const auto& ref : changed_) {
    Entry* entry = cache_.find(ref);
    entry->changed = false;
    entry->change_seq = seq;
    visit(ref, entry->erased ? nullptr : &entry->state);
  }
  changed_.clear();
}

}  // namespace fraud::state
