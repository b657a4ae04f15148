#include "service/stream_thread.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace fraud::service {
namespace {

constexpr int kPollMs = 50;
constexpr size_t kConsumeBatch = 1024;
constexpr auto kGaugeInterval = std::chrono::seconds(1);
// How long a stop waits for its hand-over's revocation at most (within the stop's deadline).
constexpr auto kHandOverWait = std::chrono::seconds(5);

std::vector<int32_t> partitionsOf(const rd_kafka_topic_partition_list_t* list) {
  std::vector<int32_t> result;
  for (int i = 0; i < list->cnt; ++i) result.push_back(list->elems[i].partition);
  return result;
}

}  // namespace

StreamThread::StreamThread(const ServiceConfig& config, Clients clients, TaskManager& tasks,
                           CommitCoordinator& commits, RebalanceListener& rebalances,
                           IntervalMetrics& interval, RestoreQueue& restorer, StateQuery& query,
                           LocalState& state, ServiceMetrics& metrics, const Clock& clock,
                           ProducerRecovery* recovery)
    : config_(config),
      clients_(clients),
      tasks_(tasks),
      commits_(commits),
      rebalances_(rebalances),
      interval_(interval),
      restorer_(restorer),
      query_(query),
      state_(state),
      metrics_(metrics),
      clock_(clock),
      recovery_(recovery),
      consumer_(*clients.consumer) {
  batch_.reserve(kConsumeBatch);
  stamps_.reserve(kConsumeBatch);
}

int StreamThread::run(const std::atomic<bool>& stop) {
  if (const base::Status joined = rebalances_.join(); !joined.ok()) {
    spdlog::error("cannot subscribe to {}: {}", config_.input_topic, joined.message());
    return 1;
  }
  spdlog::info("consuming {} as group {} (instance {})", config_.input_topic, config_.group_id,
               config_.instance_id);

  // Records come in batches: up to kConsumeBatch polled without waiting after the first. Each
  // record gets its own clock readings (at its poll, before its processing) and its own queue
  // histogram entry (and fetch entry, when it carries a create time); only the processing histogram
  // is per batch: one timing of the batch, entered as the mean per record processed. One poll per
  // record, not rd_kafka_consume_batch_queue(): a rebalance callback served inside that one call
  // could rewind a partition between two of its records, and collect() could no longer tell the
  // records fetched before the rewind (stale) from those after it; librdkafka 2.0.2 also drops
  // records of partitions it keeps when an incremental rebalance lands during the call.
  while (!stop.load()) {
    if (consumerFailed()) break;
    if (commits_.fatal() && !recoverFromFatal()) break;
    for (const int32_t p : tasks_.activateRestored()) {
      metrics_.restore_progress.Add({{"partition", std::to_string(p)}}).Set(1);
    }
    tasks_.maintainStandbys();
    if (commits_.poll() == CommitCoordinator::Outcome::kFatal) continue;
    releaseHeldInput();
    collect(commits_.pollTimeoutMs(kPollMs));
    if (!batch_.empty()) {
      const auto started = clock_.now();
      const uint64_t epoch = tasks_.rewindEpoch();
      size_t processed = 0;
      for (size_t i = 0; i < batch_.size(); ++i) {
        if (tasks_.rewindEpoch() == epoch && !commits_.fatal() && !input_held_ &&
            handle(batch_[i], stamps_[i])) {
          ++processed;
        }
      }
      releaseBatch();
      if (processed > 0) {
        const double seconds = std::chrono::duration<double>(clock_.now() - started).count();
        interval_.processing.observe(seconds / static_cast<double>(processed), processed);
      }
    }
    commits_.serveDeliveries();
    if (clients_.alerts != nullptr) clients_.alerts->serveDeliveries();
    if (commits_.maybeCommit() == CommitCoordinator::Outcome::kFatal) continue;
    query_.setOutputsBlocked(commits_.blocked());
    if (clock_.now() - last_gauges_ >= kGaugeInterval) refreshGauges();
  }
  return shutdown();
}

void StreamThread::collect(int timeout_ms) {
  uint64_t epoch = tasks_.rewindEpoch();
  PolledInput polled;
  for (bool got = consumer_.poll(timeout_ms, polled); got; got = consumer_.poll(0, polled)) {
    if (tasks_.rewindEpoch() != epoch) {
      // A rebalance callback inside that poll moved positions back: what was collected before
      // it was fetched from the old positions and will be fetched again.
      releaseBatch();
      epoch = tasks_.rewindEpoch();
    }
    batch_.push_back(polled);
    stamps_.push_back(Stamp{clock_.now(), clock_.wallMs()});
    if (batch_.size() == kConsumeBatch) break;
  }
}

void StreamThread::releaseBatch() {
  if (batch_.empty()) return;
  consumer_.release(batch_);
  batch_.clear();
  stamps_.clear();
}

bool StreamThread::handle(const PolledInput& polled, const Stamp& stamp) {
  switch (polled.kind) {
    case PolledInput::Kind::kRecord:
      break;
    case PolledInput::Kind::kError:
      spdlog::warn("consumer: {}", polled.error);
      return false;
    case PolledInput::Kind::kPartitionEnd:
    case PolledInput::Kind::kFatal:  // acted on by consumerFailed(), at the loop's top
      return false;
  }
  PartitionTask* task = tasks_.task(polled.partition);
  // Records of a partition not held, still restoring, or fetched before a seek are read again.
  if (task == nullptr) return false;
  const InputRecord& record = polled.record;
  if (polled.create_time && record.timestamp_ms) {
    interval_.fetch.observe(
        static_cast<double>(std::max<int64_t>(0, stamp.at_wall_ms - *record.timestamp_ms)) /
        1000.0);
  }
  interval_.queue.observe(std::chrono::duration<double>(clock_.now() - stamp.at).count());
  switch (task->process(record)) {
    case PartitionTask::Processed::kSkipped:
      return false;
    case PartitionTask::Processed::kStoreFailed:
      spdlog::error("partition {}: local state unreadable at offset {}; rebuilding it",
                    polled.partition, record.offset);
      if (commits_.abortUncommitted() != CommitCoordinator::Outcome::kFatal) {
        tasks_.rebuild(polled.partition);
      }
      return false;
    case PartitionTask::Processed::kDone:
      break;
  }
  commits_.recordProcessed();
  if (commits_.mustWait() && !input_held_) {
    // Output held during the commit passed its bound: input waits for the commit. The loop goes
    // on polling the consumer meanwhile (with every partition paused), so a commit that takes
    // long (a coordinator outage) never costs the group membership (max.poll.interval.ms).
    input_held_ = true;
    held_since_ = clock_.now();
    tasks_.pauseAll();
  }
  return true;
}

void StreamThread::releaseHeldInput() {
  if (!input_held_ || commits_.committing()) return;
  input_held_ = false;
  // Records fetched after the one that filled the bound were dropped: read from each task's
  // position again.
  tasks_.resumeAll();
  metrics_.ingest_wait_held_output.Observe(
      std::chrono::duration<double>(clock_.now() - held_since_).count());
}

std::string StreamThread::producerFailure() const {
  if (auto error = clients_.producer->fatalError(); !error.ok()) return error.message();
  if (clients_.alerts != nullptr && clients_.alerts->failed()) {
    return "the immediate alerts' producer failed";
  }
  return "a transactional call failed for good";
}

bool StreamThread::recoverFromFatal() {
  if (recovery_ == nullptr || !commits_.producerFailed()) return false;
  const std::string reason = producerFailure();
  if (!ProducerRecovery::curable(clients_.producer->fatalCode())) {
    spdlog::critical(
        "producer failed for good ({}): the cluster refuses this instance; not "
        "replacing it (fix the ACLs, then restart)",
        reason);
    return false;
  }
  // Every task closed dirty, as if its partition were lost: what it did since its last commit
  // is thrown away with it, and local disk only ever took committed state.
  const bool fenced = ProducerRecovery::fenced(clients_.producer->fatalCode());
  const std::vector<int32_t> held = rebalances_.closeAllDirty();
  input_held_ = false;  // the new tasks resume their input as they are restored
  if (!recovery_->recover(reason)) return false;
  commits_.resumeWithNewProducer();
  if (fenced) {
    // Another producer took our transactional id: a survivor fenced us after the group gave it
    // our partitions (we were paused past the session timeout, say). What we held may be its
    // now, so nothing is reopened: the consumer rejoins, and the new assignment says what is
    // ours.
    spdlog::warn(
        "recovered from the producer failure: fenced, so rejoining the group; tasks come back "
        "with the new assignment ({} partition(s) held before)",
        held.size());
    if (const base::Status rejoined = rebalances_.rejoin(); !rejoined.ok()) {
      spdlog::error("cannot subscribe to {}: {}", config_.input_topic, rejoined.message());
      return false;
    }
    return true;
  }
  // The same partitions, taken again from their committed checkpoints and the changelog.
  rebalances_.reopen(held);
  spdlog::warn("recovered from the producer failure: restoring {} partition(s)", held.size());
  return true;
}

bool StreamThread::consumerFailed() {
  if (consumer_failed_) return true;
  const base::Status error = consumer_.fatalError();
  if (error.ok()) return false;
  consumer_failed_ = true;
  // librdkafka's consumer cannot go on after a fatal error (FENCED_INSTANCE_ID: another process
  // joined with our group.instance.id). Stop serving at once: no task answers or commits from
  // here on, readiness fails, and the run ends with status 1 for the supervisor to restart us.
  spdlog::critical(
      "consumer failed for good ({}): stopping; two processes with one --instance-id "
      "(group.instance.id) fence each other, give each its own",
      error.message());
  (void)rebalances_.closeAllDirty();
  input_held_ = false;
  query_.setJoined(false);
  return true;
}

void StreamThread::rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions) {
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    rebalances_.onAssigned(partitionsOf(partitions));
  } else {
    rebalances_.onRevoked(partitionsOf(partitions));
  }
}

void StreamThread::handOverToStandbys(Clock::TimePoint deadline) {
  StandbyReplicas* standbys = tasks_.standbys();
  const std::vector<int32_t> held = tasks_.partitions();
  if (!config_.static_membership || standbys == nullptr || !standbys->copiedElsewhere(held)) {
    return;
  }
  spdlog::info(
      "handing {} partition(s) over to the members that keep their standby copies (leaving the "
      "group rather than holding them under static membership)",
      held.size());
  // Unsubscribing revokes every partition (the callback, served by the polls below) and sends a
  // LeaveGroup once that is through: the group reassigns them now, not at the session timeout.
  // (Left to the close, a static member's leave is skipped.)
  if (const auto error = consumer_.unsubscribe(); !error.ok()) {
    spdlog::warn("hand-over: unsubscribe: {}; holding the partitions until we are back",
                 error.message());
    return;
  }
  PolledInput polled;
  const auto until = std::min(deadline, clock_.now() + kHandOverWait);
  while (!tasks_.partitions().empty() && clock_.now() < until) {
    if (consumer_.poll(kPollMs, polled)) {
      consumer_.release({&polled, 1});  // fetched before the revocation: not processed
    }
  }
  // One more poll lets the LeaveGroup go out before the close terminates the group handling.
  if (consumer_.poll(kPollMs, polled)) consumer_.release({&polled, 1});
}

void StreamThread::refreshGauges() {
  last_gauges_ = clock_.now();
  const double now_s = clock_.wallSeconds();
  tasks_.withTasks([&](const TaskManager::Tasks& tasks) {
    for (const auto& [p, task] : tasks) {
      const std::string label = std::to_string(p);
      if (!task->active()) {
        if (const auto progress = restorer_.progress(p)) {
          task->setRestoreProgress(*progress);
          metrics_.restore_progress.Add({{"partition", label}}).Set(*progress);
        }
        continue;
      }
      if (const auto high = consumer_.cachedHighWatermark(p)) task->setHighWatermark(*high);
      const auto status = task->status(now_s);
      if (status.stream_time_ms) {
        const double st = static_cast<double>(*status.stream_time_ms) / 1000.0;
        metrics_.stream_time.Add({{"partition", label}}).Set(st);
        metrics_.event_time_lag.Add({{"partition", label}}).Set(now_s - st);
      }
      if (status.offset_lag) {
        metrics_.offset_lag.Add({{"partition", label}})
            .Set(static_cast<double>(*status.offset_lag));
      }
      metrics_.state_cards.Add({{"partition", label}}).Set(static_cast<double>(status.cards));
    }
  });
  refreshStandbyGauges();
  metrics_.state_bytes.Set(static_cast<double>(state_.diskBytes()));
  metrics_.state_cache_bytes.Set(static_cast<double>(state_.cachedBytes()));
  if (const uint64_t malformed = tasks_.takeMalformedChangelogRecords(); malformed > 0) {
    metrics_.changelog_malformed.Increment(static_cast<double>(malformed));
  }
  metrics_.refreshBrokenInvariants();
}

void StreamThread::refreshStandbyGauges() {
  StandbyReplicas* standbys = tasks_.standbys();
  if (standbys == nullptr) return;
  if (const uint64_t malformed = standbys->takeMalformedChangelogRecords(); malformed > 0) {
    metrics_.changelog_malformed.Increment(static_cast<double>(malformed));
  }
  for (const int32_t p : standbys->takeDropped()) {
    const std::string label = std::to_string(p);
    for (auto* family : {&metrics_.standby_lag, &metrics_.standby_age}) {
      family->Remove(&family->Add({{"partition", label}}));
    }
  }
  for (const StandbyStatus& copy : standbys->statuses()) {
    if (!copy.seconds_since_caught_up) continue;
    const std::string label = std::to_string(copy.partition);
    metrics_.standby_lag.Add({{"partition", label}}).Set(static_cast<double>(copy.lag_records));
    metrics_.standby_age.Add({{"partition", label}}).Set(*copy.seconds_since_caught_up);
  }
}

int StreamThread::shutdown() {
  const auto deadline = clock_.now() + std::chrono::milliseconds(config_.shutdown_timeout_ms);
  int status = 0;
  if (consumer_failed_) {
    status = 1;  // the tasks are closed already: nothing to commit or persist
  } else if (commits_.fatal()) {
    spdlog::critical("stopping after a fatal error: nothing more is committed or persisted");
    status = 1;
  } else {
    spdlog::info("stopping: committing and leaving the group");
    if (commits_.commitNow() != CommitCoordinator::Outcome::kCommitted) status = 1;
    if (status == 0 && !commits_.persist()) status = 1;
  }
  if (status == 0) handOverToStandbys(deadline);
  // Closing runs the revoke callback (nothing left to commit; after a fatal error it only drops
  // the tasks) and leaves the group, unless the membership is static. It must run in every
  // case: destroying an unclosed consumer would call back into members already destroyed.
  consumer_.close();
  tasks_.remove(tasks_.partitions());
  query_.setJoined(false);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now());
  commits_.closeOutput(status == 0, static_cast<int>(std::max<int64_t>(0, left.count())));
  if (clock_.now() > deadline) {
    spdlog::error("clean stop took longer than --shutdown-timeout-ms");
    status = 1;
  }
  return status;
}

}  // namespace fraud::service
