#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detectors/base/status.h"
#include "state/card_cache.h"
#include "state/card_change.h"
#include "state/change_log.h"
#include "state/partition_checkpoint.h"

namespace fraud::state {

// The bottom layer of a live card store: one partition's cards as stored, read encoded
// (CardSource) and written in committed batches (CommittedBatchSink). RocksDbPartition on disk;
// tests: memory. Both contracts apply as stated there.
class PartitionStorage : public CardSource, public CommittedBatchSink {};

// One partition's card states in three layers (as Kafka Streams stacks its stores):
//   CardCache         decoded states, CLOCK eviction; answers the detector (this class is one)
//   ChangeLog         what changed since the last commit, and the committed batches
//   PartitionStorage  the store underneath (RocksDB, written by the database's writer thread)
//
// A change is reported twice: to the changelog (takeCommitChanges(), every transaction), and to
// the storage. Once the transaction commits (commitSucceeded(), with the checkpoint it reaches)
// its changes may go down, and handOff() gives the committed batches to the storage without
// waiting. The storage thus only ever holds committed state, in commit order, each batch with
// its checkpoint. A cache entry may be evicted only once its latest change is stored.
// discardChanges() returns to the committed state (an abort); close() writes the last
// committed batches before the store is dropped.
// Failure contract: detectors::CardStore's (CardStoreError when the storage cannot be read).
// Not thread-safe: one thread at a time.
class LiveCardStore : public CardCache {
 public:
  // Warms the cache from `storage` (which holds `partition`'s committed cards).
  LiveCardStore(std::unique_ptr<PartitionStorage> storage, CacheBudget& budget, int32_t partition);
  // close(), unless the owner did: a final write that fails here has no one to tell, so it is
  // counted as a broken invariant (base::Invariant::kCardStoreUnclosed).
  ~LiveCardStore() override;

  // The cards changed since the last call, encoded (nothing for an erased card), staged as the
  // changes of the transaction about to commit. Valid until the next call of any method but
  // the readers.
  [[nodiscard]] const std::vector<CardChange>& takeCommitChanges();
  // The transaction of the staged changes committed and reaches `checkpoint`: they may go to
  // the storage with it.
  void commitSucceeded(const PartitionCheckpoint& checkpoint);
  // Gives the committed changes to the storage, unless it is still writing the last ones (they
  // then go on coalescing until the next call); does not wait. Also makes clean (and
  // evictable) the entries whose changes are stored by now. Ok, or the error of an earlier
  // background write the storage refused (kIoError): it lacks committed state from then on.
  [[nodiscard]] base::Status handOff();
  // Hands off and waits until every committed batch, the newest included, is stored: ok, or
  // the write's error (kIoError).
  [[nodiscard]] base::Status writeCommitted();
  // True when cards changed since the last write to the storage.
  [[nodiscard]] bool hasUnpersistedChanges() const { return hasUnwritten(); }
  // Stages every change, commits it with `checkpoint` and writes it (tests and tools: the state
  // must be the committed one).
  [[nodiscard]] base::Status persist(const PartitionCheckpoint& checkpoint);
  // Forgets every change not committed (waiting for the committed ones to be stored): the
  // store then reads as the last committed checkpoint. False when a background write failed:
  // the storage lacks committed state and the partition must be restored from the changelog.
  [[nodiscard]] bool discardChanges();
  // The last step of the store's use: drops the changes not committed and writes the committed
  // ones, waiting for them, so that all of this store's writes land before a later store of the
  // partition (or a restore, or clearing it) reads or writes the storage. Ok, or the final
  // write's error: the storage then lacks committed state (the changelog has it). Only the
  // destructor may follow; a second call returns ok and writes nothing.
  [[nodiscard]] base::Status close();

 protected:
  [[nodiscard]] PartitionStorage& storage() const { return *storage_; }

 private:
  std::unique_ptr<PartitionStorage> storage_;
  ChangeLog log_;  // writes to *storage_
  bool closed_ = false;
};

}  // namespace fraud::state
