#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "api/service_view.h"
#include "detectors/card_ref.h"
#include "detectors/partition_detector.h"
#include "detectors/partitioner.h"
#include "detectors/record_codec.h"
#include "service/changelog_restorer.h"
#include "service/config.h"
#include "service/kafka.h"
#include "service/metrics.h"
#include "service/transactional_output.h"
#include "state/state_db.h"

namespace fraud::service {

// The live service: a consumer-group member that runs one PartitionDetector per assigned input
// partition over RocksDB state, and writes alerts, dead letters, state changes (changelog) and
// input offsets in one Kafka transaction per commit interval. Local checkpoints are written
// only after a transaction commits, so an alert is never lost and, for read_committed readers,
// never seen twice (docs/state-and-recovery.md).
//
// Threading: run() drives everything on the caller's thread. requestStop() and the ServiceView
// methods may be called from any thread.
class StreamProcessor final : public api::ServiceView {
 public:
  StreamProcessor(const ServiceConfig& config, KafkaProperties kafka,
                  const detectors::CardHasher& hasher, state::StateDb& db, ServiceMetrics& metrics);
  ~StreamProcessor() override;
  StreamProcessor(const StreamProcessor&) = delete;
  StreamProcessor& operator=(const StreamProcessor&) = delete;

  // Creates the clients, initialises transactions and checks the topics. An error message when
  // any of it fails.
  [[nodiscard]] std::optional<std::string> start();
  // Consumes until requestStop(), then stops cleanly: commits, checkpoints, leaves the group.
  // Returns the process exit status: 0 for a clean stop within the deadline.
  [[nodiscard]] int run();
  void requestStop() { stop_requested_.store(true); }

  [[nodiscard]] api::ServiceStatus status() const override;
  [[nodiscard]] std::optional<int32_t> partitionOf(std::string_view card) const override;
  [[nodiscard]] detectors::CardRef cardRef(std::string_view card) const override;
  [[nodiscard]] api::CardLookup lookup(int32_t partition,
                                       const detectors::CardRef& card_ref) const override;
  [[nodiscard]] api::CardLookup lookupHeld(const detectors::CardRef& card_ref) const override;
  [[nodiscard]] std::optional<std::string> ownerOf(int32_t partition) const override;

 private:
  struct Worker;
  enum class CommitResult { kCommitted, kAborted, kFatal };

  [[nodiscard]] std::optional<std::string> ensureChangelogTopic();
  static void onRebalance(rd_kafka_t* consumer, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* partitions, void* opaque);
  static void onDelivery(rd_kafka_t* producer, const rd_kafka_message_t* message, void* opaque);
  void rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions);
  void assignPartitions(rd_kafka_topic_partition_list_t* partitions);
  void revokePartitions(rd_kafka_topic_partition_list_t* partitions, bool lost);

  // Processes one record; `now_ms` is the wall clock for the lateness histogram.
  void handle(const rd_kafka_message_t* message, int64_t now_ms);
  void reject(Worker& worker, const rd_kafka_message_t* message, detectors::RejectReason reason);
  // Starts committing what the records since the last commit caused: changed card states and a
  // checkpoint per partition to the changelog, and the input offsets.
  void beginCommit();
  // Takes a commit's result: on success the partitions' committed checkpoints move on; on
  // abort everything goes back to them.
  [[nodiscard]] CommitResult completeCommit(TransactionalOutput::Result result);
  // Commits everything processed so far and waits for it (revocation, shutdown).
  [[nodiscard]] CommitResult commitNow();
  // State, stream time and input position back to the last committed checkpoint: locally where
  // the disk holds it, through a restore from the changelog where it does not.
  void rewindToCommitted();
  // Writes the committed state of every active partition to disk; false on a disk failure.
  [[nodiscard]] bool persistCheckpoints();
  [[nodiscard]] bool persistWorker(Worker& worker);
  void activateRestored();
  [[nodiscard]] int64_t startOffset(int32_t partition);
  void refreshGauges();
  [[nodiscard]] int shutdown();
  [[nodiscard]] Worker* worker(int32_t partition) const;
  [[nodiscard]] api::CardLookup lookupIn(Worker& worker, const detectors::CardRef& ref) const;

  ServiceConfig config_;
  KafkaProperties kafka_;
  const detectors::CardHasher& hasher_;
  state::StateDb& db_;
  ServiceMetrics& metrics_;
  detectors::Partitioner partitioner_;

  KafkaHandle consumer_;
  KafkaHandle producer_;
  std::unique_ptr<ChangelogRestorer> restorer_;
  int32_t input_partitions_ = 0;
  bool cooperative_ = true;

  // The worker map changes on the ingest thread only, under the unique lock; readers share it.
  mutable std::shared_mutex workers_mu_;
  std::map<int32_t, std::unique_ptr<Worker>> workers_;

  std::atomic<bool> started_{false};  // start() succeeded: the clients exist
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> joined_{false};
  std::atomic<bool> outputs_blocked_{false};
  std::unique_ptr<TransactionalOutput> output_;
  uint64_t uncommitted_records_ = 0;  // records processed since the last commit began
  std::chrono::steady_clock::time_point last_commit_started_;
  // The partitions of the commit in flight, with the checkpoint each reaches.
  std::vector<std::pair<Worker*, state::PartitionCheckpoint>> committing_;
  std::chrono::steady_clock::time_point last_gauges_;
  std::chrono::steady_clock::time_point last_persist_;

  detectors::RecordDecoder decoder_;
  RecordTally tally_;
  LocalHistogram lateness_;
  LocalHistogram processing_;
  const int64_t checkpoint_interval_ms_;  // 0 in embedded mode: the mock keeps aborted records
  const uint64_t cache_pressure_bytes_;   // persist early past this, so the cache can evict

  mutable std::mutex owners_mu_;
  mutable std::map<int32_t, std::string> owners_;
  mutable std::chrono::steady_clock::time_point owners_fetched_{};
};

}  // namespace fraud::service
