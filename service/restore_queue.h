#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detectors/base/status.h"
#include "state/state_db.h"

namespace fraud::service {

struct RestoreResult {
  int32_t partition = 0;
  uint64_t ticket = 0;  // as given to enqueue()
  // None: the partition has no state yet, or its last checkpoint record was rejected.
  std::optional<state::PartitionCheckpoint> checkpoint;
  uint64_t records = 0;  // changelog records applied
  // Changelog records that did not decode (their cards dropped) or were rejected, and a local
  // checkpoint rejected.
  uint64_t malformed = 0;
  int64_t changelog_start = 0;  // the changelog offset the restore read from
  int64_t changelog_end = 0;    // the changelog's high watermark when it began
  int64_t changelog_next = 0;   // the next changelog offset it did not apply
  // The partition's local state was being written by another restore (a standby catch-up
  // gives way to the active one): nothing was done; not an error.
  bool busy = false;
  std::chrono::duration<double> duration{};
  base::Status error;  // not ok: the restore failed; retry it
  // An active restore's partition store, its card cache warmed (ChangelogRestorer builds it on
  // its own thread); none for a standby, on failure, or when it could not be built.
  std::unique_ptr<state::RocksDbCardStore> store;
};

// What the task manager asks of the changelog restorer (ChangelogRestorer; a fake in tests).
// Each restore carries the ticket it was enqueued with, so a result that arrives for an older
// incarnation of a partition (revoked and assigned again meanwhile) is recognised as stale.
// Thread-safety: every method may be called from any thread.
class RestoreQueue {
 public:
  virtual ~RestoreQueue() = default;
  // Restores each partition under its ticket. A partition queued or restoring under an older
  // ticket is superseded: that restore is dropped from the queue, or abandoned soon, and never
  // reported.
  virtual void enqueue(const std::vector<std::pair<int32_t, uint64_t>>& partition_tickets) = 0;
  // Stops restoring `partition` (revoked): it is dropped from the queue, or abandoned soon.
  virtual void cancel(int32_t partition) = 0;
  [[nodiscard]] virtual std::vector<RestoreResult> takeCompleted() = 0;
  // 0..1 for a queued or running restore; nothing for a partition not being restored.
  [[nodiscard]] virtual std::optional<double> progress(int32_t partition) const = 0;
};

}  // namespace fraud::service
