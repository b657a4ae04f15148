#include "state/change_log.h"

#include "state/card_state_codec.h"

namespace fraud::state {

uint64_t ChangeLog::beginTransaction(size_t card_count, size_t changes) {
  Transaction& transaction = staged_.emplace_back();
  transaction.seq = next_seq_++;
  transaction.card_count = card_count;
  transaction.changes.reserve(changes);
  return transaction.seq;
}

void ChangeLog::add(const detectors::CardRef& card_ref, const detectors::CardState* state) {
  auto& changes = staged_.back().changes;
  if (state == nullptr) {
    changes.push_back(CardChange{card_ref, std::nullopt});
    return;
  }
  CardChange& change = changes.emplace_back(CardChange{card_ref, std::string()});
  encodeCardState(*state, *change.encoded);
}

const std::vector<CardChange>& ChangeLog::transactionChanges() const {
  return staged_.back().changes;
}

void ChangeLog::commitSucceeded(const PartitionCheckpoint& checkpoint) {
  if (!committed_) committed_ = std::make_unique<CommittedBatch>();
  for (auto& transaction : staged_) {
    for (auto& change : transaction.changes) {
      bool inserted = false;
      committed_->changes.insert(change.card_ref, inserted) = std::move(change.encoded);
    }
    committed_->seq = transaction.seq;
    committed_card_count_ = transaction.card_count;
  }
  if (staged_.empty()) committed_->seq = next_seq_++;  // a checkpoint alone
  staged_.clear();
  committed_->checkpoint = checkpoint;
}

void ChangeLog::submit() {
  if (!committed_) return;
  handed_seq_ = committed_->seq;
  sink_.write(std::move(committed_));
}

void ChangeLog::handOff() {
  if (sink_.written() >= handed_seq_) submit();
}

base::Status ChangeLog::writeCommitted() {
  // The sink writes in the order given: what handOff() held back may follow the batch in flight.
  submit();
  return sink_.waitWritten(handed_seq_);
}

}  // namespace fraud::state
