#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detectors/base/status.h"
#include "detectors/card_ref.h"
#include "detectors/card_state.h"
#include "state/card_change.h"
#include "state/card_map.h"
#include "state/partition_checkpoint.h"

namespace fraud::state {

// The card changes of committed transactions, the latest per card (nothing: erased), with the
// checkpoint the last of them reaches: one write for the disk.
struct CommittedBatch {
  uint64_t seq = 0;  // the last transaction it covers
  CardMap<std::optional<std::string>> changes;
  PartitionCheckpoint checkpoint;
};

// Where committed batches go: the RocksDB store of the partition (tests: memory).
// Contract: batches land in the order given; after a failed batch no later one lands.
class CommittedBatchSink {
 public:
  virtual ~CommittedBatchSink() = default;
  // Starts writing `batch` after every batch given before; does not wait.
  virtual void write(std::unique_ptr<CommittedBatch> batch) = 0;
  // The seq of the last batch on disk (0: none yet).
  [[nodiscard]] virtual uint64_t written() const = 0;
  // Waits until batch `seq` (and every one before) is on disk: ok, or the failed write's error
  // (kIoError), which stopped it.
  [[nodiscard]] virtual base::Status waitWritten(uint64_t seq) = 0;
  // Ok, or the failed write's error (the disk refused it): no later batch lands. A getter rather
  // than write()'s result because write() does not wait: the error comes later from the thread
  // that writes, and a caller that does not wait (ChangeLog::handOff()) reads it here.
  [[nodiscard]] virtual base::Status writeStatus() const = 0;
};

// The change-logging layer of a partition's card store: what changed since the last commit,
// for the changelog (a transaction's staged changes), and what was committed, for the disk
// (coalesced per card until handed off to the sink below). It sees card states only when a
// transaction is staged, never per record. The disk thus only ever holds committed state, in
// commit order, each batch with its checkpoint.
// Not thread-safe: one thread at a time (the sink may write on another). The service runs no
// thread per partition: the store holding it is built on fd-warmer (on the ingest thread when the
// warmer could not), then the ingest thread calls it under PartitionTask::mu_; the HTTP threads
// read that store under the same mutex but never call the change log.
class ChangeLog {
 public:
  // The partition holds `card_count` cards, all on disk.
  ChangeLog(CommittedBatchSink& sink, size_t card_count)
      : sink_(sink), committed_card_count_(card_count) {}

  // Starts staging a transaction's changes (about `changes` of them), after which the
  // partition holds `card_count` cards. Its seq, which orders it among all batches.
  uint64_t beginTransaction(size_t card_count, size_t changes);
  // Adds a card's change to the transaction being staged: `state` encoded, or nullptr when
  // the card was erased.
  void add(const detectors::CardRef& card_ref, const detectors::CardState* state);
  // The changes of the transaction being staged (for the changelog topic).
  [[nodiscard]] const std::vector<CardChange>& transactionChanges() const;

  // Every staged transaction committed and reaches `checkpoint`: its changes may go to disk.
  void commitSucceeded(const PartitionCheckpoint& checkpoint);
  // Drops the staged transactions (an abort).
  void abort() { staged_.clear(); }
  // Gives the committed changes to the sink, unless it is still writing the last ones (they
  // then go on coalescing until the next call: a slow disk never grows a queue); no wait.
  void handOff();
  // Gives every committed change to the sink and waits until it is on disk: ok, or the write's
  // error (kIoError).
  [[nodiscard]] base::Status writeCommitted();

  // The partition's card count as of the last commit.
  [[nodiscard]] size_t committedCardCount() const { return committed_card_count_; }

 private:
  struct Transaction {
    uint64_t seq = 0;
    size_t card_count = 0;  // the partition's card count with these changes
    std::vector<CardChange> changes;
  };
  void submit();

  CommittedBatchSink& sink_;
  std::vector<Transaction> staged_;            // staged, not committed yet
  std::unique_ptr<CommittedBatch> committed_;  // committed, not handed off yet
  size_t committed_card_count_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t handed_seq_ = 0;  // the last batch given to the sink
};

}  // namespace fraud::state
