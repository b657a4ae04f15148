#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "api/service_view.h"
#include "detectors/base/mutex.h"
#include "service/lateness_tracker.h"

namespace prometheus {
class Gauge;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace fraud::service {

// Every partition's LatenessTracker, plus what is derived from them on the ingest thread: the
// per-partition gauges (fraud_partition_lateness_seconds and friends), refreshed every
// `publish_every_ms`, and a warning when a partition's p99.9 stays above the grace for
// `sustained_ms` (logged at most once per `log_every_ms` per partition).
//
// Thread-safety: observe() and forget() from the ingest thread only; report() and merged() from
// any thread. Partitions 0..kMaxPartitions-1 are measured (others are ignored); a tracker is made
// on a partition's first record and kept for the board's life (a reader may hold it), emptied
// and set aside while the partition is not held here.
class LatenessBoard {
 public:
  static constexpr int32_t kMaxPartitions = 4096;
  static constexpr int64_t kPublishEveryMs = 10'000;
  static constexpr int64_t kSustainedMs = 300'000;
  static constexpr int64_t kLogEveryMs = 900'000;

  explicit LatenessBoard(LatenessOptions options);
  ~LatenessBoard();
  LatenessBoard(const LatenessBoard&) = delete;
  LatenessBoard& operator=(const LatenessBoard&) = delete;

  // Registers the gauges in `registry` (which must outlive the board); call before ingesting.
  void publishTo(prometheus::Registry& registry);

  void observe(int32_t partition, std::optional<int64_t> stream_time_before, int64_t event_time,
               std::optional<int64_t> record_timestamp, bool late_dropped, int64_t now_ms)
      FRAUD_EXCLUDES(owned_mu_);
  // The partition is no longer held here (revoked or lost): its gauges leave the registry, its
  // figures leave report() and merged(), and a later assignment starts from nothing.
  void forget(int32_t partition);

  // Nothing for a partition with no tracker.
  [[nodiscard]] std::optional<api::LatenessReport> report(int32_t partition, int64_t now_ms) const;
  [[nodiscard]] api::LatenessReport merged(int64_t now_ms) const;
  [[nodiscard]] const LatenessOptions& options() const { return options_; }

 private:
  struct Watch;  // ingest thread: next publish, the exceedance's start, the last warning

  void publish(int32_t partition, int64_t now_ms);

  const LatenessOptions options_;
  std::array<std::atomic<LatenessTracker*>, kMaxPartitions> trackers_{};
  base::Mutex owned_mu_;
  std::vector<std::unique_ptr<LatenessTracker>> owned_ FRAUD_GUARDED_BY(owned_mu_);  // by partition
  std::vector<std::unique_ptr<Watch>> watches_;  // ingest thread, by partition
  prometheus::Family<prometheus::Gauge>* quantiles_ = nullptr;
  prometheus::Family<prometheus::Gauge>* dropped_share_ = nullptr;
  prometheus::Family<prometheus::Gauge>* advised_ = nullptr;
};

}  // namespace fraud::service
