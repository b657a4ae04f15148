#pragma once

#include <cstdint>
#include <vector>

#include "detectors/base/status.h"
#include "service/commit_coordinator.h"
#include "service/metrics.h"
#include "service/state_query.h"
#include "service/task_manager.h"
#include "service/transaction_fencer.h"

namespace fraud::service {

// The consumer's side of a rebalance, as plain partition numbers of the input topic.
// Implemented by KafkaInput; tests use a recording fake.
class ConsumerAssignment {
 public:
  virtual ~ConsumerAssignment() = default;
  // The group's rebalance protocol is cooperative (incremental), not eager.
  [[nodiscard]] virtual bool cooperative() const = 0;
  // The partitions being revoked were lost (another member may own them already).
  [[nodiscard]] virtual bool assignmentLost() const = 0;
  // Cooperative: adds or removes these partitions.
  virtual void incrementalAssign(const std::vector<int32_t>& partitions) = 0;
  virtual void incrementalUnassign(const std::vector<int32_t>& partitions) = 0;
  // Eager: the whole assignment is these partitions (none: nothing assigned).
  virtual void assign(const std::vector<int32_t>& partitions) = 0;
  // Subscribes to the input topic (joins the group); an error (librdkafka's reason, not logged:
  // the caller logs it) when refused.
  [[nodiscard]] virtual base::Status subscribe() = 0;
  // Leaves the group and joins it again: the partitions this member still believes it holds are
  // revoked (the rebalance callback), and what it owns afterwards comes from a new assignment.
  // An error (not logged) when the new subscription was refused.
  [[nodiscard]] virtual base::Status rejoin() = 0;
};

// What a rebalance does to the stream thread's tasks (Kafka Streams' StreamsRebalanceListener),
// under either protocol:
// - assigned partitions get tasks, restoring (their previous owner fenced first, when a fencer
//   is set); under eager, the consumer is given the whole set;
// - revoked partitions commit what was processed and persist it first (a later owner restores
//   less), then their tasks go; under eager every task goes, as every partition is revoked;
// - lost partitions commit nothing: what was processed since the last commit is aborted.
//
// Thread-safety: the ingest thread only (librdkafka runs the rebalance callback inside the
// consumer poll).
class RebalanceListener {
 public:
  // `fencer` may be null (embedded cluster, tests): departed owners are not fenced.
  RebalanceListener(ConsumerAssignment& consumer, TaskManager& tasks, CommitCoordinator& commits,
                    StateQuery& query, ServiceMetrics& metrics,
                    TransactionFencer* fencer = nullptr);

  // Joins the group: the first assignment follows in a consumer poll. An error when refused.
  [[nodiscard]] base::Status join() { return consumer_.subscribe(); }
  void onAssigned(const std::vector<int32_t>& partitions);
  void onRevoked(const std::vector<int32_t>& partitions);

  // After a fatal producer error: every task closed dirty (nothing uncommitted survives);
  // returns the partitions they held, for reopen().
  [[nodiscard]] std::vector<int32_t> closeAllDirty();
  // The same partitions taken again, restoring from their committed checkpoints.
  void reopen(const std::vector<int32_t>& partitions);
  // After closeAllDirty(), when this member may no longer own what it held (its producer was
  // fenced: another member took its partitions while it was away): nothing is reopened; the
  // consumer leaves and joins the group again, and only the partitions of the new assignment
  // get tasks (Kafka Streams' handling of TaskMigratedException). The revocation that the
  // rejoin brings finds no task and commits nothing. An error when the consumer could not
  // subscribe again (the member then holds nothing for good: the caller logs it and stops).
  [[nodiscard]] base::Status rejoin();

 private:
  void dropPartitionGauges(int32_t partition);
  void markRestoring(const std::vector<int32_t>& partitions);

  ConsumerAssignment& consumer_;
  TaskManager& tasks_;
  CommitCoordinator& commits_;
  StateQuery& query_;
  ServiceMetrics& metrics_;
  TransactionFencer* fencer_;
};

}  // namespace fraud::service
