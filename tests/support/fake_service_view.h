#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/service_view.h"
#include "detectors/card_ref.h"
#include "detectors/partitioner.h"

namespace fraud::testing {

// An api::ServiceView whose state the test sets. Thread-safe: a test may change it from one
// thread while HTTP threads read it, as the real service does while ingesting. Cards live in
// the partition the configured partitioner gives them; lookups follow the view's contract
// (kNotHeld for partitions not assigned, kRestoring while a partition is restoring).
class FakeServiceView final : public api::ServiceView {
 public:
  explicit FakeServiceView(std::string card_hash_key = "test-card-hash-key",
                           std::optional<int32_t> partition_count = 4,
                           detectors::Partitioner partitioner = detectors::Partitioner::kCrc32)
      : hasher_(card_hash_key), partition_count_(partition_count), partitioner_(partitioner) {}

  void setJoined(bool joined) {
    std::lock_guard lock(mutex_);
    status_.consumer_joined = joined;
  }
  void setOutputsBlocked(bool blocked) {
    std::lock_guard lock(mutex_);
    status_.outputs_blocked = blocked;
  }
  void setInstanceId(std::string id) {
    std::lock_guard lock(mutex_);
    status_.instance_id = std::move(id);
  }
  void setStateBytes(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    status_.state_bytes = bytes;
  }
  void setPartitionCount(std::optional<int32_t> count) {
    std::lock_guard lock(mutex_);
    partition_count_ = count;
  }
  // Assigns the partition here (or replaces its status).
  void setPartition(const api::PartitionStatus& status) {
    std::lock_guard lock(mutex_);
    auto& partitions = status_.partitions;
    const auto it = std::find_if(partitions.begin(), partitions.end(),
                                 [&](const auto& p) { return p.partition == status.partition; });
    if (it != partitions.end()) {
      *it = status;
    } else {
      partitions.push_back(status);
      std::sort(partitions.begin(), partitions.end(),
                [](const auto& a, const auto& b) { return a.partition < b.partition; });
    }
  }
  // Assigns every partition 0..count-1 here, active, caught up.
  void assignAllActive() {
    const int32_t count = partitionCount().value_or(0);
    for (int32_t p = 0; p < count; ++p) setPartition(active(p));
  }
  void revokePartition(int32_t partition) {
    std::lock_guard lock(mutex_);
    std::erase_if(status_.partitions, [&](const auto& p) { return p.partition == partition; });
  }
  void setOwner(int32_t partition, std::optional<std::string> owner) {
    std::lock_guard lock(mutex_);
    if (owner) {
      owners_[partition] = *std::move(owner);
    } else {
      owners_.erase(partition);
    }
  }
  // Stores the card's state in the partition the partitioner gives it; returns its ref.
  detectors::CardRef putCard(std::string_view card, detectors::CardState state) {
    const int32_t partition = *partitionOf(card);
    const detectors::CardRef ref = hasher_.hash(card);
    putCardRef(partition, ref, std::move(state));
    return ref;
  }
  void putCardRef(int32_t partition, const detectors::CardRef& ref, detectors::CardState state) {
    std::lock_guard lock(mutex_);
    cards_[{partition, ref}] = std::move(state);
  }
  void eraseCard(int32_t partition, const detectors::CardRef& ref) {
    std::lock_guard lock(mutex_);
    cards_.erase({partition, ref});
  }
  // The card stays held but leaves the "memory cache": the try-variants decline it, as the
  // service's do for a card evicted to disk; lookup() and lookupHeld() still find it.
  void evictCard(int32_t partition, const detectors::CardRef& ref) {
    std::lock_guard lock(mutex_);
    evicted_.insert({partition, ref});
  }
  // Complete caches (the default) hold every card: the try-variants answer kNotFound for a card
  // without state. Incomplete ones decline it (only the disk could tell).
  void setCachesComplete(bool complete) {
    std::lock_guard lock(mutex_);
    caches_complete_ = complete;
  }
  // Calls of lookup() and lookupHeld(), the blocking reads the server runs on its view pool.
  [[nodiscard]] int blockingLookups() const {
    std::lock_guard lock(mutex_);
    return blocking_lookups_;
  }
  // Calls of tryLookupCached() and tryLookupHeldCached().
  [[nodiscard]] int inlineLookups() const {
    std::lock_guard lock(mutex_);
    return inline_lookups_;
  }
  // Every call of the view throws while set: the API must turn that into a 500, not a crash.
  void setFailing(bool failing) {
    std::lock_guard lock(mutex_);
    failing_ = failing;
  }

  // While held, lookup() and lookupHeld() wait until released, outside the view's lock: a slow
  // view read, as an owner query to Kafka or a cold state read can be. The try-variants, which
  // never wait, decline meanwhile.
  void holdLookups() {
    std::lock_guard lock(gate_mutex_);
    held_ = true;
  }
  void releaseLookups() {
    {
      std::lock_guard lock(gate_mutex_);
      held_ = false;
    }
    gate_.notify_all();
  }
  [[nodiscard]] int waitingLookups() const {
    std::lock_guard lock(gate_mutex_);
    return waiting_;
  }

  [[nodiscard]] static api::PartitionStatus active(int32_t partition, int64_t offset_lag = 0) {
    api::PartitionStatus status;
    status.partition = partition;
    status.phase = api::PartitionPhase::kActive;
    status.stream_time_ms = 1'700'000'000'000;
    status.event_time_lag_seconds = 1.5;
    status.next_offset = 100;
    status.high_watermark = 100 + offset_lag;
    status.offset_lag = offset_lag;
    status.restore_progress = 1;
    return status;
  }
  [[nodiscard]] static api::PartitionStatus restoring(int32_t partition) {
    api::PartitionStatus status;
    status.partition = partition;
    status.restore_progress = 0.25;
    return status;
  }

  // api::ServiceView
  [[nodiscard]] api::ServiceStatus status() const override {
    std::lock_guard lock(mutex_);
    throwIfFailing();
    api::ServiceStatus status = status_;
    for (auto& p : status.partitions) p.cards = cardsIn(p.partition);
    return status;
  }
  [[nodiscard]] std::optional<int32_t> partitionOf(std::string_view card) const override {
    const auto count = partitionCount();
    if (!count || *count < 1) return std::nullopt;
    return detectors::partitionFor(partitioner_, card, *count);
  }
  [[nodiscard]] detectors::CardRef cardRef(std::string_view card) const override {
    std::lock_guard lock(mutex_);
    throwIfFailing();
    return hasher_.hash(card);
  }
  [[nodiscard]] api::CardLookup lookup(int32_t partition,
                                       const detectors::CardRef& card_ref) const override {
    passGate();
    std::lock_guard lock(mutex_);
    throwIfFailing();
    ++blocking_lookups_;
    const api::PartitionStatus* held = find(partition);
    if (held == nullptr) return {api::CardLookupOutcome::kNotHeld, std::nullopt};
    if (held->phase != api::PartitionPhase::kActive) {
      return {api::CardLookupOutcome::kRestoring, std::nullopt};
    }
    const auto it = cards_.find({partition, card_ref});
    if (it == cards_.end()) return {api::CardLookupOutcome::kNotFound, std::nullopt};
    return {api::CardLookupOutcome::kFound,
            api::CardSnapshot{card_ref, partition, held->stream_time_ms, it->second}};
  }
  [[nodiscard]] api::CardLookup lookupHeld(const detectors::CardRef& card_ref) const override {
    passGate();
    std::lock_guard lock(mutex_);
    throwIfFailing();
    ++blocking_lookups_;
    bool restoring = false;
    for (const auto& p : status_.partitions) {
      if (p.phase != api::PartitionPhase::kActive) {
        restoring = true;
        continue;
      }
      const auto it = cards_.find({p.partition, card_ref});
      if (it != cards_.end()) {
        return {api::CardLookupOutcome::kFound,
                api::CardSnapshot{card_ref, p.partition, p.stream_time_ms, it->second}};
      }
    }
    return {restoring ? api::CardLookupOutcome::kRestoring : api::CardLookupOutcome::kNotFound,
            std::nullopt};
  }
  [[nodiscard]] std::optional<api::CardLookup> tryLookupCached(
      int32_t partition, const detectors::CardRef& card_ref) const override {
    if (gated()) return std::nullopt;
    std::lock_guard lock(mutex_);
    throwIfFailing();
    ++inline_lookups_;
    const api::PartitionStatus* held = find(partition);
    if (held == nullptr) return api::CardLookup{api::CardLookupOutcome::kNotHeld, std::nullopt};
    if (held->phase != api::PartitionPhase::kActive) {
      return api::CardLookup{api::CardLookupOutcome::kRestoring, std::nullopt};
    }
    return cached(*held, card_ref);
  }
  [[nodiscard]] std::optional<api::CardLookup> tryLookupHeldCached(
      const detectors::CardRef& card_ref) const override {
    if (gated()) return std::nullopt;
    std::lock_guard lock(mutex_);
    throwIfFailing();
    ++inline_lookups_;
    bool restoring = false;
    for (const auto& p : status_.partitions) {
      if (p.phase != api::PartitionPhase::kActive) {
        restoring = true;
        continue;
      }
      std::optional<api::CardLookup> found = cached(p, card_ref);
      if (!found || found->outcome == api::CardLookupOutcome::kFound) return found;
    }
    return api::CardLookup{
        restoring ? api::CardLookupOutcome::kRestoring : api::CardLookupOutcome::kNotFound,
        std::nullopt};
  }
  [[nodiscard]] std::optional<std::string> ownerOf(int32_t partition) const override {
    std::lock_guard lock(mutex_);
    throwIfFailing();
    if (find(partition) != nullptr) return status_.instance_id;
    const auto it = owners_.find(partition);
    if (it == owners_.end()) return std::nullopt;
    return it->second;
  }
  [[nodiscard]] api::LatenessReport latenessMerged() const override {
    std::lock_guard lock(mutex_);
    throwIfFailing();
    return lateness_;
  }
  [[nodiscard]] std::vector<api::RecentAlert> recentAlerts(size_t limit) const override {
    std::lock_guard lock(mutex_);
    throwIfFailing();
    return {recent_alerts_.begin(), recent_alerts_.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                 limit, recent_alerts_.size()))};
  }
  void setLateness(api::LatenessReport report) {
    std::lock_guard lock(mutex_);
    lateness_ = std::move(report);
  }
  void setRecentAlerts(std::vector<api::RecentAlert> alerts) {
    std::lock_guard lock(mutex_);
    recent_alerts_ = std::move(alerts);
  }

 private:
  std::optional<int32_t> partitionCount() const {
    std::lock_guard lock(mutex_);
    throwIfFailing();
    return partition_count_;
  }
  void passGate() const {
    std::unique_lock lock(gate_mutex_);
    ++waiting_;
    gate_.wait(lock, [this] { return !held_; });
    --waiting_;
  }
  bool gated() const {
    std::lock_guard lock(gate_mutex_);
    return held_;
  }
  // An active partition's card as its "memory cache" tells it; under mutex_.
  std::optional<api::CardLookup> cached(const api::PartitionStatus& partition,
                                        const detectors::CardRef& card_ref) const {
    if (evicted_.contains({partition.partition, card_ref})) return std::nullopt;
    const auto it = cards_.find({partition.partition, card_ref});
    if (it == cards_.end()) {
      if (!caches_complete_) return std::nullopt;
      return api::CardLookup{api::CardLookupOutcome::kNotFound, std::nullopt};
    }
    return api::CardLookup{
        api::CardLookupOutcome::kFound,
        api::CardSnapshot{card_ref, partition.partition, partition.stream_time_ms, it->second}};
  }
  void throwIfFailing() const {
    if (failing_) throw std::runtime_error("fake service view failure");
  }
  const api::PartitionStatus* find(int32_t partition) const {
    for (const auto& p : status_.partitions) {
      if (p.partition == partition) return &p;
    }
    return nullptr;
  }
  uint64_t cardsIn(int32_t partition) const {
    return static_cast<uint64_t>(std::count_if(
        cards_.begin(), cards_.end(), [&](const auto& c) { return c.first.first == partition; }));
  }

  const detectors::CardHasher hasher_;
  mutable std::mutex mutex_;
  std::optional<int32_t> partition_count_;  // under mutex_
  const detectors::Partitioner partitioner_;
  api::ServiceStatus status_;                                                     // under mutex_
  std::map<int32_t, std::string> owners_;                                         // under mutex_
  std::map<std::pair<int32_t, detectors::CardRef>, detectors::CardState> cards_;  // under mutex_
  bool failing_ = false;                                                          // under mutex_
  std::set<std::pair<int32_t, detectors::CardRef>> evicted_;                      // under mutex_
  bool caches_complete_ = true;                                                   // under mutex_
  mutable int blocking_lookups_ = 0;                                              // under mutex_
  mutable int inline_lookups_ = 0;                                                // under mutex_
  api::LatenessReport lateness_;                                                  // under mutex_
  std::vector<api::RecentAlert> recent_alerts_;                                   // under mutex_
  mutable std::mutex gate_mutex_;
  mutable std::condition_variable gate_;
  bool held_ = false;        // under gate_mutex_
  mutable int waiting_ = 0;  // under gate_mutex_
};

}  // namespace fraud::testing
