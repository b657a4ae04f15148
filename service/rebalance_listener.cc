#include "service/rebalance_listener.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace fraud::service {

RebalanceListener::RebalanceListener(ConsumerAssignment& consumer, TaskManager& tasks,
                                     CommitCoordinator& commits, StateQuery& query,
                                     ServiceMetrics& metrics, TransactionFencer* fencer)
    : consumer_(consumer),
      tasks_(tasks),
      commits_(commits),
      query_(query),
      metrics_(metrics),
      fencer_(fencer) {}

void RebalanceListener::onAssigned(const std::vector<int32_t>& partitions) {
  metrics_.rebalances.Add({{"kind", "assign"}}).Increment();
  if (consumer_.cooperative()) {
    consumer_.incrementalAssign(partitions);
  } else {
    // An eager assignment replaces the whole set: pass every partition we hold.
    std::vector<int32_t> all = tasks_.partitions();
    all.insert(all.end(), partitions.begin(), partitions.end());
    consumer_.assign(all);
  }
  markRestoring(partitions);
  // A previous owner that left the group may have left a transaction open on these partitions:
  // fence it now, so that the restore below need not wait for the broker to time it out.
  if (fencer_ != nullptr) fencer_->fenceOwnersOf(partitions);
  // Nothing is consumed until the partition's state is restored (activateRestored()).
  tasks_.assign(partitions);
  query_.setJoined(true);
  metrics_.assigned_partitions.Set(static_cast<double>(tasks_.taskCount()));
  spdlog::info("assigned {} partition(s); restoring their state", partitions.size());
}

void RebalanceListener::onRevoked(const std::vector<int32_t>& partitions) {
  const bool lost = consumer_.assignmentLost();
  const bool cooperative = consumer_.cooperative();
  metrics_.rebalances.Add({{"kind", lost ? "lost" : "revoke"}}).Increment();
  const bool held = std::any_of(partitions.begin(), partitions.end(),
                                [this](int32_t p) { return tasks_.task(p) != nullptr; });
  if (!held) {
    // Nothing of ours to commit or abort: the tasks were closed already (closeAllDirty() before
    // a rejoin).
  } else if (lost) {
    // Another member may own these already: nothing of ours may commit for them.
    (void)commits_.abortUncommitted();
  } else if (commits_.commitNow() == CommitCoordinator::Outcome::kCommitted) {
    // A later owner (us again, perhaps) then restores less of the changelog. Only after a
    // commit that covers everything: a failed commit persists nothing.
    if (!commits_.persist(partitions)) {
      spdlog::warn("revoked partitions: local checkpoint not written; a later owner restores more");
    }
  }
  const std::vector<int32_t> dropped = cooperative ? partitions : tasks_.partitions();
  tasks_.remove(dropped);
  for (const int32_t p : dropped) dropPartitionGauges(p);
  if (cooperative) {
    consumer_.incrementalUnassign(partitions);
  } else {
    consumer_.assign({});
  }
  metrics_.assigned_partitions.Set(static_cast<double>(tasks_.taskCount()));
  spdlog::info("{} {} partition(s)", lost ? "lost" : "revoked", partitions.size());
}

std::vector<int32_t> RebalanceListener::closeAllDirty() {
  std::vector<int32_t> held = tasks_.partitions();
  tasks_.remove(held);
  for (const int32_t p : held) dropPartitionGauges(p);
  metrics_.assigned_partitions.Set(0);
  return held;
}

void RebalanceListener::reopen(const std::vector<int32_t>& partitions) {
  if (!partitions.empty()) {
    markRestoring(partitions);
    tasks_.assign(partitions);
  }
  metrics_.assigned_partitions.Set(static_cast<double>(tasks_.taskCount()));
}

base::Status RebalanceListener::rejoin() {
  query_.setJoined(false);
  metrics_.assigned_partitions.Set(static_cast<double>(tasks_.taskCount()));
  return consumer_.rejoin();
}

void RebalanceListener::markRestoring(const std::vector<int32_t>& partitions) {
  for (const int32_t p : partitions) {
    metrics_.restore_progress.Add({{"partition", std::to_string(p)}}).Set(0);
  }
}

void RebalanceListener::dropPartitionGauges(int32_t partition) {
  const std::string label = std::to_string(partition);
  for (auto* family : {&metrics_.stream_time, &metrics_.event_time_lag, &metrics_.offset_lag,
                       &metrics_.state_cards, &metrics_.restore_progress}) {
    family->Remove(&family->Add({{"partition", label}}));
  }
}

}  // namespace fraud::service
