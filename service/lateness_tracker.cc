#include "service/lateness_tracker.h"

#include <algorithm>

namespace fraud::service {
namespace {

constexpr int64_t kMinuteMs = 60'000;

api::LatenessQuantiles quantilesOf(const LatenessHistogram& histogram, int64_t max_ms) {
  api::LatenessQuantiles q;
  // A bucket's upper bound may pass the largest value seen; the exact max caps it.
  q.p50_ms = std::min(histogram.quantile(0.5), max_ms);
  q.p99_ms = std::min(histogram.quantile(0.99), max_ms);
  q.p999_ms = std::min(histogram.quantile(0.999), max_ms);
  q.max_ms = max_ms;
  return q;
}

double share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

void LatenessWindow::merge(const LatenessWindow& other) {
  vs_stream_time.merge(other.vs_stream_time);
  vs_record_timestamp.merge(other.vs_record_timestamp);
  records += other.records;
  late_dropped += other.late_dropped;
  timestamped += other.timestamped;
  max_vs_stream_time = std::max(max_vs_stream_time, other.max_vs_stream_time);
  max_vs_record_timestamp = std::max(max_vs_record_timestamp, other.max_vs_record_timestamp);
}

api::LatenessReport reportOf(const LatenessWindow& window, const LatenessOptions& options) {
  api::LatenessReport report;
  report.interval_ms = options.interval_ms;
  report.grace_ms = options.grace_ms;
  report.records = window.records;
  report.late_dropped = window.late_dropped;
  report.late_dropped_share = share(window.late_dropped, window.records);
  report.timestamped_records = window.timestamped;
  if (window.records > 0) {
    report.vs_stream_time = quantilesOf(window.vs_stream_time, window.max_vs_stream_time);
    // A grace of exactly the lateness keeps the record (docs/rule.md §2: t == ST(p) - G is
    // accepted).
    report.advised_grace_p99_ms = report.vs_stream_time->p99_ms;
    report.advised_grace_p999_ms = report.vs_stream_time->p999_ms;
  }
  if (window.timestamped > 0) {
    report.vs_record_timestamp =
        quantilesOf(window.vs_record_timestamp, window.max_vs_record_timestamp);
  }
  std::vector<int64_t> graces = options.candidate_graces_ms;
  graces.push_back(options.grace_ms);
  std::sort(graces.begin(), graces.end());
  graces.erase(std::unique(graces.begin(), graces.end()), graces.end());
  for (const int64_t grace : graces) {
    // The current grace's drops are counted exactly; the others are read from the buckets.
    const uint64_t dropped =
        grace == options.grace_ms ? window.late_dropped : window.vs_stream_time.countAbove(grace);
    report.candidates.push_back({grace, dropped, share(dropped, window.records)});
  }
  return report;
}

LatenessTracker::LatenessTracker(int64_t interval_ms)
    : slots_(static_cast<size_t>(std::max<int64_t>(1, (interval_ms + kMinuteMs - 1) / kMinuteMs))) {
}

void LatenessTracker::observe(std::optional<int64_t> stream_time_before, int64_t event_time,
                              std::optional<int64_t> record_timestamp, bool late_dropped,
                              int64_t now_ms) {
  const int64_t minute = now_ms / kMinuteMs;
  const int64_t vs_stream =
      stream_time_before ? std::max<int64_t>(0, *stream_time_before - event_time) : 0;
  base::MutexLock lock(mu_);
  Slot& slot = slots_[static_cast<size_t>(minute) % slots_.size()];
  if (slot.minute != minute) slot.reset(minute);
  ++slot.records;
  slot.late_dropped += late_dropped ? 1 : 0;
  slot.vs_stream_time.add(vs_stream);
  slot.max_vs_stream_time = std::max(slot.max_vs_stream_time, vs_stream);
  if (record_timestamp) {
    const int64_t vs_timestamp = std::max<int64_t>(0, *record_timestamp - event_time);
    ++slot.timestamped;
    slot.vs_record_timestamp.add(vs_timestamp);
    slot.max_vs_record_timestamp = std::max(slot.max_vs_record_timestamp, vs_timestamp);
  }
}

void LatenessTracker::Slot::reset(int64_t new_minute) {
  minute = new_minute;
  vs_stream_time.clear();
  vs_record_timestamp.clear();
  records = late_dropped = timestamped = 0;
  max_vs_stream_time = max_vs_record_timestamp = 0;
}

void LatenessTracker::clear() {
  base::MutexLock lock(mu_);
  for (Slot& slot : slots_) slot.reset(-1);
}

void LatenessTracker::window(int64_t now_ms, LatenessWindow& into) const {
  const int64_t minute = now_ms / kMinuteMs;
  base::MutexLock lock(mu_);
  const auto oldest = minute - static_cast<int64_t>(slots_.size()) + 1;
  for (const Slot& slot : slots_) {
    if (slot.minute < oldest || slot.minute > minute) continue;
    into.vs_stream_time.merge(slot.vs_stream_time);
    into.vs_record_timestamp.merge(slot.vs_record_timestamp);
    into.records += slot.records;
    into.late_dropped += slot.late_dropped;
    into.timestamped += slot.timestamped;
    into.max_vs_stream_time = std::max(into.max_vs_stream_time, slot.max_vs_stream_time);
    into.max_vs_record_timestamp =
        std::max(into.max_vs_record_timestamp, slot.max_vs_record_timestamp);
  }
}

}  // namespace fraud::service
