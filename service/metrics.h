#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/base/broken_invariant.h"
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
  // Adds the observations to `histogram` (and to `also`, when given) and clears them.
  void flushTo(prometheus::Histogram& histogram, prometheus::Histogram* also = nullptr) {
    if (!any_) return;
    histogram.ObserveMultiple(counts_, sum_);
    if (also != nullptr) also->ObserveMultiple(counts_, sum_);
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

// Misrouted records of one topic partition (docs/rule.md §9) in one commit interval.
struct MisroutedCount {
  std::string topic;
  int32_t partition = 0;
  uint64_t records = 0;
};

// Counts of one commit interval, kept by the ingest thread and added to the registry at commit.
struct RecordTally {
  detectors::OutcomeCounts outcomes;  // the same counts `replay` reports
  uint64_t key_mismatch = 0;
  uint64_t dead_letters_truncated = 0;    // dead letters cut to fit the topic's record limit
  std::vector<MisroutedCount> misrouted;  // one entry per topic partition that had some

  // One more misrouted record of `topic`'s `partition`.
  void countMisrouted(std::string_view topic, int32_t partition);
};

// What the ingest thread counts between two commits: added to the registry when a commit goes
// through, dropped when it aborts (the records are processed again).
struct IntervalMetrics {
  RecordTally tally;
  LocalHistogram lateness;
  LocalHistogram processing;
  LocalHistogram fetch;  // stage "fetch" of each record
  LocalHistogram queue;  // stage "queue" of each record

  IntervalMetrics();
  void clear();
};

// The families of ServiceMetrics by what they measure, each registering its own: input records
// (RecordMetrics), partitions and their state (PartitionMetrics), restores and standby copies
// (RestoreMetrics), transactions and outputs (CommitMetrics), latency by stage (StageMetrics).

// Input records and the alerts they made; added per commit interval (ServiceMetrics::flush).
class RecordMetrics {
 public:
  explicit RecordMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>& records;
  prometheus::Family<prometheus::Counter>& rejected;
  prometheus::Counter& key_mismatch;
  // fraud_misrouted_records_total{topic, partition}: records processed in a partition other than
  // the one the producers' partitioner gives their key (docs/rule.md §9).
  prometheus::Family<prometheus::Counter>& misrouted;
  prometheus::Counter& dead_letters_truncated;
  prometheus::Counter& overflow_evicted;
  prometheus::Family<prometheus::Counter>& alerts;
  prometheus::Histogram& lateness;
  prometheus::Histogram& processing;

 protected:
  prometheus::Counter& accepted_;
  prometheus::Counter& late_dropped_;
  prometheus::Counter& duplicate_;
  prometheus::Counter& rejected_total_;
  std::array<prometheus::Counter*, detectors::kRejectReasonCount> rejected_by_reason_{};
  prometheus::Counter& alerts_new_;
  prometheus::Counter& alerts_escalation_;
};

// The partitions held here: stream time, lags, state size, rebalances.
struct PartitionMetrics {
  explicit PartitionMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Gauge>& stream_time;
  prometheus::Family<prometheus::Gauge>& event_time_lag;
  prometheus::Family<prometheus::Gauge>& offset_lag;
  prometheus::Family<prometheus::Gauge>& state_cards;
  prometheus::Gauge& state_bytes;
  prometheus::Gauge& state_cache_bytes;
  prometheus::Family<prometheus::Counter>& rebalances;
  prometheus::Gauge& assigned_partitions;
};

// Restores from the changelog and the warm standby copies.
struct RestoreMetrics {
  explicit RestoreMetrics(prometheus::Registry& registry);

  prometheus::Counter& changelog_malformed;
  prometheus::Family<prometheus::Gauge>& restore_progress;
  prometheus::Counter& restored_records;
  prometheus::Histogram& restore_duration;
  // Warm copies of partitions owned elsewhere (--standby-replicas), per partition:
  // fraud_standby_lag_records (changelog records the copy lacked when its last catch-up began)
  // and fraud_standby_catchup_age_seconds (since the last catch-up ended).
  prometheus::Family<prometheus::Gauge>& standby_lag;
  prometheus::Family<prometheus::Gauge>& standby_age;
};

// Transactions, what persists committed state, and the producers' faults.
struct CommitMetrics {
  explicit CommitMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>& transactions;
  prometheus::Histogram& commit_duration;
  // fraud_checkpoint_write_seconds: one background write of committed state to RocksDB.
  prometheus::Histogram& checkpoint_write;
  // Alerts whose immediate delivery failed (their transaction then aborts and they are sent
  // again).
  prometheus::Counter& alert_delivery_failures;
  // fraud_fenced_owners_total{result}: departed owners' transactional ids fenced (their open
  // transaction aborted at once) on a partition's arrival; result ok or failed.
  prometheus::Family<prometheus::Counter>& fenced_owners;
  // fraud_producer_recoveries_total: fatal producer errors recovered from (every task closed
  // dirty, the producer replaced; ProducerRecovery).
  prometheus::Counter& producer_recoveries;
};

// Where the time goes.
struct StageMetrics {
  explicit StageMetrics(prometheus::Registry& registry);

  // fraud_stage_seconds{stage}: where the time from a record's production to its alert's
  // visibility goes (docs/performance.md). Per record: fetch (the record's timestamp to the
  // consumer poll that returned it), queue (that poll to the start of its processing), process.
  // Per alert: commit_wait (detected to the start of the commit that carries it), commit (that
  // commit's start to its acknowledgement), delivery (immediate mode: produced to acknowledged).
  prometheus::Family<prometheus::Histogram>& stages;
  prometheus::Histogram& stage_fetch;
  prometheus::Histogram& stage_queue;
  prometheus::Histogram& stage_process;
  prometheus::Histogram& stage_commit_wait;
  prometheus::Histogram& stage_commit;
  prometheus::Histogram& stage_delivery;
  // fraud_ingest_wait_seconds{reason}: time the ingest thread waited instead of processing:
  // held_output (output held during a commit passed its bound), store (a background checkpoint
  // write had to finish first: before a rewind, a revoke or an eviction under cache pressure).
  prometheus::Family<prometheus::Histogram>& ingest_waits;
  prometheus::Histogram& ingest_wait_held_output;
  prometheus::Histogram& ingest_wait_store;
};

// Every metric the service exports (docs/operations.md lists them). No label carries card data.
class ServiceMetrics : public RecordMetrics,
                       public PartitionMetrics,
                       public RestoreMetrics,
                       public CommitMetrics,
                       public StageMetrics {
 public:
  explicit ServiceMetrics(prometheus::Registry& registry);

  // Adds and clears the tally and the local histograms.
  void flush(IntervalMetrics& interval);
  // fraud_misrouted_records_total at 0 for each of `topic`'s partitions 0..partitions-1, so that
  // an alert on its increase sees the first misrouted record.
  void exposeMisrouted(const std::string& topic, int32_t partitions);
  [[nodiscard]] static std::vector<double> latenessBuckets();
  [[nodiscard]] static std::vector<double> processingBuckets();
  [[nodiscard]] static std::vector<double> stageBuckets();

  prometheus::Registry& shared_registry;  // where families made elsewhere (lateness) register
  // fraud_detector_build_info{version, librdkafka, rocksdb, revision} 1: what runs (the
  // libraries' versions as loaded), for joins in PromQL.
  prometheus::Family<prometheus::Gauge>& build_info;
  // fraud_broken_invariants_total{invariant}: bugs the code met and went on past (a release
  // build; a debug build stops at the first), a series per base::Invariant, at 0 from the start.
  prometheus::Family<prometheus::Counter>& broken_invariants;

  // Adds to broken_invariants what base counted since the last call. One caller thread (the
  // ingest thread's metrics refresh).
  void refreshBrokenInvariants();

 private:
  std::array<uint64_t, base::kInvariantCount> invariants_seen_{};
};

}  // namespace fraud::service
