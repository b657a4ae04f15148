#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "api/service_view.h"
#include "detectors/alert.h"

namespace fraud::service {

// The last `capacity` alerts this instance detected, for the console (GET /v1/alerts/recent).
// Detected, not necessarily committed: with transactional delivery an aborted transaction's
// records are processed again and detect the same alerts under the same idempotency keys, which
// the ring keeps once. Holds card_refs only, never a clear card.
//
// Thread-safety: add() from the ingest thread, newest() from any thread (one mutex).
class RecentAlerts {
 public:
  static constexpr size_t kDefaultCapacity = 1000;

  explicit RecentAlerts(size_t capacity = kDefaultCapacity);

  void add(int32_t partition, const detectors::Alert& alert, const detectors::AlertKey& key,
           int64_t detected_at_ms);
  // Up to `limit` alerts, newest first.
  [[nodiscard]] std::vector<api::RecentAlert> newest(size_t limit) const;

 private:
  mutable std::mutex mu_;
  std::vector<api::RecentAlert> ring_;    // reserved to capacity_
  std::unordered_set<std::string> keys_;  // idempotency keys in the ring
  size_t capacity_;
  size_t next_ = 0;  // where the next alert goes once the ring is full
};

}  // namespace fraud::service
