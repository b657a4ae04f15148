#include "service/commit_coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace fraud::service {

CommitCoordinator::CommitCoordinator(
    Options options, TransactionalOutput& output, TaskManager& tasks,
    std::function<kafka::GroupMetadata()> group,
    std::function<void(rd_kafka_topic_partition_list_t*)> commit_offsets,
    std::function<uint64_t()> cached_bytes, IntervalMetrics& interval, ServiceMetrics* metrics)
    : options_(std::move(options)),
      output_(output),
      tasks_(tasks),
      group_(std::move(group)),
      commit_offsets_(std::move(commit_offsets)),
      cached_bytes_(std::move(cached_bytes)),
      interval_(interval),
      metrics_(metrics) {}

void CommitCoordinator::begin() {
  last_commit_started_ = Clock::now();
  uncommitted_records_ = 0;
  committing_.clear();
  auto offsets = kafka::makePartitionList();
  for (const auto& [p, task] : tasks_.tasks()) {
    const auto checkpoint = task->prepareCommit(output_, options_.changelog_topic);
    if (!checkpoint) continue;
    auto* offset =
        rd_kafka_topic_partition_list_add(offsets.get(), options_.input_topic.c_str(), p);
    offset->offset = checkpoint->next_offset;
    if (!options_.owner.empty()) {
      // librdkafka frees the metadata with the list.
      offset->metadata = malloc(options_.owner.size());
      std::memcpy(offset->metadata, options_.owner.data(), options_.owner.size());
      offset->metadata_size = options_.owner.size();
    }
    committing_.emplace_back(p, *checkpoint);
  }
  output_.startCommit(std::move(offsets), group_());
}

CommitCoordinator::Outcome CommitCoordinator::complete(TransactionalOutput::Result result) {
  if (result == TransactionalOutput::Result::kFatal) {
    fatal_ = true;
    producer_failed_ = true;
    committing_.clear();
    return Outcome::kFatal;
  }
  if (result == TransactionalOutput::Result::kAborted) {
    if (metrics_ != nullptr) metrics_->transactions.Add({{"result", "aborted"}}).Increment();
    committing_.clear();
    uncommitted_records_ = 0;
    interval_.clear();
    tasks_.rewindAll();
    return Outcome::kAborted;
  }
  auto offsets = kafka::makePartitionList();
  const auto& checkpoint_records = output_.committedCheckpointOffsets();
  for (const auto& [p, checkpoint] : committing_) {
    // A task revoked or rebuilt since the commit began has nothing more to learn from it.
    PartitionTask* task = tasks_.task(p);
    if (task == nullptr || !task->active()) continue;
    const auto record = checkpoint_records.find(p);
    task->markCommitted(checkpoint, record == checkpoint_records.end()
                                        ? std::nullopt
                                        : std::optional<int64_t>(record->second));
    rd_kafka_topic_partition_list_add(offsets.get(), options_.input_topic.c_str(), p)->offset =
        checkpoint.next_offset;
  }
  committing_.clear();
  // Committed state goes to the local disk in the background, every checkpoint interval or
  // sooner under cache pressure (only written entries may leave the cache).
  const auto now = Clock::now();
  if (now - last_persist_ >= options_.checkpoint_interval ||
      (cached_bytes_ && cached_bytes_() > options_.cache_pressure_bytes)) {
    last_persist_ = now;
    for (const auto& [p, task] : tasks_.tasks()) {
      if (auto error = task->handOffCommitted()) {
        spdlog::critical("partition {}: cannot write local checkpoint: {}", p, *error);
        fatal_ = true;
        return Outcome::kFatal;
      }
    }
  }
  if (options_.commit_offsets_outside_transaction && offsets->cnt > 0 && commit_offsets_) {
    commit_offsets_(offsets.get());
  }
  if (metrics_ != nullptr) {
    metrics_->transactions.Add({{"result", "committed"}}).Increment();
    metrics_->flush(interval_);
    metrics_->commit_duration.Observe(output_.lastCommitDuration().count());
  } else {
    interval_.clear();
  }
  return Outcome::kCommitted;
}

CommitCoordinator::Outcome CommitCoordinator::poll() {
  if (fatal_) return Outcome::kFatal;
  if (const auto result = output_.finishCommit(/*wait=*/false)) return complete(*result);
  return Outcome::kNone;
}

CommitCoordinator::Outcome CommitCoordinator::waitForCommit() {
  if (fatal_) return Outcome::kFatal;
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
      last_commit_started_ + options_.commit_interval - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(due.count(), 0, idle_ms));
}

CommitCoordinator::Outcome CommitCoordinator::maybeCommit() {
  if (fatal_) return Outcome::kFatal;
  const auto now = Clock::now();
  if (output_.committing() || uncommitted_records_ == 0 ||
      now - last_commit_started_ < options_.commit_interval) {
    return Outcome::kNone;
  }
  begin();
  return Outcome::kNone;
}

CommitCoordinator::Outcome CommitCoordinator::commitNow() {
  if (fatal_) return Outcome::kFatal;
  if (output_.committing()) {
    if (const Outcome done = waitForCommit(); done != Outcome::kCommitted) return done;
  }
  if (uncommitted_records_ == 0 && !output_.hasOpenWork()) return Outcome::kCommitted;
  begin();
  return waitForCommit();
}

CommitCoordinator::Outcome CommitCoordinator::abortUncommitted() {
  if (fatal_) return Outcome::kFatal;
  if (output_.committing()) {
    // Whatever that commit held is decided by the broker; take its result first.
    const Outcome done = waitForCommit();
    if (done == Outcome::kFatal || done == Outcome::kAborted) return done;
  }
  if (uncommitted_records_ == 0 && !output_.hasOpenWork()) return Outcome::kNone;
  if (output_.abort(/*outputs_failed=*/false) == TransactionalOutput::Result::kFatal) {
    fatal_ = true;
    producer_failed_ = true;
    return Outcome::kFatal;
  }
  uncommitted_records_ = 0;
  interval_.clear();
  tasks_.rewindAll();
  return Outcome::kAborted;
}

void CommitCoordinator::resumeWithNewProducer() {
  fatal_ = false;
  producer_failed_ = false;
  uncommitted_records_ = 0;
  committing_.clear();
  interval_.clear();  // counted only once committed: what was processed is processed again
  last_commit_started_ = Clock::now();
}

bool CommitCoordinator::persist(const std::vector<int32_t>& partitions) {
  // Only committed state goes to disk (the stores write committed batches alone), and nothing
  // after a fatal error.
  if (fatal_) return false;
  last_persist_ = Clock::now();
  bool ok = true;
  auto persistOne = [&](PartitionTask& task) {
    if (!task.active()) return;
    if (auto error = task.persist()) {
      // The changelog holds the truth; a restart restores this partition from it.
      spdlog::critical("partition {}: cannot write local checkpoint: {}", task.partition(), *error);
      ok = false;
    }
  };
  if (partitions.empty()) {
    for (const auto& [p, task] : tasks_.tasks()) persistOne(*task);
  } else {
    for (const int32_t p : partitions) {
      if (PartitionTask* task = tasks_.task(p)) persistOne(*task);
    }
  }
  return ok;
}

}  // namespace fraud::service
