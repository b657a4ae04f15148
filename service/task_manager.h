#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "detectors/base/mutex.h"
#include "detectors/base/status.h"
#include "service/clock.h"
#include "service/local_state.h"
#include "service/partition_task.h"
#include "service/restore_queue.h"
#include "service/standby_replicas.h"
#include "state/state_db.h"

namespace fraud::service {

// What the task manager asks of the input consumer (KafkaInput over librdkafka; a fake in
// tests). Ingest thread only.
class InputControl {
 public:
  virtual ~InputControl() = default;
  virtual void pause(const std::vector<int32_t>& partitions) = 0;
  virtual void resume(int32_t partition) = 0;
  // Moves the fetch position; an error (librdkafka's reason, not logged: the caller logs it)
  // when librdkafka refuses.
  [[nodiscard]] virtual base::Status seek(int32_t partition, int64_t offset) = 0;
  // Where partitions without a state checkpoint start: the group's committed offset, else the
  // auto.offset.reset end of the partition. A partition the cluster gave no answer for is
  // missing from the result: ask again later, never guess.
  [[nodiscard]] virtual std::map<int32_t, int64_t> startOffsets(
      const std::vector<int32_t>& partitions) = 0;
};

// The assigned partitions' tasks (Kafka Streams' TaskManager): creates them on assignment,
// drops them on revocation or loss, activates them when their restore completes, and rewinds
// them after an abort.
//
// Every assignment, rewind-to-restore and rebuild enqueues a restore under a fresh ticket; a
// completed restore activates its task only when the ticket is the task's current one and the
// task is still restoring, so a partition revoked and assigned again during a restore is
// activated once, from the newer restore (which the restorer runs alone: the older one is
// abandoned, never reported; RestoreQueue::enqueue).
//
// A failed restore is retried after a wait that doubles from kFirstRestoreRetry up to
// kLastRestoreRetry while it keeps failing (a broker gone, a changelog the cluster refuses), and
// logged at its 1st, 2nd, 4th, 8th... failure in a row: a cluster that refuses for minutes costs
// a request every few seconds and a line a minute, not a request and a line every loop.
//
// Thread-safety: the ingest thread (which also runs the rebalance callbacks) calls everything
// but withTasks() and tryWithTasks(), which may be called from any thread. The map is guarded
// by mu_: it changes only under the writer's lock, and every read (the ingest thread's too)
// holds the reader's. Lock order: this lock, then a task's.
class TaskManager {
 public:
  using Tasks = std::map<int32_t, std::unique_ptr<PartitionTask>>;

  static constexpr std::chrono::milliseconds kFirstRestoreRetry{100};
  static constexpr std::chrono::milliseconds kLastRestoreRetry{5'000};

  // `state` gives the card stores a restore did not bring, and clears partitions to rebuild.
  TaskManager(const TaskContext& context, LocalState& state, InputControl& input,
              RestoreQueue& restorer, const Clock& clock = Clock::real());
  ~TaskManager();
  TaskManager(const TaskManager&) = delete;
  TaskManager& operator=(const TaskManager&) = delete;

  // Warm copies of partitions owned elsewhere (--standby-replicas); none by default. Set before
  // the first assignment.
  void setStandbys(StandbyReplicas* standbys) { standbys_ = standbys; }
  [[nodiscard]] StandbyReplicas* standbys() const { return standbys_; }

  // New tasks for these partitions, restoring; their input paused until activation. A warm
  // copy of one of them stops being written first, so its restore reads only the tail.
  void assign(const std::vector<int32_t>& partitions);
  // Drops these partitions' tasks (the caller committed or aborted what they did first).
  void remove(const std::vector<int32_t>& partitions);
  // Activates tasks whose restore completed: opens their store, seeks their input to the
  // checkpoint and resumes it. Failed restores and unanswered start offsets are retried.
  // Returns the partitions activated.
  std::vector<int32_t> activateRestored();
  // Catches the warm copies up when a round is due (no-op without standby replicas).
  void maintainStandbys() {
    if (standbys_ != nullptr) standbys_->tick(partitions());
  }
  // After an abort: every active task back to its last committed checkpoint, locally or by a
  // restore from the changelog. Bumps rewindEpoch().
  void rewindAll();
  // The partition's local state cannot be read: drop it and restore it from the changelog.
  void rebuild(int32_t partition);
  // Input of every partition paused (a commit must go through first), and resumed: each active
  // task's input then continues at the task's position (records fetched past it were dropped).
  // resumeAll() bumps rewindEpoch().
  void pauseAll();
  void resumeAll();

  // The task of `partition`, or nullptr. Valid on the ingest thread until it removes the task.
  [[nodiscard]] PartitionTask* task(int32_t partition) const FRAUD_EXCLUDES(mu_);
  [[nodiscard]] size_t taskCount() const FRAUD_EXCLUDES(mu_);
  [[nodiscard]] std::vector<int32_t> partitions() const FRAUD_EXCLUDES(mu_);
  // Changes whenever positions move back: records fetched before then must not be processed.
  [[nodiscard]] uint64_t rewindEpoch() const { return rewind_epoch_; }
  // Changelog records the restores found malformed since the last call.
  [[nodiscard]] uint64_t takeMalformedChangelogRecords() {
    return std::exchange(malformed_changelog_, 0);
  }

  // Any thread: `visit(const std::map<int32_t, std::unique_ptr<PartitionTask>>&)` under the
  // reader's lock. Off the ingest thread, tasks are only read through their thread-safe
  // methods; `visit` must not assign or remove tasks (the lock is not reentrant).
  template <typename Visit>
  auto withTasks(Visit&& visit) const FRAUD_EXCLUDES(mu_) {
    base::ReaderMutexLock lock(mu_);
    return visit(tasks_);
  }
  // The same without waiting, for a `visit` that returns a std::optional: nothing when the
  // map is being changed (the writer's lock is held, e.g. while a revoked task's store
  // finishes its writes to disk).
  template <typename Visit>
  auto tryWithTasks(Visit&& visit) const FRAUD_EXCLUDES(mu_) {
    using Result = std::invoke_result_t<Visit&, const Tasks&>;
    if (!mu_.try_lock_shared()) return Result{};
    try {
      Result result = visit(tasks_);
      mu_.unlock_shared();
      return result;
    } catch (...) {
      mu_.unlock_shared();
      throw;
    }
  }

 private:
  void restoreUnder(const std::vector<int32_t>& partitions);
  // Schedules the partition's restore again after its failure: when, and whether to log it.
  void scheduleRetry(const RestoreResult& failed);
  // The partitions whose retry is due, taken off the schedule.
  [[nodiscard]] std::vector<int32_t> takeDueRetries();
  [[nodiscard]] bool activate(PartitionTask& task, RestoreResult& result,
                              const state::PartitionCheckpoint& checkpoint);

  const TaskContext& context_;
  LocalState& state_;
  InputControl& input_;
  RestoreQueue& restorer_;
  const Clock& clock_;
  StandbyReplicas* standbys_ = nullptr;

  mutable base::SharedMutex mu_;
  Tasks tasks_ FRAUD_GUARDED_BY(mu_);
  // The ingest thread's own, as the members below.
  std::map<int32_t, RestoreResult> waiting_for_offset_;
  // Per partition, its restores failed in a row (until one succeeds), and when the next one is
  // due while it waits for it.
  std::map<int32_t, int> restore_failures_;
  std::map<int32_t, Clock::TimePoint> retry_due_;
  uint64_t next_ticket_ = 1;
  uint64_t rewind_epoch_ = 0;
  uint64_t malformed_changelog_ = 0;
};

}  // namespace fraud::service
