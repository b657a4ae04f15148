#include "service/task_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <exception>

namespace fraud::service {

TaskManager::TaskManager(const TaskContext& context, LocalState& state, InputControl& input,
                         RestoreQueue& restorer, const Clock& clock)
    : context_(context), state_(state), input_(input), restorer_(restorer), clock_(clock) {}

TaskManager::~TaskManager() = default;

PartitionTask* TaskManager::task(int32_t partition) const {
  base::ReaderMutexLock lock(mu_);
  const auto it = tasks_.find(partition);
  return it == tasks_.end() ? nullptr : it->second.get();
}

size_t TaskManager::taskCount() const {
  base::ReaderMutexLock lock(mu_);
  return tasks_.size();
}

std::vector<int32_t> TaskManager::partitions() const {
  base::ReaderMutexLock lock(mu_);
  std::vector<int32_t> result;
  result.reserve(tasks_.size());
  for (const auto& [p, task] : tasks_) result.push_back(p);
  return result;
}

void TaskManager::restoreUnder(const std::vector<int32_t>& partitions) {
  std::vector<std::pair<int32_t, uint64_t>> tickets;
  for (const int32_t p : partitions) {
    PartitionTask* t = task(p);
    if (t == nullptr) continue;
    const uint64_t ticket = next_ticket_++;
    t->restart(ticket);
    waiting_for_offset_.erase(p);
    retry_due_.erase(p);
    tickets.emplace_back(p, ticket);
  }
  if (tickets.empty()) return;
  input_.pause(partitions);
  restorer_.enqueue(tickets);
}

void TaskManager::assign(const std::vector<int32_t>& partitions) {
  if (standbys_ != nullptr) standbys_->release(partitions);
  {
    base::WriterMutexLock lock(mu_);
    for (const int32_t p : partitions) {
      // A partition assigned again without a revocation between (eager protocol) starts anew.
      restorer_.cancel(p);
      tasks_[p] = std::make_unique<PartitionTask>(p, context_, /*restore_ticket=*/0);
    }
  }
  restoreUnder(partitions);
}

void TaskManager::remove(const std::vector<int32_t>& partitions) {
  base::WriterMutexLock lock(mu_);
  for (const int32_t p : partitions) {
    restorer_.cancel(p);
    waiting_for_offset_.erase(p);
    restore_failures_.erase(p);
    retry_due_.erase(p);
    tasks_.erase(p);
    if (context_.lateness != nullptr) context_.lateness->forget(p);
  }
}

void TaskManager::scheduleRetry(const RestoreResult& failed) {
  const int failures = ++restore_failures_[failed.partition];
  const auto wait = std::min<std::chrono::milliseconds>(
      kFirstRestoreRetry * (int64_t{1} << std::min(failures - 1, 16)), kLastRestoreRetry);
  retry_due_[failed.partition] = clock_.now() + wait;
  if (failures == 1) {
    spdlog::error("{}; retrying in {} ms", failed.error.message(), wait.count());
  } else if (std::has_single_bit(static_cast<unsigned>(failures))) {
    spdlog::error("{}; retrying in {} ms ({} failures in a row)", failed.error.message(),
                  wait.count(), failures);
  }
}

std::vector<int32_t> TaskManager::takeDueRetries() {
  std::vector<int32_t> due;
  const auto now = clock_.now();
  for (auto it = retry_due_.begin(); it != retry_due_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    due.push_back(it->first);
    it = retry_due_.erase(it);
  }
  return due;
}

std::vector<int32_t> TaskManager::activateRestored() {
  for (auto& result : restorer_.takeCompleted()) {
    malformed_changelog_ += result.malformed;
    PartitionTask* t = task(result.partition);
    // Stale: revoked, already active, or restored again since this restore began.
    if (t == nullptr || t->active() || t->restoreTicket() != result.ticket) continue;
    if (!result.error.ok()) {
      scheduleRetry(result);
      continue;
    }
    restore_failures_.erase(result.partition);
    waiting_for_offset_[result.partition] = std::move(result);
  }
  if (const auto due = takeDueRetries(); !due.empty()) restoreUnder(due);

  std::vector<int32_t> activated;
  if (waiting_for_offset_.empty()) return activated;
  std::vector<int32_t> need_offsets;
  for (const auto& [p, result] : waiting_for_offset_) {
    if (!result.checkpoint) need_offsets.push_back(p);
  }
  const auto offsets =
      need_offsets.empty() ? std::map<int32_t, int64_t>{} : input_.startOffsets(need_offsets);
  for (auto it = waiting_for_offset_.begin(); it != waiting_for_offset_.end();) {
    const RestoreResult& result = it->second;
    state::PartitionCheckpoint checkpoint;
    if (result.checkpoint) {
      checkpoint = *result.checkpoint;
    } else if (const auto offset = offsets.find(it->first); offset != offsets.end()) {
      checkpoint.next_offset = offset->second;
    } else {
      ++it;  // the cluster did not say where this partition starts: ask again next time
      continue;
    }
    PartitionTask* t = task(it->first);
    RestoreResult done = std::move(it->second);
    it = waiting_for_offset_.erase(it);
    if (activate(*t, done, checkpoint)) activated.push_back(done.partition);
  }
  return activated;
}

bool TaskManager::activate(PartitionTask& t, RestoreResult& result,
                           const state::PartitionCheckpoint& checkpoint) {
  const int32_t p = t.partition();
  std::unique_ptr<state::LiveCardStore> store = std::move(result.store);
  try {
    if (!store) store = state_.cardStore(p);
  } catch (const detectors::CardStoreError& e) {
    spdlog::error("partition {}: local state unreadable ({}); rebuilding from the changelog", p,
                  e.what());
    rebuild(p);
    return false;
  }
  if (const base::Status sought = input_.seek(p, checkpoint.next_offset); !sought.ok()) {
    spdlog::error("partition {}: cannot seek to offset {} ({}); restoring again", p,
                  checkpoint.next_offset, sought.message());
    restoreUnder({p});
    return false;
  }
  if (!t.activate(std::move(store), checkpoint, result.records)) {
    spdlog::error("partition {}: local state unreadable; rebuilding from the changelog", p);
    rebuild(p);
    return false;
  }
  input_.resume(p);
  spdlog::info("partition {} restored ({} changelog records in {:.2f} s); consuming from offset {}",
               p, result.records, result.duration.count(), checkpoint.next_offset);
  return true;
}

void TaskManager::rewindAll() {
  ++rewind_epoch_;
  std::vector<int32_t> restores;
  std::vector<int32_t> rebuilds;
  {
    // The reader's lock: other readers go on; only this thread changes the map.
    base::ReaderMutexLock lock(mu_);
    for (auto& [p, t] : tasks_) {
      if (!t->active()) continue;
      switch (t->rewind()) {
        case PartitionTask::Rewound::kDone:
          if (const base::Status sought = input_.seek(p, t->nextOffset()); !sought.ok()) {
            spdlog::error("partition {}: cannot seek back to offset {} ({}); restoring it", p,
                          t->nextOffset(), sought.message());
            restores.push_back(p);
          }
          break;
        case PartitionTask::Rewound::kRestore:
          restores.push_back(p);
          break;
        case PartitionTask::Rewound::kRebuild:
          spdlog::error("partition {}: local state unreadable; rebuilding from the changelog", p);
          rebuilds.push_back(p);
          break;
      }
    }
  }
  if (!restores.empty()) restoreUnder(restores);
  for (const int32_t p : rebuilds) rebuild(p);
}

void TaskManager::rebuild(int32_t partition) {
  ++rewind_epoch_;
  if (task(partition) == nullptr) return;
  {
    // The store goes first: it must not write behind the cleared partition.
    PartitionTask* t = task(partition);
    t->restart(t->restoreTicket());
  }
  if (const auto cleared = state_.clearPartition(partition); !cleared.ok()) {
    spdlog::error("partition {}: cannot clear local state: {}", partition, cleared.message());
  }
  restoreUnder({partition});
}

void TaskManager::pauseAll() { input_.pause(partitions()); }

void TaskManager::resumeAll() {
  ++rewind_epoch_;
  std::vector<int32_t> restores;
  {
    base::ReaderMutexLock lock(mu_);
    for (auto& [p, t] : tasks_) {
      if (!t->active()) continue;  // resumed when its restore completes
      if (const base::Status sought = input_.seek(p, t->nextOffset()); !sought.ok()) {
        spdlog::error("partition {}: cannot seek to offset {} ({}); restoring it", p,
                      t->nextOffset(), sought.message());
        restores.push_back(p);
        continue;
      }
      input_.resume(p);
    }
  }
  if (!restores.empty()) restoreUnder(restores);
}

}  // namespace fraud::service
