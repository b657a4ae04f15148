#include "state/live_card_store.h"

#include "detectors/base/broken_invariant.h"

namespace fraud::state {

LiveCardStore::LiveCardStore(std::unique_ptr<PartitionStorage> storage, CacheBudget& budget,
                             int32_t partition)
    : CardCache(*storage, budget, partition),
      storage_(std::move(storage)),
      log_(*storage_, cardCount()) {}

LiveCardStore::~LiveCardStore() {
  if (closed_) return;
  // The owner did not close it: nobody hears of a failed final write but this count (the
  // partition's next owner restores from the changelog all the same).
  if (!close().ok()) base::countBrokenInvariant(base::Invariant::kCardStoreUnclosed);
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

base::Status LiveCardStore::handOff() {
  log_.handOff();
  settle(storage_->written());
  return storage_->writeStatus();
}

base::Status LiveCardStore::writeCommitted() {
  base::Status written = log_.writeCommitted();
  if (written.ok()) settle(storage_->written());
  return written;
}

base::Status LiveCardStore::persist(const PartitionCheckpoint& checkpoint) {
  (void)takeCommitChanges();
  commitSucceeded(checkpoint);
  return writeCommitted();
}

bool LiveCardStore::discardChanges() {
  log_.abort();
  const bool written_all = log_.writeCommitted().ok();
  rollBack(storage_->written(), log_.committedCardCount(), written_all);
  return written_all;
}

base::Status LiveCardStore::close() {
  if (closed_) return {};
  closed_ = true;
  log_.abort();
  return log_.writeCommitted();
}

}  // namespace fraud::state
