#include "service/recent_alerts.h"

#include <algorithm>

namespace fraud::service {

RecentAlerts::RecentAlerts(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {
  ring_.reserve(capacity_);
}

void RecentAlerts::add(int32_t partition, const detectors::Alert& alert,
                       const detectors::AlertKey& key, int64_t detected_at_ms) {
  api::RecentAlert entry;
  entry.alert_id = key.alert_id;
  entry.idempotency_key = key.idempotency_key;
  entry.card_ref = alert.card_ref;
  entry.partition = partition;
  entry.revision = alert.incident.revision;
  entry.window_start_ms = alert.incident.start;
  entry.window_end_ms = alert.incident.end;
  for (const auto& country : alert.incident.countries) {
    entry.countries.emplace_back(country.view());
  }
  entry.trigger_event_time_ms = alert.trigger_event_time;
  entry.detected_at_ms = detected_at_ms;
  base::MutexLock lock(mu_);
  if (keys_.contains(entry.idempotency_key)) return;
  keys_.insert(entry.idempotency_key);
  if (ring_.size() < capacity_) {
    ring_.push_back(std::move(entry));
    return;
  }
  keys_.erase(ring_[next_].idempotency_key);
  ring_[next_] = std::move(entry);
  next_ = (next_ + 1) % capacity_;
}

std::vector<api::RecentAlert> RecentAlerts::newest(size_t limit) const {
  base::MutexLock lock(mu_);
  std::vector<api::RecentAlert> out;
  const size_t n = std::min(limit, ring_.size());
  out.reserve(n);
  // Oldest is at next_ once full, at 0 before; newest just before it.
  const size_t newest =
      ring_.size() < capacity_ ? ring_.size() - 1 : (next_ + capacity_ - 1) % capacity_;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(ring_[(newest + ring_.size() - i) % ring_.size()]);
  }
  return out;
}

}  // namespace fraud::service
