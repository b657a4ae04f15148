#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "api/service_view.h"
#include "detectors/card_ref.h"
#include "service/changelog_restorer.h"
#include "service/commit_coordinator.h"
#include "service/config.h"
#include "service/immediate_alert_output.h"
#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/kafka_input.h"
#include "service/metrics.h"
#include "service/partition_task.h"
#include "service/producer_recovery.h"
#include "service/standby_replicas.h"
#include "service/state_query.h"
#include "service/stream_thread.h"
#include "service/task_manager.h"
#include "service/topic_admin.h"
#include "service/transaction_fencer.h"
#include "service/transactional_output.h"
#include "service/transactional_producer.h"
#include "state/state_db.h"

namespace fraud::service {

// The live service, put together: the Kafka clients, the topic admin, the changelog restorer,
// the task manager with one PartitionTask per assigned input partition, the commit coordinator
// over the transactional output, and the stream thread that runs them. Alerts, dead letters,
// state changes (changelog) and input offsets commit in one Kafka transaction per commit
// interval; local checkpoints are written only after a transaction commits, so an alert is
// never lost and, for read_committed readers, never seen twice (docs/state-and-recovery.md).
// With --alert-delivery immediate, alerts leave at once on a producer of their own instead, and
// a transaction commits only once the alerts before it are acknowledged.
//
// Threading: start() and run() on one thread (which becomes the ingest thread); requestStop()
// from any thread; view() is safe for the API's threads from construction on.
class StreamProcessor final {
 public:
  StreamProcessor(const ServiceConfig& config, kafka::KafkaProperties kafka,
                  const detectors::CardHasher& hasher, state::StateDb& db, ServiceMetrics& metrics);
  ~StreamProcessor();
  StreamProcessor(const StreamProcessor&) = delete;
  StreamProcessor& operator=(const StreamProcessor&) = delete;

  // Creates the clients, checks the topics and their record limits, initialises transactions.
  // An error when any of it fails.
  [[nodiscard]] base::Status start();
  // Consumes until requestStop(), then stops cleanly: commits, checkpoints, leaves the group.
  // Returns the process exit status: 0 for a clean stop within the deadline.
  [[nodiscard]] int run();
  void requestStop() { stop_requested_.store(true); }

  [[nodiscard]] api::ServiceView& view() { return query_; }

 private:
  static void onRebalance(rd_kafka_t* consumer, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* partitions, void* opaque);
  [[nodiscard]] base::Status checkRecordLimits(size_t producer_limit);
  // start()'s steps, in order (client settings: client_settings.h). The admin client, the
  // topics' check, the fencer and the record limits.
  [[nodiscard]] base::Status startAdmin(const kafka::KafkaProperties& common,
                                        const kafka::KafkaProperties& producer_props);
  // The transactional producer and output, and the immediate alerts' producer when chosen.
  [[nodiscard]] base::Status startOutputs(const kafka::KafkaProperties& common,
                                          const kafka::KafkaProperties& producer_props);
  // The consumer, the restorer, the tasks and the standbys.
  [[nodiscard]] base::Status startInput(const kafka::KafkaProperties& common,
                                        const kafka::KafkaProperties& consumer_props);
  // The commit coordinator, the recovery bound and the stream thread, wired; the view attached.
  void startStreamThread();
  // The standby restorer and its rounds (--standby-replicas); nothing without them.
  [[nodiscard]] base::Status startStandbys(const kafka::KafkaProperties& common);
  // After a fatal producer error (ProducerRecovery): the alerts' producer made again if it
  // failed, the transactional producer always, the output attached to the new one.
  [[nodiscard]] base::Status replaceProducers();
  // The fencer of departed owners' transactions, unless members cannot be told apart.
  [[nodiscard]] base::Status startFencer(const kafka::KafkaProperties& common,
                                         const kafka::KafkaProperties& producer_props);

  ServiceConfig config_;
  kafka::KafkaProperties kafka_;
  const detectors::CardHasher& hasher_;
  state::StateDb& db_;
  StateDbLocalState local_state_{db_};  // the ingest thread's view of db_
  ServiceMetrics& metrics_;
  StateQuery query_;
  std::atomic<bool> stop_requested_{false};
  size_t max_dead_letter_bytes_ = 0;

  // Created by start(), in this order; destroyed in reverse.
  std::unique_ptr<TransactionalProducer> producer_;
  kafka::KafkaHandle admin_client_;
  kafka::KafkaHandle consumer_;
  std::unique_ptr<TopicAdmin> admin_;
  kafka::KafkaHandle fencer_client_;              // the fencer's (kafka::makeGroupAdminClient)
  std::unique_ptr<TransactionFencer> fencer_;     // not with the embedded cluster
  std::unique_ptr<ImmediateAlertOutput> alerts_;  // --alert-delivery immediate only
  std::unique_ptr<TransactionalOutput> output_;   // its committer may flush alerts_
  PartitionLeases leases_;                        // which restorer writes a partition now
  std::unique_ptr<ChangelogRestorer> restorer_;
  std::unique_ptr<ChangelogRestorer> standby_restorer_;  // --standby-replicas only
  std::unique_ptr<StandbyReplicas> standbys_;            // --standby-replicas only
  std::unique_ptr<KafkaInput> input_;
  std::unique_ptr<detectors::RecordPipeline> pipeline_;
  IntervalMetrics interval_;
  std::unique_ptr<TaskContext> context_;
  std::unique_ptr<TaskManager> tasks_;
  std::unique_ptr<CommitCoordinator> commits_;
  std::unique_ptr<RebalanceListener> rebalances_;
  std::unique_ptr<ProducerRecovery> recovery_;
  std::unique_ptr<StreamThread> thread_;
};

}  // namespace fraud::service
