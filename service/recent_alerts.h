#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "api/service_view.h"
#include "detectors/alert.h"
#include "detectors/base/mutex.h"

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
           int64_t detected_at_ms) FRAUD_EXCLUDES(mu_);
  // Up to `limit` alerts, newest first.
  [[nodiscard]] std::vector<api::RecentAlert> newest(size_t limit) const FRAUD_EXCLUDES(mu_);

 private:
  mutable base::Mutex mu_;
  std::vector<api::RecentAlert> ring_ FRAUD_GUARDED_BY(mu_);    // reserved to capacity_
  std::unordered_set<std::string> keys_ FRAUD_GUARDED_BY(mu_);  // idempotency keys in the ring
  const size_t capacity_;                  // set once by the constructor: read without the lock
  size_t next_ FRAUD_GUARDED_BY(mu_) = 0;  // where the next alert goes once the ring is full
};

}  // namespace fraud::service
