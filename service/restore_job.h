#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "service/partition_leases.h"
#include "service/restore_queue.h"
#include "state/state_db.h"

namespace fraud::service {

// One partition's restore from the changelog, as ChangelogRestorer runs it: where the read
// starts, the changelog records applied to the partition's state::PartitionRestore, and the
// RestoreResult it ends with.
//
// It starts at the local checkpoint, or at the changelog's start when the partition has none,
// when that checkpoint does not decode, or when it lies outside the changelog (topic recreated,
// offset compacted away); in the last two cases the partition's local cards are cleared first.
// It ends at the changelog's high watermark as it was when it began, waiting past the end of
// the committed data for a transaction left open. Hostile records never end it: a card record
// that does not decode is counted and its card dropped (as if erased), an unknown key is counted
// and skipped. A checkpoint that PartitionCheckpoint::decode() refuses (not of this version, or
// a value out of bounds) is counted, logged and never adopted: a local one makes the restore
// rebuild the partition from the changelog's start (as above); a record voids the checkpoint
// read before it too (the cards after it belong to commits that one does not describe), so
// unless a later record gives one the result has no checkpoint, like a partition that never had
// one (the task manager starts it at the group's committed offset, with no stream time). The
// last checkpoint record read, else the local one, is the result's checkpoint, moved to the next
// changelog offset.
//
// Thread-safety: none; used by the restorer's thread alone.
class RestoreJob {
 public:
  // `log_open_transaction_waits`: say in the log when an open transaction holds the restore
  // for long (the active restore; a standby catch-up meets the live owner's every round).
  RestoreJob(state::StateDb& db, int32_t partition, uint64_t ticket,
             bool log_open_transaction_waits);

  // Holds `lease` until the job ends, reads the local checkpoint and decides where the read
  // starts in the changelog's offsets [low, high). The result when the job ended there: nothing
  // to read, or the disk failed.
  [[nodiscard]] std::optional<RestoreResult> begin(PartitionLeases::Lease lease, int64_t low,
                                                   int64_t high);
  // Applies one message of the partition's changelog (after begin()); the result when that
  // ended the job: the end reached, a consumer error, or the disk failed.
  [[nodiscard]] std::optional<RestoreResult> apply(const rd_kafka_message_t& message);
  // Ends the job as failed with `error` (any time).
  [[nodiscard]] RestoreResult fail(const base::Status& error);
  // Ends the job without a result (cancelled, or not begun): nothing more is written.
  void abandon();

  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] int32_t partition() const { return partition_; }
  [[nodiscard]] uint64_t ticket() const { return ticket_; }
  // The changelog offset the read starts at (set by begin()).
  [[nodiscard]] int64_t start() const { return start_; }
  // How much of [start, end) has been read, 0..1; none once done.
  [[nodiscard]] std::optional<double> progress() const;

 private:
  // Writes what was restored (unless `error`), releases the lease; the result.
  [[nodiscard]] RestoreResult finish(base::Status error);
  // The local checkpoint does not match the changelog, or cannot be read: clears the
  // partition's local state to take everything from `low`. An error when the disk refused.
  [[nodiscard]] base::Status rebuildFrom(int64_t low);
  [[nodiscard]] std::optional<RestoreResult> applyEndOfData(const rd_kafka_message_t& message);
  [[nodiscard]] std::optional<RestoreResult> applyCard(const rd_kafka_message_t& message);
  void applyCheckpoint(const rd_kafka_message_t& message);

  state::StateDb& db_;
  int32_t partition_;
  uint64_t ticket_;
  bool log_open_transaction_waits_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::optional<state::PartitionCheckpoint> local_;   // the checkpoint on disk before the restore
  std::optional<state::PartitionCheckpoint> latest_;  // the last checkpoint record read
  bool checkpoint_rejected_ = false;                  // the last checkpoint record read was refused
  int64_t start_ = 0;
  int64_t end_ = 0;   // the changelog's high watermark when the restore began
  int64_t next_ = 0;  // the next changelog offset to apply
  uint64_t records_ = 0;
  uint64_t malformed_ = 0;
  std::unique_ptr<state::PartitionRestore> writer_;  // made by begin()
  PartitionLeases::Lease lease_;                     // held from begin() until the job ends
  bool done_ = false;
  bool waiting_noticed_ = false;  // logged that an open transaction holds it
};

}  // namespace fraud::service
