#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/service_view.h"
#include "detectors/card_ref.h"
#include "detectors/partitioner.h"
#include "service/config.h"
#include "service/lateness_board.h"
#include "service/local_state.h"
#include "service/recent_alerts.h"
#include "service/standby_replicas.h"
#include "service/task_manager.h"
#include "service/topic_admin.h"
#include "state/state_db.h"

namespace fraud::service {

// The API's view of the running service (api::ServiceView): readiness, the partitions held and
// card state, read from the task manager's tasks and the topic admin's owner map. The tasks
// report plain data (TaskStatus, HeldCard); the api:: answers are built here. Nothing here
// waits for the cluster.
//
// Thread-safety: attach() once, from the thread that starts the service, before the API can
// see a joined consumer; every other method from any thread. Before attach() it reports a
// service that has not started.
class StateQuery final : public api::ServiceView {
 public:
  StateQuery(const ServiceConfig& config, const detectors::CardHasher& hasher, LocalState& state);

  void attach(const TaskManager& tasks, const TopicAdmin& admin, int32_t input_partitions);
  // The warm copies to show (--standby-replicas); once, like attach().
  void attachStandbys(const StandbyReplicas& standbys) { standbys_.store(&standbys); }
  void setJoined(bool joined) { joined_.store(joined); }
  [[nodiscard]] bool joined() const { return joined_.load(); }
  void setOutputsBlocked(bool blocked) { outputs_blocked_.store(blocked); }

  [[nodiscard]] api::ServiceStatus status() const override;
  [[nodiscard]] std::optional<int32_t> partitionOf(std::string_view card) const override;
  [[nodiscard]] detectors::CardRef cardRef(std::string_view card) const override;
  [[nodiscard]] api::CardLookup lookup(int32_t partition,
                                       const detectors::CardRef& card_ref) const override;
  [[nodiscard]] api::CardLookup lookupHeld(const detectors::CardRef& card_ref) const override;
  [[nodiscard]] std::optional<std::string> ownerOf(int32_t partition) const override;
  [[nodiscard]] std::string instanceId() const override;
  // Never wait and never read disk (try_lock on the task map and each task; the card store's
  // cache only, PartitionTask::tryLookupCached), so an HTTP I/O thread may call them.
  [[nodiscard]] std::optional<api::CardLookup> tryLookupCached(
      int32_t partition, const detectors::CardRef& card_ref) const override;
  [[nodiscard]] std::optional<api::CardLookup> tryLookupHeldCached(
      const detectors::CardRef& card_ref) const override;
  [[nodiscard]] api::LatenessReport latenessMerged() const override;
  [[nodiscard]] std::vector<api::RecentAlert> recentAlerts(size_t limit) const override;

  // What the ingest thread fills (TaskContext::lateness, TaskContext::recent_alerts).
  [[nodiscard]] LatenessBoard& lateness() { return lateness_; }
  [[nodiscard]] RecentAlerts& recentAlertRing() { return recent_alerts_; }

 private:
  const ServiceConfig& config_;
  const detectors::CardHasher& hasher_;
  LocalState& state_;
  detectors::Partitioner partitioner_;
  std::atomic<const TaskManager*> tasks_{nullptr};
  std::atomic<const TopicAdmin*> admin_{nullptr};
  std::atomic<const StandbyReplicas*> standbys_{nullptr};
  std::atomic<int32_t> input_partitions_{0};
  std::atomic<bool> joined_{false};
  std::atomic<bool> outputs_blocked_{false};
  LatenessBoard lateness_;
  RecentAlerts recent_alerts_;
};

}  // namespace fraud::service
