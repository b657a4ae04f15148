#include "service/state_query.h"

#include <chrono>
#include <utility>

#include "service/kafka/wall_clock.h"
#include "service/partition_task.h"
#include "state/card_state_copy.h"

namespace fraud::service {
namespace {

using kafka::wallClockMs;
using kafka::wallClockSeconds;

api::PartitionStatus partitionStatus(const TaskStatus& task) {
  api::PartitionStatus ps;
  ps.partition = task.partition;
  ps.phase = task.active ? api::PartitionPhase::kActive : api::PartitionPhase::kRestoring;
  ps.restore_progress = task.restore_progress;
  ps.restored_records = task.restored_records;
  ps.stream_time_ms = task.stream_time_ms;
  ps.event_time_lag_seconds = task.event_time_lag_seconds;
  ps.next_offset = task.next_offset;
  ps.high_watermark = task.high_watermark;
  ps.offset_lag = task.offset_lag;
  ps.cards = task.cards;
  ps.misrouted_records = task.misrouted_records;
  return ps;
}

api::CardLookup cardLookup(int32_t partition, const detectors::CardRef& card_ref, HeldCard held) {
  switch (held.outcome) {
    case HeldCard::Outcome::kFound:
      return {api::CardLookupOutcome::kFound,
              api::CardSnapshot{card_ref, partition, held.stream_time_ms, std::move(*held.state)}};
    case HeldCard::Outcome::kNotFound:
      return {api::CardLookupOutcome::kNotFound, std::nullopt};
    case HeldCard::Outcome::kRestoring:
      break;
  }
  return {api::CardLookupOutcome::kRestoring, std::nullopt};
}

LatenessOptions latenessOptions(const ServiceConfig& config) {
  LatenessOptions options;
  options.interval_ms = config.lateness_interval_s * 1000;
  options.grace_ms = config.detector.grace_ms;
  return options;
}

}  // namespace

StateQuery::StateQuery(const ServiceConfig& config, const detectors::CardHasher& hasher,
                       LocalState& state)
    : config_(config),
      hasher_(hasher),
      state_(state),
      partitioner_(
          detectors::parsePartitioner(config.partitioner).value_or(detectors::Partitioner::kCrc32)),
      lateness_(latenessOptions(config)) {}

void StateQuery::attach(const TaskManager& tasks, const TopicAdmin& admin,
                        int32_t input_partitions) {
  input_partitions_.store(input_partitions);
  admin_.store(&admin);
  tasks_.store(&tasks);
}

api::ServiceStatus StateQuery::status() const {
  api::ServiceStatus status;
  const TaskManager* tasks = tasks_.load();
  if (tasks == nullptr) return status;
  status.consumer_joined = joined_.load();
  status.outputs_blocked = outputs_blocked_.load();
  status.instance_id = config_.instance_id;
  status.state_bytes = state_.diskBytes();
  const double now_s = wallClockSeconds();
  tasks->withTasks([&](const auto& map) {
    for (const auto& [p, task] : map)
      status.partitions.push_back(partitionStatus(task->status(now_s)));
  });
  const int64_t now_ms = wallClockMs();
  for (auto& p : status.partitions) p.lateness = lateness_.report(p.partition, now_ms);
  if (const StandbyReplicas* standbys = standbys_.load()) {
    for (const StandbyStatus& copy : standbys->statuses()) {
      api::StandbyCopy view;
      view.partition = copy.partition;
      if (copy.changelog_offset >= 0) view.changelog_offset = copy.changelog_offset;
      if (copy.lag_records >= 0) view.lag_records = copy.lag_records;
      view.seconds_since_caught_up = copy.seconds_since_caught_up;
      view.catchups = copy.catchups;
      view.failures = copy.failures;
      status.standbys.push_back(view);
    }
  }
  return status;
}

std::optional<int32_t> StateQuery::partitionOf(std::string_view card) const {
  const int32_t partitions = input_partitions_.load();
  if (partitions <= 0) return std::nullopt;
  return detectors::partitionFor(partitioner_, card, partitions);
}

detectors::CardRef StateQuery::cardRef(std::string_view card) const { return hasher_.hash(card); }

api::CardLookup StateQuery::lookup(int32_t partition, const detectors::CardRef& card_ref) const {
  const TaskManager* tasks = tasks_.load();
  if (tasks == nullptr) return {api::CardLookupOutcome::kNotHeld, std::nullopt};
  return tasks->withTasks([&](const auto& map) -> api::CardLookup {
    const auto it = map.find(partition);
    if (it == map.end()) return {api::CardLookupOutcome::kNotHeld, std::nullopt};
    return cardLookup(partition, card_ref, it->second->lookup(card_ref));
  });
}

api::CardLookup StateQuery::lookupHeld(const detectors::CardRef& card_ref) const {
  const TaskManager* tasks = tasks_.load();
  if (tasks == nullptr) return {api::CardLookupOutcome::kNotFound, std::nullopt};
  return tasks->withTasks([&](const auto& map) -> api::CardLookup {
    bool restoring = false;
    for (const auto& [p, task] : map) {
      HeldCard held = task->lookup(card_ref);
      if (held.outcome == HeldCard::Outcome::kFound) {
        return cardLookup(p, card_ref, std::move(held));
      }
      restoring = restoring || held.outcome == HeldCard::Outcome::kRestoring;
    }
    return {restoring ? api::CardLookupOutcome::kRestoring : api::CardLookupOutcome::kNotFound,
            std::nullopt};
  });
}

std::optional<api::CardLookup> StateQuery::tryLookupCached(
    int32_t partition, const detectors::CardRef& card_ref) const {
  const TaskManager* tasks = tasks_.load();
  if (tasks == nullptr) return api::CardLookup{api::CardLookupOutcome::kNotHeld, std::nullopt};
  state::CardStateCopy copy;  // allocated before any lock
  return tasks->tryWithTasks([&](const auto& map) -> std::optional<api::CardLookup> {
    const auto it = map.find(partition);
    if (it == map.end()) return api::CardLookup{api::CardLookupOutcome::kNotHeld, std::nullopt};
    std::optional<HeldCard> held = it->second->tryLookupCached(card_ref, copy);
    if (!held) return std::nullopt;
    return cardLookup(partition, card_ref, *std::move(held));
  });
}

std::optional<api::CardLookup> StateQuery::tryLookupHeldCached(
    const detectors::CardRef& card_ref) const {
  const TaskManager* tasks = tasks_.load();
  if (tasks == nullptr) return api::CardLookup{api::CardLookupOutcome::kNotFound, std::nullopt};
  state::CardStateCopy copy;  // allocated before any lock
  return tasks->tryWithTasks([&](const auto& map) -> std::optional<api::CardLookup> {
    // lookupHeld()'s answer: the first partition, in its order, that has the card.
    bool restoring = false;
    for (const auto& [p, task] : map) {
      std::optional<HeldCard> held = task->tryLookupCached(card_ref, copy);
      if (!held) return std::nullopt;  // this partition cannot tell at once
      if (held->outcome == HeldCard::Outcome::kFound) {
        return cardLookup(p, card_ref, *std::move(held));
      }
      restoring = restoring || held->outcome == HeldCard::Outcome::kRestoring;
    }
    return api::CardLookup{
        restoring ? api::CardLookupOutcome::kRestoring : api::CardLookupOutcome::kNotFound,
        std::nullopt};
  });
}

std::string StateQuery::instanceId() const {
  // As status() reports it: empty until attached.
  return tasks_.load() == nullptr ? std::string() : config_.instance_id;
}

std::optional<std::string> StateQuery::ownerOf(int32_t partition) const {
  const TopicAdmin* admin = admin_.load();
  if (admin == nullptr) return std::nullopt;
  return admin->ownerOf(partition);
}

api::LatenessReport StateQuery::latenessMerged() const { return lateness_.merged(wallClockMs()); }

std::vector<api::RecentAlert> StateQuery::recentAlerts(size_t limit) const {
  return recent_alerts_.newest(limit);
}

}  // namespace fraud::service
