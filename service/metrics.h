#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <vector>

#include "detectors/outcome_counts.h"
#include "detectors/record_codec.h"

namespace fraud::service {

// A histogram's observations gathered on the hot path without atomics, then handed to
// prometheus-cpp in one call.
class LocalHistogram {
 public:
  explicit LocalHistogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0.0) {}
  void observe(double value, uint64_t times = 1) {
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    counts_[i] += static_cast<double>(times);
    sum_ += value * static_cast<double>(times);
    any_ = true;
  }
  void flushTo(prometheus::Histogram& histogram) {
    if (!any_) return;
    histogram.ObserveMultiple(counts_, sum_);
    std::fill(counts_.begin(), counts_.end(), 0.0);
    sum_ = 0;
    any_ = false;
  }

 private:
  std::vector<double> bounds_;
  std::vector<double> counts_;
  double sum_ = 0;
  bool any_ = false;
};

// Counts of one commit interval, kept by the ingest thread and added to the registry at commit.
struct RecordTally {
  detectors::OutcomeCounts outcomes;  // the same counts `replay` reports
  uint64_t key_mismatch = 0;
  uint64_t dead_letters_truncated = 0;  // dead letters cut to fit the topic's record limit
};

// What the ingest thread counts between two commits: added to the registry when a commit goes
// through, dropped when it aborts (the records are processed again).
struct IntervalMetrics {
  RecordTally tally;
  LocalHistogram lateness;
  LocalHistogram processing;

  IntervalMetrics();
  void clear();
};

// Every metric the service exports (docs/operations.md lists them). No label carries card data.
class ServiceMetrics {
 public:
  explicit ServiceMetrics(prometheus::Registry& registry);

  // Adds and clears the tally and the local histograms.
  void flush(IntervalMetrics& interval);
  [[nodiscard]] static std::vector<double> latenessBuckets();
  [[nodiscard]] static std::vector<double> processingBuckets();

  prometheus::Family<prometheus::Counter>& records;
  prometheus::Family<prometheus::Counter>& rejected;
  prometheus::Counter& key_mismatch;
  prometheus::Counter& dead_letters_truncated;
  prometheus::Counter& changelog_malformed;
  prometheus::Counter& overflow_evicted;
  prometheus::Family<prometheus::Counter>& alerts;
  prometheus::Histogram& lateness;
  prometheus::Histogram& processing;
  prometheus::Family<prometheus::Gauge>& stream_time;
  prometheus::Family<prometheus::Gauge>& event_time_lag;
  prometheus::Family<prometheus::Gauge>& offset_lag;
  prometheus::Family<prometheus::Gauge>& state_cards;
  prometheus::Gauge& state_bytes;
  prometheus::Gauge& state_cache_bytes;
  prometheus::Family<prometheus::Gauge>& restore_progress;
  prometheus::Counter& restored_records;
  prometheus::Histogram& restore_duration;
  prometheus::Family<prometheus::Counter>& rebalances;
  prometheus::Family<prometheus::Counter>& transactions;
  prometheus::Histogram& commit_duration;
  prometheus::Gauge& assigned_partitions;

 private:
  prometheus::Counter& accepted_;
  prometheus::Counter& late_dropped_;
  prometheus::Counter& duplicate_;
  prometheus::Counter& rejected_total_;
  std::array<prometheus::Counter*, detectors::kRejectReasonCount> rejected_by_reason_{};
  prometheus::Counter& alerts_new_;
  prometheus::Counter& alerts_escalation_;
};

}  // namespace fraud::service
