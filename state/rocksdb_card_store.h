#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "state/card_cache.h"
#include "state/card_change.h"
#include "state/change_log.h"
#include "state/partition_checkpoint.h"

namespace fraud::state {

class RocksDbPartition;

// One partition's card states, in three layers (as Kafka Streams stacks its stores):
//   CardCache         decoded states, CLOCK eviction; answers the detector (this class is one)
//   ChangeLog         what changed since the last commit, and the committed batches
//   RocksDbPartition  the RocksDB store underneath, written by the database's writer thread
//
// A change is reported twice: to the changelog (takeCommitChanges(), every transaction), and to
// disk. Once the transaction commits (commitSucceeded(), with the checkpoint it reaches) its
// changes may go to disk, and handOff() gives the committed batches to the database's writer
// thread: the ingest thread never waits for RocksDB. The disk thus only ever holds committed
// state, in commit order, each batch with its checkpoint. A cache entry may be evicted only once
// its latest change is on disk. discardChanges() returns to the committed state (an abort).
// Failure contract: detectors::CardStore's (CardStoreError when the disk cannot be read).
// Made by StateDb::cardStore(). Not thread-safe: one thread at a time.
class RocksDbCardStore final : public CardCache {
 public:
  ~RocksDbCardStore() override;

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
  // Hands off and waits until every committed batch, the newest included, is on disk: the
  // write error, if any.
  [[nodiscard]] std::optional<std::string> writeCommitted();
  // True when cards changed since the last write to disk.
  [[nodiscard]] bool hasUnpersistedChanges() const { return hasUnwritten(); }
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
  [[nodiscard]] size_t diskScans() const;

 private:
  friend class StateDb;
  RocksDbCardStore(std::unique_ptr<RocksDbPartition> disk, CacheBudget& budget, int32_t partition);

  std::unique_ptr<RocksDbPartition> disk_;
  ChangeLog log_;  // writes to *disk_
};

}  // namespace fraud::state
