#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "detectors/card_store.h"

namespace fraud::state {

struct StateDbOptions {
  std::string dir;               // required; created when missing
  size_t block_cache_mb = 128;   // RocksDB block cache, shared by all partitions. 8..1048576
  size_t write_buffer_mb = 64;   // memtables, charged to the block cache. 4..1048576
  size_t card_cache_mb = 256;    // decoded card states kept in memory, all partitions. 1..1048576
  bool sync_writes = false;      // fsync each checkpoint: survives a machine crash, not only ours

  [[nodiscard]] std::vector<std::string> validate() const;
};

// Where a partition's state stands: the input offset it has consumed up to (exclusive), the
// stream time there, and the changelog offset from which a restore of newer changes continues.
struct PartitionCheckpoint {
  int64_t next_offset = 0;
  std::optional<detectors::EventTime> stream_time;
  int64_t changelog_next_offset = 0;

  [[nodiscard]] std::string encode() const;
  [[nodiscard]] static std::optional<PartitionCheckpoint> decode(std::string_view bytes);
  friend bool operator==(const PartitionCheckpoint&, const PartitionCheckpoint&) = default;
};

// One card's change since the last checkpoint: its encoded state, or nothing when erased.
struct CardChange {
  detectors::CardRef card_ref;
  std::optional<std::string> encoded;
};

class RocksDbCardStore;

// The instance's state on disk: one RocksDB database holding every assigned partition's card
// states and checkpoints, under a memory budget (shared block cache, write-buffer manager,
// cache of decoded states). Records a format version and refuses any other.
// Thread-safety: distinct partitions' stores may be used from different threads; one
// partition's store from one thread at a time.
class StateDb {
 public:
  // The database, or nothing with `error` set (bad directory, unreadable format version, ...).
  [[nodiscard]] static std::unique_ptr<StateDb> open(const StateDbOptions& options,
                                                     std::string& error);
  ~StateDb();
  StateDb(const StateDb&) = delete;
  StateDb& operator=(const StateDb&) = delete;

  [[nodiscard]] std::optional<PartitionCheckpoint> checkpoint(int32_t partition);
  // The partition's cards, read through a cache. Valid while this database lives.
  [[nodiscard]] std::unique_ptr<RocksDbCardStore> cardStore(int32_t partition);

  // Writes restored card states (from the changelog) and, when given, the checkpoint they
  // reach, in one batch. An error message on failure.
  [[nodiscard]] std::optional<std::string> writeRestored(
      int32_t partition, const std::vector<CardChange>& changes,
      const std::optional<PartitionCheckpoint>& checkpoint);
  // Drops every card and the checkpoint of a partition.
  [[nodiscard]] std::optional<std::string> clearPartition(int32_t partition);

  // Live SST and memtable bytes, for the state-size metric.
  [[nodiscard]] uint64_t diskBytes();
  // Bytes the decoded-state caches of all partitions hold now.
  [[nodiscard]] uint64_t cachedBytes() const;

  struct Impl;

 private:
  explicit StateDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One partition's card states: RocksDB behind a write-back cache of decoded states. Changes
// stay in the cache until persist() writes them with a checkpoint in one batch, so the state on
// disk always matches a checkpoint; discardChanges() returns to it.
class RocksDbCardStore final : public detectors::CardStore {
 public:
  RocksDbCardStore(StateDb::Impl& db, int32_t partition);
  ~RocksDbCardStore() override;

  [[nodiscard]] const detectors::CardState* find(const detectors::CardRef& card_ref) override;
  [[nodiscard]] detectors::CardState& modify(const detectors::CardRef& card_ref) override;
  void erase(const detectors::CardRef& card_ref) override;
  [[nodiscard]] size_t cardCount() const override { return card_count_; }
  void forEach(const std::function<void(const detectors::CardRef&, const detectors::CardState&)>&
                   visit) override;

  [[nodiscard]] bool hasChanges() const { return !changed_.empty(); }
  // The changes since the last persist(), encoded; they stay pending.
  [[nodiscard]] std::vector<CardChange> collectChanges() const;
  // Writes `changes` (from collectChanges()) and the checkpoint in one batch; on success the
  // cache holds them as clean. An error message on failure, nothing changed then.
  [[nodiscard]] std::optional<std::string> persist(const std::vector<CardChange>& changes,
                                                   const PartitionCheckpoint& checkpoint);
  // Forgets every change since the last persist().
  void discardChanges();

 private:
  struct Entry {
    detectors::CardState state;
    bool erased = false;
    bool referenced = true;  // CLOCK bit for eviction
    size_t bytes = 0;        // estimate charged to the shared budget
  };
  Entry* load(const detectors::CardRef& card_ref);
  void charge(Entry& entry, size_t bytes);
  void evictIfOverBudget();

  StateDb::Impl& db_;
  int32_t partition_;
  std::unordered_map<detectors::CardRef, Entry, detectors::CardRefHash> cache_;
  std::unordered_set<detectors::CardRef, detectors::CardRefHash> changed_;
  size_t card_count_ = 0;
  size_t persisted_card_count_ = 0;
};

}  // namespace fraud::state
