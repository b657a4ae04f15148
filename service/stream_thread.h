#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "service/clock.h"
#include "service/commit_coordinator.h"
#include "service/config.h"
#include "service/immediate_alert_output.h"
#include "service/input_consumer.h"
#include "service/kafka/client.h"
#include "service/local_state.h"
#include "service/metrics.h"
#include "service/producer_recovery.h"
#include "service/rebalance_listener.h"
#include "service/restore_queue.h"
#include "service/state_query.h"
#include "service/task_manager.h"
#include "service/transactional_producer.h"

namespace fraud::service {

// The ingest loop (Kafka Streams' StreamThread): polls the input, hands each record to its
// partition's task, drives the commit schedule and the restore activations, serves rebalances,
// refreshes the gauges, and stops cleanly.
//
// The loop never blocks on a commit in steady state: when the output held during a commit
// passes its bound, input is paused and the consumer is still polled (membership, rebalances)
// until the commit is through.
//
// A rebalance callback runs inside the consumer poll. When it moves positions back (an abort,
// a lost partition), records already taken out of librdkafka in the current batch belong to the
// old positions: the loop drops them (TaskManager::rewindEpoch()).
//
// A partition that arrives is restored before it is consumed; its departed previous owner, if
// any, is fenced at the same time (TransactionFencer), so that a transaction it left open does
// not hold the restore back.
//
// A fatal producer error (fenced, a transaction state the broker refused, the immediate alerts'
// producer failed for good) does not stop the loop while ProducerRecovery allows (Kafka Streams'
// TaskMigratedException under exactly-once): every task is closed dirty, so nothing uncommitted
// survives and each partition's state comes back from its last committed checkpoint and the
// changelog; the producers are replaced (the same transactional.id initialised again, which
// aborts what the failed one left open); and the partitions this member holds are taken again
// as a new assignment. The group membership is the consumer's and is left alone: had it gone
// stale, the consumer's own rebalance (partitions lost) follows, and a zombie's offsets are
// refused by their group generation (KIP-447). One exception: a producer fenced by a newer
// epoch of our transactional id means a survivor took our partitions while we were away (a
// pause past the session timeout), so nothing is reopened; the consumer rejoins the group and
// only the new assignment's partitions get tasks (Kafka Streams does the same).
//
// A fatal consumer error (FENCED_INSTANCE_ID: another process with our group.instance.id) is not
// recovered: every task is closed dirty at once (lookups and readiness stop), and run() returns 1.
//
// Every call on the consumer goes through InputConsumer (KafkaInput in the service, a scripted
// consumer in the unit tests), and every reading of time through `clock`.
//
// Thread-safety: run() and the rebalance callback on the ingest thread; nothing else.
class StreamThread {
 public:
  struct Clients {
    InputConsumer* consumer;
    TransactionalProducer* producer;
    ImmediateAlertOutput* alerts = nullptr;  // --alert-delivery immediate only
  };
  // `recovery` null: a fatal error stops the loop at once.
  StreamThread(const ServiceConfig& config, Clients clients, TaskManager& tasks,
               CommitCoordinator& commits, RebalanceListener& rebalances, IntervalMetrics& interval,
               RestoreQueue& restorer, StateQuery& query, LocalState& state,
               ServiceMetrics& metrics, const Clock& clock, ProducerRecovery* recovery = nullptr);

  // Subscribes and consumes until `stop`, then commits, checkpoints and leaves the group.
  // Returns the exit status: 0 for a clean stop within the deadline, 1 after a fatal error
  // that could not be recovered from (the consumer is closed either way).
  [[nodiscard]] int run(const std::atomic<bool>& stop);

  // The consumer's rebalance callback (the opaque pointer given to librdkafka leads here):
  // hands the partitions to the RebalanceListener.
  void rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions);

 private:
  // When the consumer poll returned a record (batch_[i] was polled at stamps_[i]).
  struct Stamp {
    Clock::TimePoint at;
    int64_t at_wall_ms;
  };
  void collect(int timeout_ms);
  // Gives the batch back to the consumer.
  void releaseBatch();
  // Processes one record; false when it was not processed (an error event, a partition not
  // held or not restored, unreadable state).
  [[nodiscard]] bool handle(const PolledInput& polled, const Stamp& stamp);
  // The commit that held input back is through: resume every active partition at its task's
  // position.
  void releaseHeldInput();
  // After a fatal error: closes every task dirty, replaces the producers and takes the held
  // partitions again. False when the error is not the producer's or recovery refused.
  [[nodiscard]] bool recoverFromFatal();
  // The consumer met a fatal error (librdkafka's consumer cannot go on after one): every task
  // closed dirty, readiness off; true from then on, and the loop stops with status 1.
  [[nodiscard]] bool consumerFailed();
  [[nodiscard]] std::string producerFailure() const;
  void refreshGauges();
  void refreshStandbyGauges();
  [[nodiscard]] int shutdown();
  // On a clean stop under static membership with standby replicas, when another member keeps
  // copies of what is held here: leaves the group, so the partitions move to warm copies at once
  // instead of waiting for this instance to come back (a rolling restart's pause).
  void handOverToStandbys(Clock::TimePoint deadline);

  const ServiceConfig& config_;
  Clients clients_;
  TaskManager& tasks_;
  CommitCoordinator& commits_;
  RebalanceListener& rebalances_;
  IntervalMetrics& interval_;
  RestoreQueue& restorer_;
  StateQuery& query_;
  LocalState& state_;
  ServiceMetrics& metrics_;
  const Clock& clock_;
  ProducerRecovery* recovery_;  // may be null (tests): no recovery
  InputConsumer& consumer_;     // clients_.consumer
  // The records of one poll round, reused (reserved once: no allocation per record).
  std::vector<PolledInput> batch_;
  std::vector<Stamp> stamps_;
  bool input_held_ = false;  // every partition paused until the commit in flight is through
  bool consumer_failed_ = false;
  Clock::TimePoint held_since_{};
  Clock::TimePoint last_gauges_{};
};

}  // namespace fraud::service
