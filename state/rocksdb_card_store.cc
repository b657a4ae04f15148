#include "state/rocksdb_card_store.h"

#include "state/rocksdb_partition.h"

namespace fraud::state {

RocksDbCardStore::RocksDbCardStore(std::unique_ptr<RocksDbPartition> disk, CacheBudget& budget,
                                   int32_t partition)
    : CardCache(*disk, budget, partition), disk_(std::move(disk)), log_(*disk_, cardCount()) {}

RocksDbCardStore::~RocksDbCardStore() {
  // Committed batches still go to disk, and all of this store's writes land before a later
  // store of the partition (or a restore, or clearPartition()) reads or writes it.
  log_.abort();
  (void)log_.writeCommitted();
}

const std::vector<CardChange>& RocksDbCardStore::takeCommitChanges() {
  const uint64_t seq = log_.beginTransaction(cardCount(), changedCount());
  takeChanged(seq, [this](const detectors::CardRef& ref, const detectors::CardState* state) {
    log_.add(ref, state);
  });
  return log_.transactionChanges();
}

void RocksDbCardStore::commitSucceeded(const PartitionCheckpoint& checkpoint) {
  log_.commitSucceeded(checkpoint);
}

void RocksDbCardStore::handOff() {
  log_.handOff();
  settle(disk_->written());
}

std::optional<std::string> RocksDbCardStore::writeCommitted() {
  if (auto error = log_.writeCommitted()) return error;
  settle(disk_->written());
  return std::nullopt;
}

std::optional<std::string> RocksDbCardStore::persist(const PartitionCheckpoint& checkpoint) {
  (void)takeCommitChanges();
  commitSucceeded(checkpoint);
  return writeCommitted();
}

bool RocksDbCardStore::discardChanges() {
  log_.abort();
  const bool written_all = !log_.writeCommitted().has_value();
  rollBack(disk_->written(), log_.committedCardCount(), written_all);
  return written_all;
}

std::optional<std::string> RocksDbCardStore::writeError() const { return disk_->writeError(); }

size_t RocksDbCardStore::diskScans() const { return disk_->scans(); }

}  // namespace fraud::state
