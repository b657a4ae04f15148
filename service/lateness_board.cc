#include "service/lateness_board.h"

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <string>

namespace fraud::service {

struct LatenessBoard::Watch {
  int64_t next_publish_ms = 0;
  std::optional<int64_t> above_since_ms;  // p99.9 above the grace since then
  std::optional<int64_t> warned_ms;
  // The gauges of this partition: p50, p99, p99.9, max against stream time, then against the
  // record timestamp; the dropped share; the advised graces (99 %, 99.9 %).
  std::array<prometheus::Gauge*, 8> quantiles{};
  prometheus::Gauge* dropped_share = nullptr;
  std::array<prometheus::Gauge*, 2> advised{};
};

LatenessBoard::LatenessBoard(LatenessOptions options) : options_(std::move(options)) {}

LatenessBoard::~LatenessBoard() = default;

void LatenessBoard::publishTo(prometheus::Registry& registry) {
  quantiles_ = &prometheus::BuildGauge()
                    .Name("fraud_partition_lateness_seconds")
                    .Help(
                        "Lateness quantiles over the measured interval, by partition; "
                        "against: stream_time or record_timestamp")
                    .Register(registry);
  dropped_share_ = &prometheus::BuildGauge()
                        .Name("fraud_partition_late_dropped_ratio")
                        .Help("Share of the interval's records the configured grace dropped")
                        .Register(registry);
  advised_ = &prometheus::BuildGauge()
                  .Name("fraud_partition_advised_grace_seconds")
                  .Help(
                      "The smallest grace that would have kept 99 % / 99.9 % of the "
                      "interval's records")
                  .Register(registry);
}

void LatenessBoard::observe(int32_t partition, std::optional<int64_t> stream_time_before,
                            int64_t event_time, std::optional<int64_t> record_timestamp,
                            bool late_dropped, int64_t now_ms) {
  if (partition < 0 || partition >= kMaxPartitions) return;
  LatenessTracker* tracker = trackers_[static_cast<size_t>(partition)].load();
  if (tracker == nullptr) {
    {
      base::MutexLock lock(owned_mu_);
      if (owned_.size() <= static_cast<size_t>(partition)) {
        owned_.resize(static_cast<size_t>(partition) + 1);
      }
      auto& owned = owned_[static_cast<size_t>(partition)];
      // A tracker set aside by forget() is empty: it serves the new assignment.
      if (!owned) owned = std::make_unique<LatenessTracker>(options_.interval_ms);
      tracker = owned.get();
    }
    trackers_[static_cast<size_t>(partition)].store(tracker);
  }
  tracker->observe(stream_time_before, event_time, record_timestamp, late_dropped, now_ms);
  if (watches_.size() <= static_cast<size_t>(partition)) {
    watches_.resize(static_cast<size_t>(partition) + 1);
  }
  auto& watch = watches_[static_cast<size_t>(partition)];
  if (!watch) watch = std::make_unique<Watch>();
  if (now_ms >= watch->next_publish_ms) {
    watch->next_publish_ms = now_ms + kPublishEveryMs;
    publish(partition, now_ms);
  }
}

void LatenessBoard::forget(int32_t partition) {
  if (partition < 0 || partition >= kMaxPartitions) return;
  LatenessTracker* tracker = trackers_[static_cast<size_t>(partition)].exchange(nullptr);
  if (tracker != nullptr) tracker->clear();
  if (watches_.size() <= static_cast<size_t>(partition)) return;
  auto& watch = watches_[static_cast<size_t>(partition)];
  if (watch && watch->dropped_share != nullptr) {
    for (auto* gauge : watch->quantiles) quantiles_->Remove(gauge);
    dropped_share_->Remove(watch->dropped_share);
    for (auto* gauge : watch->advised) advised_->Remove(gauge);
  }
  watch.reset();
}

void LatenessBoard::publish(int32_t partition, int64_t now_ms) {
  const auto report = this->report(partition, now_ms);
  if (!report || !report->vs_stream_time) return;
  Watch& watch = *watches_[static_cast<size_t>(partition)];
  if (quantiles_ != nullptr && watch.dropped_share == nullptr) {
    const std::string p = std::to_string(partition);
    const std::array<const char*, 4> names = {"0.5", "0.99", "0.999", "1"};
    for (size_t i = 0; i < 8; ++i) {
      watch.quantiles[i] =
          &quantiles_->Add({{"partition", p},
                            {"against", i < 4 ? "stream_time" : "record_timestamp"},
                            {"quantile", names[i % 4]}});
    }
    watch.dropped_share = &dropped_share_->Add({{"partition", p}});
    watch.advised[0] = &advised_->Add({{"partition", p}, {"kept", "0.99"}});
    watch.advised[1] = &advised_->Add({{"partition", p}, {"kept", "0.999"}});
  }
  const auto seconds = [](int64_t ms) { return static_cast<double>(ms) / 1000.0; };
  if (watch.dropped_share != nullptr) {
    const auto set = [&](size_t at, const api::LatenessQuantiles& q) {
      watch.quantiles[at]->Set(seconds(q.p50_ms));
      watch.quantiles[at + 1]->Set(seconds(q.p99_ms));
      watch.quantiles[at + 2]->Set(seconds(q.p999_ms));
      watch.quantiles[at + 3]->Set(seconds(q.max_ms));
    };
    set(0, *report->vs_stream_time);
    if (report->vs_record_timestamp) set(4, *report->vs_record_timestamp);
    watch.dropped_share->Set(report->late_dropped_share);
    watch.advised[0]->Set(seconds(report->advised_grace_p99_ms.value_or(0)));
    watch.advised[1]->Set(seconds(report->advised_grace_p999_ms.value_or(0)));
  }
  const int64_t p999 = report->vs_stream_time->p999_ms;
  if (p999 <= options_.grace_ms) {
    watch.above_since_ms.reset();
    return;
  }
  if (!watch.above_since_ms) watch.above_since_ms = now_ms;
  const bool sustained = now_ms - *watch.above_since_ms >= kSustainedMs;
  const bool quiet = !watch.warned_ms || now_ms - *watch.warned_ms >= kLogEveryMs;
  if (sustained && quiet) {
    watch.warned_ms = now_ms;
    spdlog::warn(
        "partition {}: lateness p99.9 {} ms has exceeded the grace {} ms for {} s; {:.3f} % of "
        "the last {} min's records were late-dropped; a grace of {} ms would have kept 99.9 % "
        "(docs/operations.md, Choosing the grace)",
        partition, p999, options_.grace_ms, (now_ms - *watch.above_since_ms) / 1000,
        report->late_dropped_share * 100, options_.interval_ms / 60'000, p999);
  }
}

std::optional<api::LatenessReport> LatenessBoard::report(int32_t partition, int64_t now_ms) const {
  if (partition < 0 || partition >= kMaxPartitions) return std::nullopt;
  const LatenessTracker* tracker = trackers_[static_cast<size_t>(partition)].load();
  if (tracker == nullptr) return std::nullopt;
  LatenessWindow window;
  tracker->window(now_ms, window);
  return reportOf(window, options_);
}

api::LatenessReport LatenessBoard::merged(int64_t now_ms) const {
  LatenessWindow window;
  for (const auto& slot : trackers_) {
    if (const LatenessTracker* tracker = slot.load()) tracker->window(now_ms, window);
  }
  return reportOf(window, options_);
}

}  // namespace fraud::service
