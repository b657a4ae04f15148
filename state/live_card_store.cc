#include "state/live_card_store.h"

namespace fraud::state {

LiveCardStore::LiveCardStore(std::unique_ptr<PartitionStorage> storage, CacheBudget& budget,
                             int32_t partition)
    : CardCache(*storage, budget, partition),
      storage_(std::move(storage)),
      log_(*storage_, cardCount()) {}

LiveCardStore::~LiveCardStore() {
  // Committed batches still go down, and all of this store's writes land before a later store
  // of the partition (or a restore, or clearing it) reads or writes the storage.
  log_.abort();
  (void)log_.writeCommitted();
}

const std::vector<CardChange>& LiveCardStore::takeCommitChanges() {
  const uint64_t seq = log_.beginTransaction(cardCount(), changedCount());
  takeChanged(seq, [this](const detectors::CardRef& ref, const detectors::CardState* state) {
    log_.add(ref, state);
  });
  return log_.transactionChanges();
}

void LiveCardStore::commitSucceeded(const PartitionCheckpoint& checkpoint) {
  log_.commitSucceeded(checkpoint);
}

void LiveCardStore::handOff() {
  log_.handOff();
  settle(storage_->written());
}

std::optional<std::string> LiveCardStore::writeCommitted() {
  if (auto error = log_.writeCommitted()) return error;
  settle(storage_->written());
  return std::nullopt;
}

std::optional<std::string> LiveCardStore::persist(const PartitionCheckpoint& checkpoint) {
  (void)takeCommitChanges();
  commitSucceeded(checkpoint);
  return writeCommitted();
}

bool LiveCardStore::discardChanges() {
  log_.abort();
  const bool written_all = !log_.writeCommitted().has_value();
  rollBack(storage_->written(), log_.committedCardCount(), written_all);
  return written_all;
}

std::optional<std::string> LiveCardStore::writeError() const { return storage_->writeError(); }

}  // namespace fraud::state
