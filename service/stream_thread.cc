#include "service/stream_thread.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "service/kafka/wall_clock.h"

namespace fraud::service {
namespace {

constexpr int kPollMs = 50;
constexpr size_t kConsumeBatch = 1024;
constexpr auto kGaugeInterval = std::chrono::seconds(1);
// How long a stop waits for its hand-over's revocation at most (within the stop's deadline).
constexpr auto kHandOverWait = std::chrono::seconds(5);

using kafka::wallClockSeconds;
// Stamps polled records' lateness: a few milliseconds of resolution is plenty.
const auto wallClockMs = kafka::coarseWallClockMs;

std::vector<int32_t> partitionsOf(const rd_kafka_topic_partition_list_t* list) {
  std::vector<int32_t> result;
  for (int i = 0; i < list->cnt; ++i) result.push_back(list->elems[i].partition);
  return result;
}

}  // namespace

StreamThread::StreamThread(const ServiceConfig& config, Clients clients, TaskManager& tasks,
                           CommitCoordinator& commits, RebalanceListener& rebalances,
                           IntervalMetrics& interval, RestoreQueue& restorer, StateQuery& query,
                           state::StateDb& db, ServiceMetrics& metrics, ProducerRecovery* recovery)
    : config_(config),
      clients_(clients),
      tasks_(tasks),
      commits_(commits),
      rebalances_(rebalances),
      interval_(interval),
      restorer_(restorer),
      query_(query),
      db_(db),
      metrics_(metrics),
      recovery_(recovery) {}

int StreamThread::run(const std::atomic<bool>& stop) {
  if (!rebalances_.join()) return 1;
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
  std::vector<Polled> batch;
  batch.reserve(kConsumeBatch);
  while (!stop.load()) {
    if (consumerFailed()) break;
    if (commits_.fatal() && !recoverFromFatal()) break;
    for (const int32_t p : tasks_.activateRestored()) {
      metrics_.restore_progress.Add({{"partition", std::to_string(p)}}).Set(1);
    }
    tasks_.maintainStandbys();
    if (commits_.poll() == CommitCoordinator::Outcome::kFatal) continue;
    releaseHeldInput();
    collect(batch, commits_.pollTimeoutMs(kPollMs));
    if (!batch.empty()) {
      const auto started = Clock::now();
      const uint64_t epoch = tasks_.rewindEpoch();
      size_t processed = 0;
      for (const Polled& polled : batch) {
        if (tasks_.rewindEpoch() == epoch && !commits_.fatal() && !input_held_ && handle(polled)) {
          ++processed;
        }
        rd_kafka_message_destroy(polled.message);
      }
      batch.clear();
      if (processed > 0) {
        const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
        interval_.processing.observe(seconds / static_cast<double>(processed), processed);
      }
    }
    commits_.serveDeliveries();
    if (clients_.alerts != nullptr) clients_.alerts->serveDeliveries();
    if (commits_.maybeCommit() == CommitCoordinator::Outcome::kFatal) continue;
    query_.setOutputsBlocked(commits_.blocked());
    if (Clock::now() - last_gauges_ >= kGaugeInterval) refreshGauges();
  }
  return shutdown();
}

void StreamThread::collect(std::vector<Polled>& batch, int timeout_ms) {
  uint64_t epoch = tasks_.rewindEpoch();
  for (rd_kafka_message_t* message = rd_kafka_consumer_poll(clients_.consumer, timeout_ms);
       message != nullptr; message = rd_kafka_consumer_poll(clients_.consumer, 0)) {
    if (tasks_.rewindEpoch() != epoch) {
      // A rebalance callback inside that poll moved positions back: what was collected before
      // it was fetched from the old positions and will be fetched again.
      for (const Polled& stale : batch) rd_kafka_message_destroy(stale.message);
      batch.clear();
      epoch = tasks_.rewindEpoch();
    }
    batch.push_back(Polled{message, Clock::now(), wallClockMs()});
    if (batch.size() == kConsumeBatch) break;
  }
}

bool StreamThread::handle(const Polled& polled) {
  const rd_kafka_message_t* message = polled.message;
  if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // A fatal consumer error (__FATAL) is acted on by consumerFailed(), at the loop's top.
    if (message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
        message->err != RD_KAFKA_RESP_ERR__FATAL) {
      spdlog::warn("consumer: {}", rd_kafka_message_errstr(message));
    }
    return false;
  }
  PartitionTask* task = tasks_.task(message->partition);
  // Records of a partition not held, still restoring, or fetched before a seek are read again.
  if (task == nullptr) return false;
  InputRecord record;
  record.offset = message->offset;
  record.key = kafka::keyOf(message);
  if (message->payload != nullptr) record.value = kafka::payloadOf(message);
  rd_kafka_timestamp_type_t type;
  const int64_t timestamp = rd_kafka_message_timestamp(message, &type);
  if (type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) record.timestamp_ms = timestamp;
  if (type == RD_KAFKA_TIMESTAMP_CREATE_TIME) {
    interval_.fetch.observe(
        static_cast<double>(std::max<int64_t>(0, polled.at_wall_ms - timestamp)) / 1000.0);
  }
  interval_.queue.observe(std::chrono::duration<double>(Clock::now() - polled.at).count());
  switch (task->process(record)) {
    case PartitionTask::Processed::kSkipped:
      return false;
    case PartitionTask::Processed::kStoreFailed:
      spdlog::error("partition {}: local state unreadable at offset {}; rebuilding it",
                    message->partition, message->offset);
      if (commits_.abortUncommitted() != CommitCoordinator::Outcome::kFatal) {
        tasks_.rebuild(message->partition);
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
    held_since_ = Clock::now();
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
      std::chrono::duration<double>(Clock::now() - held_since_).count());
}

std::string StreamThread::producerFailure() const {
  if (auto error = clients_.producer->fatalError()) return *error;
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
    return rebalances_.rejoin();
  }
  // The same partitions, taken again from their committed checkpoints and the changelog.
  rebalances_.reopen(held);
  spdlog::warn("recovered from the producer failure: restoring {} partition(s)", held.size());
  return true;
}

bool StreamThread::consumerFailed() {
  if (consumer_failed_) return true;
  std::array<char, 512> reason{};
  const rd_kafka_resp_err_t code =
      rd_kafka_fatal_error(clients_.consumer, reason.data(), reason.size());
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return false;
  consumer_failed_ = true;
  // librdkafka's consumer cannot go on after a fatal error (FENCED_INSTANCE_ID: another process
  // joined with our group.instance.id). Stop serving at once: no task answers or commits from
  // here on, readiness fails, and the run ends with status 1 for the supervisor to restart us.
  spdlog::critical(
      "consumer failed for good ({}: {}): stopping; two processes with one --instance-id "
      "(group.instance.id) fence each other, give each its own",
      rd_kafka_err2name(code), reason.data());
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

void StreamThread::handOverToStandbys(Clock::time_point deadline) {
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
  if (const auto err = rd_kafka_unsubscribe(clients_.consumer)) {
    spdlog::warn("hand-over: unsubscribe: {}; holding the partitions until we are back",
                 rd_kafka_err2str(err));
    return;
  }
  const auto until = std::min(deadline, Clock::now() + kHandOverWait);
  while (!tasks_.partitions().empty() && Clock::now() < until) {
    if (rd_kafka_message_t* message = rd_kafka_consumer_poll(clients_.consumer, kPollMs)) {
      rd_kafka_message_destroy(message);  // fetched before the revocation: not processed
    }
  }
  // One more poll lets the LeaveGroup go out before the close terminates the group handling.
  if (rd_kafka_message_t* message = rd_kafka_consumer_poll(clients_.consumer, kPollMs)) {
    rd_kafka_message_destroy(message);
  }
}

void StreamThread::refreshGauges() {
  last_gauges_ = Clock::now();
  const double now_s = wallClockSeconds();
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
      int64_t low = 0;
      int64_t high = 0;
      if (rd_kafka_get_watermark_offsets(clients_.consumer, config_.input_topic.c_str(), p, &low,
                                         &high) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          high >= 0) {
        task->setHighWatermark(high);
      }
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
  metrics_.state_bytes.Set(static_cast<double>(db_.diskBytes()));
  metrics_.state_cache_bytes.Set(static_cast<double>(db_.cachedBytes()));
  if (const uint64_t malformed = tasks_.takeMalformedChangelogRecords(); malformed > 0) {
    metrics_.changelog_malformed.Increment(static_cast<double>(malformed));
  }
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
  const auto deadline = Clock::now() + std::chrono::milliseconds(config_.shutdown_timeout_ms);
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
  if (const auto err = rd_kafka_consumer_close(clients_.consumer)) {
    spdlog::warn("consumer close: {}", rd_kafka_err2str(err));
  }
  tasks_.remove(tasks_.partitions());
  query_.setJoined(false);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  commits_.closeOutput(status == 0, static_cast<int>(std::max<int64_t>(0, left.count())));
  if (Clock::now() > deadline) {
    spdlog::error("clean stop took longer than --shutdown-timeout-ms");
    status = 1;
  }
  return status;
}

}  // namespace fraud::service
