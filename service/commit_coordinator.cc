#include "service/commit_coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace fraud::service {

CommitCoordinator::CommitCoordinator(Options options, TransactionSink& output, TaskManager& tasks,
                                     std::function<void(const InputOffsets&)> commit_offsets,
                                     std::function<uint64_t()> cached_bytes,
                                     IntervalMetrics& interval, ServiceMetrics* metrics,
                                     const Clock& clock)
    : options_(std::move(options)),
      output_(output),
      tasks_(tasks),
      commit_offsets_(std::move(commit_offsets)),
      cached_bytes_(std::move(cached_bytes)),
      interval_(interval),
      metrics_(metrics),
      clock_(clock),
      last_commit_started_(clock.now()),
      last_persist_(last_commit_started_) {}

void CommitCoordinator::begin() {
  last_commit_started_ = clock_.now();
  uncommitted_records_ = 0;
  InputOffsets offsets{options_.input_topic, options_.owner, {}};
  // Each task that prepares is kPrepared until it hears the result: the commit's members.
  tasks_.withTasks([&](const TaskManager::Tasks& tasks) {
    for (const auto& [p, task] : tasks) {
      if (auto position = task->prepareCommit(output_, options_.changelog_topic)) {
        offsets.offsets.push_back(*position);
      }
    }
  });
  output_.startCommit(std::move(offsets));
}

CommitCoordinator::Outcome CommitCoordinator::failed(TransactionResult result) {
  if (result == TransactionResult::kFatal) {
    // The tasks stay kPrepared: nothing commits again until they are closed (producer
    // recovery closes every task before resumeWithNewProducer()).
    failure_ = Failure::kProducer;
    return Outcome::kFatal;
  }
  if (metrics_ != nullptr) metrics_->transactions.Add({{"result", "aborted"}}).Increment();
  uncommitted_records_ = 0;
  interval_.clear();
  tasks_.rewindAll();
  return Outcome::kAborted;
}

bool CommitCoordinator::persistDue() {
  // Committed state goes to the local disk in the background, every checkpoint interval or
  // sooner under cache pressure (only written entries may leave the cache).
  const auto now = clock_.now();
  if (now - last_persist_ < options_.checkpoint_interval &&
      !(cached_bytes_ && cached_bytes_() > options_.cache_pressure_bytes)) {
    return false;
  }
  last_persist_ = now;
  return true;
}

CommitCoordinator::Outcome CommitCoordinator::complete(const FinishedCommit& finished) {
  if (finished.result != TransactionResult::kCommitted) return failed(finished.result);
  InputOffsets committed{options_.input_topic, {}, {}};
  // One walk: each prepared task takes the result down its store (change log, then the cache
  // once batches are on disk), and every task hands its committed state to the disk writer
  // when due. A task revoked, rewound or rebuilt since the commit began is no longer prepared
  // and has nothing more to learn from it.
  const bool hand_off = persistDue();
  const bool written = tasks_.withTasks([&](const TaskManager::Tasks& tasks) {
    bool ok = true;
    for (const auto& [p, task] : tasks) {
      const auto record = finished.checkpoint_offsets.find(p);
      const PartitionTask::CommitApplied applied = task->markCommitted(
          record == finished.checkpoint_offsets.end() ? std::nullopt
                                                      : std::optional<int64_t>(record->second),
          hand_off && ok);
      if (applied.committed) committed.offsets.push_back(*applied.committed);
      if (!applied.written.ok()) {
        spdlog::critical("partition {}: cannot write local checkpoint: {}", p,
                         applied.written.message());
        ok = false;  // no later task hands off: nothing is persisted after a fatal error
      }
    }
    return ok;
  });
  if (!written) {
    failure_ = Failure::kDisk;
    return Outcome::kFatal;
  }
  if (options_.commit_offsets_outside_transaction && !committed.offsets.empty() &&
      commit_offsets_) {
    commit_offsets_(committed);
  }
  if (metrics_ != nullptr) {
    metrics_->transactions.Add({{"result", "committed"}}).Increment();
    metrics_->flush(interval_);
    metrics_->commit_duration.Observe(finished.duration.count());
  } else {
    interval_.clear();
  }
  return Outcome::kCommitted;
}

CommitCoordinator::Outcome CommitCoordinator::poll() {
  if (fatal()) return Outcome::kFatal;
  if (const auto result = output_.finishCommit(/*wait=*/false)) return complete(*result);
  return Outcome::kNone;
}

CommitCoordinator::Outcome CommitCoordinator::waitForCommit() {
  if (fatal()) return Outcome::kFatal;
  if (const auto result = output_.finishCommit(/*wait=*/true)) return complete(*result);
  return Outcome::kNone;
}

bool CommitCoordinator::mustWait() const {
  return output_.committing() && (output_.heldBytes() > options_.max_held_bytes ||
                                  uncommitted_records_ > options_.max_held_records);
}

int CommitCoordinator::pollTimeoutMs(int idle_ms) const {
  if (output_.committing()) return std::min(idle_ms, 5);
  if (uncommitted_records_ == 0) return idle_ms;
  const auto due = std::chrono::duration_cast<std::chrono::milliseconds>(
      last_commit_started_ + options_.commit_interval - clock_.now());
  return static_cast<int>(std::clamp<int64_t>(due.count(), 0, idle_ms));
}

CommitCoordinator::Outcome CommitCoordinator::maybeCommit() {
  if (fatal()) return Outcome::kFatal;
  const auto now = clock_.now();
  if (output_.committing() || uncommitted_records_ == 0 ||
      now - last_commit_started_ < options_.commit_interval) {
    return Outcome::kNone;
  }
  begin();
  return Outcome::kNone;
}

CommitCoordinator::Outcome CommitCoordinator::commitNow() {
  if (fatal()) return Outcome::kFatal;
  if (output_.committing()) {
    if (const Outcome done = waitForCommit(); done != Outcome::kCommitted) return done;
  }
  if (uncommitted_records_ == 0 && !output_.hasOpenWork()) return Outcome::kCommitted;
  begin();
  return waitForCommit();
}

CommitCoordinator::Outcome CommitCoordinator::abortUncommitted() {
  if (fatal()) return Outcome::kFatal;
  if (output_.committing()) {
    // Whatever that commit held is decided by the broker; take its result first.
    const Outcome done = waitForCommit();
    if (done == Outcome::kFatal || done == Outcome::kAborted) return done;
  }
  if (uncommitted_records_ == 0 && !output_.hasOpenWork()) return Outcome::kNone;
  if (output_.abort(/*outputs_failed=*/false) == TransactionResult::kFatal) {
    failure_ = Failure::kProducer;
    return Outcome::kFatal;
  }
  uncommitted_records_ = 0;
  interval_.clear();
  tasks_.rewindAll();
  return Outcome::kAborted;
}

void CommitCoordinator::resumeWithNewProducer() {
  failure_ = Failure::kNone;
  uncommitted_records_ = 0;
  interval_.clear();  // counted only once committed: what was processed is processed again
  last_commit_started_ = clock_.now();
}

bool CommitCoordinator::persist(const std::vector<int32_t>& partitions) {
  // Only committed state goes to disk (the stores write committed batches alone), and nothing
  // after a fatal error.
  if (fatal()) return false;
  last_persist_ = clock_.now();
  bool ok = true;
  auto persistOne = [&](PartitionTask& task) {
    if (!task.active()) return;
    if (const base::Status persisted = task.persist(); !persisted.ok()) {
      // The changelog holds the truth; a restart restores this partition from it.
      spdlog::critical("partition {}: cannot write local checkpoint: {}", task.partition(),
                       persisted.message());
      ok = false;
    }
  };
  if (partitions.empty()) {
    tasks_.withTasks([&](const TaskManager::Tasks& tasks) {
      for (const auto& [p, task] : tasks) persistOne(*task);
    });
  } else {
    for (const int32_t p : partitions) {
      if (PartitionTask* task = tasks_.task(p)) persistOne(*task);
    }
  }
  return ok;
}

}  // namespace fraud::service
