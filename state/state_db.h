#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/card_store.h"
#include "state/card_map.h"

namespace fraud::state {

struct StateDbOptions {
  std::string dir;              // required; created when missing
  size_t block_cache_mb = 128;  // RocksDB block cache, shared by all partitions. 8..1048576
  size_t write_buffer_mb = 64;  // memtables, charged to the block cache. 4..1048576
  size_t card_cache_mb = 1024;  // decoded card states kept in memory, all partitions. 1..1048576
  // Restored card states buffered in memory, all restores together, before they are written
  // to disk as sorted files. 1..1048576
  size_t restore_buffer_mb = 256;

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
struct StoreWrites;
struct PendingBatch;
class PartitionRestore;

// The instance's state on disk: one RocksDB database holding every assigned partition's card
// states and checkpoints, under a memory budget (shared block cache, write-buffer manager,
// cache of decoded states). Records a format version and refuses any other.
//
// It is a local copy of the changelog topic, which is the durable one: writes skip RocksDB's
// write-ahead log, and the memtables are flushed when the database closes. After a crash the
// disk holds the last flushed checkpoint, consistent with its card states (a write batch is
// flushed whole), and the restore reads the changelog from there.
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

  // A restore of `partition` from the changelog (see PartitionRestore). `from_scratch`: the
  // partition has no usable local checkpoint, so whatever cards it holds are dropped first.
  // Valid while this database lives.
  [[nodiscard]] std::unique_ptr<PartitionRestore> beginRestore(int32_t partition,
                                                               bool from_scratch);
  // Writes restored card states (from the changelog) and, when given, the checkpoint they
  // reach, in one batch through the memtables. An error message on failure.
  [[nodiscard]] std::optional<std::string> writeRestored(
      int32_t partition, const std::vector<CardChange>& changes,
      const std::optional<PartitionCheckpoint>& checkpoint);
  // Drops every card and the checkpoint of a partition.
  [[nodiscard]] std::optional<std::string> clearPartition(int32_t partition);

  // Live SST and memtable bytes, for the state-size metric.
  [[nodiscard]] uint64_t diskBytes();
  // Bytes the decoded-state caches of all partitions hold now.
  [[nodiscard]] uint64_t cachedBytes() const;
  // Called on the writer thread with the seconds each background write took (a metric).
  // Set before the first store is made.
  void setWriteObserver(std::function<void(double seconds)> observer);
  // Tests: every later background write fails with this message (empty: writes work again).
  void failWritesForTesting(std::string message);

  struct Impl;

 private:
  explicit StateDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One partition's state brought up from the changelog: the card records in changelog order,
// then the checkpoint they reach. Records are buffered in memory and written as a sorted SST
// file (the last record of a card winning) that is ingested into the database: no memtable, no
// flush, and a partition that overlaps nothing on disk lands in the last level, compacted
// already. A file is written whenever the restores together buffer more than
// StateDbOptions::restore_buffer_mb (a later file wins over an earlier one), and at finish().
//
// Crash-safe: an ingested file is on disk before ingestion returns, and the checkpoint is
// written only after the last one. A crash mid-restore leaves the old checkpoint (the next
// restore reads the changelog from it again and rewrites the same cards: applying a stretch
// of the changelog twice gives what applying it once does) or none (the next restore starts
// from scratch and drops the partition's cards first).
// Thread-safety: one thread at a time; restores of distinct partitions may run on different
// threads.
class PartitionRestore {
 public:
  PartitionRestore(StateDb::Impl& db, int32_t partition, bool from_scratch);
  ~PartitionRestore();
  PartitionRestore(const PartitionRestore&) = delete;
  PartitionRestore& operator=(const PartitionRestore&) = delete;

  // The card's state from the changelog (`encoded`), or its erasure. An error message when
  // writing a full buffer to disk failed; the restore is then unusable.
  [[nodiscard]] std::optional<std::string> put(const detectors::CardRef& card_ref,
                                               std::string_view encoded);
  [[nodiscard]] std::optional<std::string> erase(const detectors::CardRef& card_ref);
  // Writes what is buffered, then `checkpoint` when given. An error message on failure.
  [[nodiscard]] std::optional<std::string> finish(
      const std::optional<PartitionCheckpoint>& checkpoint);

  // Files ingested so far (for tests).
  [[nodiscard]] size_t filesWritten() const { return files_; }

  struct Bucket;  // the records of one range of card refs, in arrival order

 private:
  [[nodiscard]] std::optional<std::string> add(const detectors::CardRef& card_ref,
                                               std::string_view encoded, bool erased);
  [[nodiscard]] std::optional<std::string> prepare();
  [[nodiscard]] std::optional<std::string> writeFile();

  StateDb::Impl& db_;
  int32_t partition_;
  bool from_scratch_;
  bool prepared_ = false;
  bool partition_empty_ = false;  // nothing of the partition on disk: erasures need no tombstone
  std::vector<Bucket> buckets_;
  size_t records_ = 0;
  int64_t bytes_ = 0;    // buffered now
  int64_t charged_ = 0;  // of which counted in the database's restore total
  size_t files_ = 0;
};

// One partition's card states: RocksDB behind a write-back cache of decoded states.
//
// A change is reported twice: to the changelog (takeCommitChanges(), every transaction), and to
// disk. The encoded changes of a transaction are kept as a write batch; once the transaction
// commits (commitSucceeded(), with the checkpoint it reaches) the batch may go to disk, and
// handOff() gives the committed batches to the database's writer thread: the ingest thread
// never waits for RocksDB. The disk thus only ever holds committed state, in commit order, each
// batch with its checkpoint. A cache entry may be evicted only once its latest change is on
// disk. discardChanges() returns to the committed state (an abort).
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

  // The cards changed since the last call, encoded (nothing for an erased card), staged as the
  // changes of the transaction about to commit. Valid until the next call of any method but
  // the readers.
  [[nodiscard]] const std::vector<CardChange>& takeCommitChanges();
  // The transaction of the staged changes committed and reaches `checkpoint`: they may go to
  // disk with it.
  void commitSucceeded(const PartitionCheckpoint& checkpoint);
  // Gives the committed changes to the writer thread, unless it is still writing the last
  // ones (they then go on coalescing until the next call); does not wait. Also makes clean (and
  // evictable) the entries whose changes are on disk by now.
  void handOff();
  // Hands off and waits until every committed batch is on disk: the write error, if any.
  [[nodiscard]] std::optional<std::string> writeCommitted();
  // True when cards changed since the last write to disk.
  [[nodiscard]] bool hasUnpersistedChanges() const { return !persist_changed_.empty(); }
  // Stages every change, commits it with `checkpoint` and writes it (tests and tools: the state
  // must be the committed one). An error message on failure.
  [[nodiscard]] std::optional<std::string> persist(const PartitionCheckpoint& checkpoint);
  // Forgets every change not committed (waiting for the committed ones to reach disk): the
  // store then reads as the last committed checkpoint. False when a background write failed:
  // the disk lacks committed state and the partition must be restored from the changelog.
  [[nodiscard]] bool discardChanges();
  // A background write of this store failed (the disk refused it): its message.
  [[nodiscard]] std::optional<std::string> writeError() const;
  // Full scans of the partition on disk so far, the warm-up included (tests).
  [[nodiscard]] size_t diskScans() const { return disk_scans_; }

 private:
  struct Entry {
    detectors::CardState state;
    bool erased = false;
    bool commit_changed = false;   // listed in commit_changed_
    bool persist_changed = false;  // listed in persist_changed_: not evictable until on disk
    bool referenced = true;        // CLOCK bit for eviction
    uint64_t staged_seq = 0;       // the batch holding its latest staged change
    size_t bytes = 0;              // estimate charged to the shared budget
  };
  Entry* load(const detectors::CardRef& card_ref);
  void charge(Entry& entry, size_t bytes);
  void markChanged(const detectors::CardRef& card_ref, Entry& entry);
  void evictIfOverBudget();
  struct StagedChanges {
    uint64_t seq = 0;
    size_t card_count = 0;  // the partition's card count with these changes
    std::vector<CardChange> changes;
  };
  void stageChanges();
  void submitCommitted();
  // Entries whose latest change is on disk become clean; erased ones leave the cache.
  void reclaimWritten();
  [[nodiscard]] bool waitWritten();  // false on a write error

  StateDb::Impl& db_;
  int32_t partition_;
  CardMap<Entry> cache_;
  std::vector<detectors::CardRef> commit_changed_;
  std::vector<detectors::CardRef> persist_changed_;
  size_t card_count_ = 0;
  size_t committed_card_count_ = 0;
  bool complete_ = true;  // the cache holds every card of the partition: a miss is an absence
  std::shared_ptr<StoreWrites> writes_;      // shared with the writer thread
  std::vector<StagedChanges> staged_;        // the transaction in flight
  std::unique_ptr<PendingBatch> committed_;  // committed, not handed off yet: latest per card
  uint64_t next_seq_ = 1;
  uint64_t handed_seq_ = 0;     // the last batch given to the writer
  uint64_t reclaimed_seq_ = 0;  // reclaimWritten() has seen everything up to here written
  size_t disk_scans_ = 0;
};

}  // namespace fraud::state
