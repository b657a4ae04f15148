#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detectors/base/status.h"
#include "detectors/card_store.h"
#include "state/card_cache.h"
#include "state/card_change.h"
#include "state/partition_checkpoint.h"
#include "state/partition_restore.h"
#include "state/rocksdb_card_store.h"
#include "state/state_db_options.h"

namespace fraud::state {

class CheckpointWriter;
class Database;

// A partition's checkpoint on disk that PartitionCheckpoint::decode() refuses (not of this
// version, or a value out of bounds): the partition's state is not usable as it is.
class RejectedCheckpoint : public detectors::CardStoreError {
 public:
  using detectors::CardStoreError::CardStoreError;
};

// The instance's state on disk: one RocksDB database holding every assigned partition's card
// states and checkpoints, under a memory budget (shared block cache, write-buffer manager,
// cache of decoded states). Records a format version and refuses any other.
//
// It is a local copy of the changelog topic, which is the durable one: writes skip RocksDB's
// write-ahead log, and the memtables are flushed when the database closes. After a crash the
// disk holds the last flushed checkpoint, consistent with its card states (a write batch is
// flushed whole), and the restore reads the changelog from there.
// Thread-safety: distinct partitions' stores may be used from different threads; one
// partition's store from one thread at a time. The other methods may be called from any thread.
class StateDb {
 public:
  // The database, or why not (bad directory, unreadable format version, ...).
  [[nodiscard]] static base::Result<std::unique_ptr<StateDb>> open(const StateDbOptions& options);
  ~StateDb();
  StateDb(const StateDb&) = delete;
  StateDb& operator=(const StateDb&) = delete;

  // The partition's checkpoint, or nothing. Throws RejectedCheckpoint when it does not decode
  // or holds a value out of bounds, detectors::CardStoreError when it cannot be read.
  [[nodiscard]] std::optional<PartitionCheckpoint> checkpoint(int32_t partition);
  // The partition's cards, read through a cache. Valid while this database lives. Throws
  // detectors::CardStoreError when the disk cannot be read.
  [[nodiscard]] std::unique_ptr<RocksDbCardStore> cardStore(int32_t partition);

  // A restore of `partition` from the changelog (see PartitionRestore). `from_scratch`: the
  // partition has no usable local checkpoint, so whatever cards it holds are dropped first.
  // Valid while this database lives.
  [[nodiscard]] std::unique_ptr<PartitionRestore> beginRestore(int32_t partition,
                                                               bool from_scratch);
  // Writes restored card states (from the changelog, in its order: a later change of a card
  // supersedes an earlier one) and, when given, the checkpoint they reach, in one batch through
  // the memtables (in key order, each card once). kIoError when RocksDB fails.
  [[nodiscard]] base::Status writeRestored(int32_t partition,
                                           const std::vector<CardChange>& changes,
                                           const std::optional<PartitionCheckpoint>& checkpoint);
  // Drops every card and the checkpoint of a partition.
  [[nodiscard]] base::Status clearPartition(int32_t partition);

  // Live SST and memtable bytes, for the state-size metric.
  [[nodiscard]] uint64_t diskBytes();
  // Bytes the decoded-state caches of all partitions hold now.
  [[nodiscard]] uint64_t cachedBytes() const;
  // Called on the writer thread with the seconds each background write took (a metric).
  // Set before the first store is made.
  void setWriteObserver(std::function<void(double seconds)> observer);

 private:
  StateDb(std::unique_ptr<Database> db, int64_t card_cache_budget);

  std::unique_ptr<Database> db_;
  std::unique_ptr<CheckpointWriter> writer_;  // writes to *db_; stopped first
  CacheBudget card_cache_;
};

}  // namespace fraud::state
