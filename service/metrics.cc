#include "service/metrics.h"

#include <string>

#include "service/cli/versions.h"
#include "service/version.h"

#ifndef FRAUD_REVISION
#define FRAUD_REVISION ""
#endif

namespace fraud::service {
namespace {

prometheus::Labels buildLabels() {
  // The libraries as this process loaded them, which a package upgrade changes under a built
  // binary (cli::runtimeVersions).
  const cli::RuntimeVersions versions = cli::runtimeVersions();
  prometheus::Labels labels{{"version", std::string(kVersion)},
                            {"librdkafka", versions.librdkafka},
                            {"rocksdb", versions.rocksdb}};
  if (std::string_view(FRAUD_REVISION).empty()) return labels;
  labels.emplace("revision", FRAUD_REVISION);
  return labels;
}

}  // namespace

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

std::vector<double> ServiceMetrics::latenessBuckets() {
  return {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 90, 120, 180, 240, 300};
}

std::vector<double> ServiceMetrics::processingBuckets() {
  return {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, 0.1};
}

std::vector<double> ServiceMetrics::stageBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

RecordMetrics::RecordMetrics(prometheus::Registry& registry)
    : records(BuildCounter()
                  .Name("fraud_records_total")
                  .Help("Input records by outcome: accepted, late_dropped, duplicate, rejected")
                  .Register(registry)),
      rejected(BuildCounter()
                   .Name("fraud_rejected_records_total")
                   .Help("Rejected input records by reason (docs/rule.md §1)")
                   .Register(registry)),
      key_mismatch(BuildCounter()
                       .Name("fraud_key_mismatch_records_total")
                       .Help("Records whose Kafka key is not their card: processed, but they "
                             "break per-card locality")
                       .Register(registry)
                       .Add({})),
      misrouted(BuildCounter()
                    .Name("fraud_misrouted_records_total")
                    .Help("Records processed in a partition other than the one the producers' "
                          "partitioner (--partitioner) gives their key: processed, but their "
                          "card's records are split between partitions")
                    .Register(registry)),
      dead_letters_truncated(
          BuildCounter()
              .Name("fraud_dead_letters_truncated_total")
              .Help("Dead letters cut to fit the dead-letter topic's record limit (headers "
                    "truncated, original-size)")
              .Register(registry)
              .Add({})),
      overflow_evicted(BuildCounter()
                           .Name("fraud_overflow_evicted_events_total")
                           .Help("Events evicted because a card held more than max-events")
                           .Register(registry)
                           .Add({})),
      alerts(BuildCounter()
                 .Name("fraud_alerts_total")
                 .Help("Alerts emitted, by kind: new incident or escalation")
                 .Register(registry)),
      lateness(BuildHistogram()
                   .Name("fraud_event_lateness_seconds")
                   .Help("Processing wall-clock time minus event time of each record")
                   .Register(registry)
                   .Add({}, ServiceMetrics::latenessBuckets())),
      processing(BuildHistogram()
                     .Name("fraud_record_processing_seconds")
                     .Help("Time per record to decode, detect and enqueue its output (a consumed "
                           "batch's average)")
                     .Register(registry)
                     .Add({}, ServiceMetrics::processingBuckets())),
      accepted_(records.Add({{"outcome", "accepted"}})),
      late_dropped_(records.Add({{"outcome", "late_dropped"}})),
      duplicate_(records.Add({{"outcome", "duplicate"}})),
      rejected_total_(records.Add({{"outcome", "rejected"}})),
      alerts_new_(alerts.Add({{"kind", "new"}})),
      alerts_escalation_(alerts.Add({{"kind", "escalation"}})) {
  for (size_t i = 0; i < detectors::kRejectReasonCount; ++i) {
    rejected_by_reason_[i] = &rejected.Add(
        {{"reason",
          std::string(detectors::rejectReasonName(static_cast<detectors::RejectReason>(i)))}});
  }
}

PartitionMetrics::PartitionMetrics(prometheus::Registry& registry)
    : stream_time(BuildGauge()
                      .Name("fraud_partition_stream_time_timestamp_seconds")
                      .Help("Stream time ST(p): the largest accepted event time, epoch seconds")
                      .Register(registry)),
      event_time_lag(BuildGauge()
                         .Name("fraud_partition_event_time_lag_seconds")
                         .Help("Wall clock minus the partition's stream time")
                         .Register(registry)),
      offset_lag(BuildGauge()
                     .Name("fraud_partition_offset_lag")
                     .Help("Records in the partition not processed yet")
                     .Register(registry)),
      state_cards(BuildGauge()
                      .Name("fraud_state_cards")
                      .Help("Cards held in state, by partition")
                      .Register(registry)),
      state_bytes(BuildGauge()
                      .Name("fraud_state_bytes")
                      .Help("RocksDB live SST and memtable bytes")
                      .Register(registry)
                      .Add({})),
      state_cache_bytes(BuildGauge()
                            .Name("fraud_state_cache_bytes")
                            .Help("Estimated bytes of decoded card states cached in memory")
                            .Register(registry)
                            .Add({})),
      rebalances(BuildCounter()
                     .Name("fraud_rebalances_total")
                     .Help("Consumer group rebalance events by kind: assign, revoke, lost")
                     .Register(registry)),
      assigned_partitions(BuildGauge()
                              .Name("fraud_assigned_partitions")
                              .Help("Input partitions assigned to this instance")
                              .Register(registry)
                              .Add({})) {
  for (const char* kind : {"assign", "revoke", "lost"}) rebalances.Add({{"kind", kind}});
}

RestoreMetrics::RestoreMetrics(prometheus::Registry& registry)
    : changelog_malformed(BuildCounter()
                              .Name("fraud_changelog_malformed_records_total")
                              .Help("Changelog records a restore could not decode or rejected "
                                    "(their cards dropped, or the checkpoint not adopted), and "
                                    "local checkpoints it rejected")
                              .Register(registry)
                              .Add({})),
      restore_progress(BuildGauge()
                           .Name("fraud_restore_progress_ratio")
                           .Help("Restore progress of a partition, 0..1 (1 once restored)")
                           .Register(registry)),
      restored_records(BuildCounter()
                           .Name("fraud_restore_records_total")
                           .Help("Changelog records applied by restores")
                           .Register(registry)
                           .Add({})),
      restore_duration(
          BuildHistogram()
              .Name("fraud_restore_duration_seconds")
              .Help("Time to restore one partition's state")
              .Register(registry)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.5, 1, 5, 15, 60, 300, 900})),
      standby_lag(BuildGauge()
                      .Name("fraud_standby_lag_records")
                      .Help("Changelog records a warm standby copy lacked when its last "
                            "catch-up began")
                      .Register(registry)),
      standby_age(BuildGauge()
                      .Name("fraud_standby_catchup_age_seconds")
                      .Help("Seconds since a warm standby copy's last catch-up ended")
                      .Register(registry)) {}

CommitMetrics::CommitMetrics(prometheus::Registry& registry)
    : transactions(BuildCounter()
                       .Name("fraud_kafka_transactions_total")
                       .Help("Kafka transactions by result: committed, aborted")
                       .Register(registry)),
      commit_duration(
          BuildHistogram()
              .Name("fraud_commit_duration_seconds")
              .Help("Time to commit a transaction and checkpoint the state")
              .Register(registry)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                               0.5, 1, 5, 30})),
      checkpoint_write(BuildHistogram()
                           .Name("fraud_checkpoint_write_seconds")
                           .Help("One background write of committed card states and their "
                                 "checkpoint to the local RocksDB")
                           .Register(registry)
                           .Add({}, ServiceMetrics::stageBuckets())),
      alert_delivery_failures(BuildCounter()
                                  .Name("fraud_alert_delivery_failures_total")
                                  .Help("Alerts of --alert-delivery immediate the broker did not "
                                        "acknowledge (their transaction aborts; sent again)")
                                  .Register(registry)
                                  .Add({})),
      fenced_owners(BuildCounter()
                        .Name("fraud_fenced_owners_total")
                        .Help("Transactional ids of departed partition owners fenced on a "
                              "partition's arrival (their open transaction aborted at once)")
                        .Register(registry)),
      producer_recoveries(BuildCounter()
                              .Name("fraud_producer_recoveries_total")
                              .Help("Fatal producer errors recovered from: every task closed "
                                    "dirty (uncommitted work processed again) and the producer "
                                    "replaced under the same transactional id")
                              .Register(registry)
                              .Add({})) {
  for (const char* result : {"committed", "aborted"}) transactions.Add({{"result", result}});
  for (const char* result : {"ok", "failed", "rejoined"}) fenced_owners.Add({{"result", result}});
}

StageMetrics::StageMetrics(prometheus::Registry& registry)
    : stages(BuildHistogram()
                 .Name("fraud_stage_seconds")
                 .Help("Latency by stage: per record fetch, queue, process; per alert "
                       "commit_wait, commit, delivery (docs/performance.md)")
                 .Register(registry)),
      stage_fetch(stages.Add({{"stage", "fetch"}}, ServiceMetrics::stageBuckets())),
      stage_queue(stages.Add({{"stage", "queue"}}, ServiceMetrics::stageBuckets())),
      stage_process(stages.Add({{"stage", "process"}}, ServiceMetrics::processingBuckets())),
      stage_commit_wait(stages.Add({{"stage", "commit_wait"}}, ServiceMetrics::stageBuckets())),
      stage_commit(stages.Add({{"stage", "commit"}}, ServiceMetrics::stageBuckets())),
      stage_delivery(stages.Add({{"stage", "delivery"}}, ServiceMetrics::stageBuckets())),
      ingest_waits(BuildHistogram()
                       .Name("fraud_ingest_wait_seconds")
                       .Help("Time the ingest thread waited instead of processing, by reason: "
                             "held_output, store")
                       .Register(registry)),
      ingest_wait_held_output(
          ingest_waits.Add({{"reason", "held_output"}}, ServiceMetrics::stageBuckets())),
      ingest_wait_store(ingest_waits.Add({{"reason", "store"}}, ServiceMetrics::stageBuckets())) {}

ServiceMetrics::ServiceMetrics(prometheus::Registry& registry)
    : RecordMetrics(registry),
      PartitionMetrics(registry),
      RestoreMetrics(registry),
      CommitMetrics(registry),
      StageMetrics(registry),
      shared_registry(registry),
      build_info(BuildGauge()
                     .Name("fraud_detector_build_info")
                     .Help("Always 1; the labels name what runs: version, the librdkafka and "
                           "rocksdb libraries' versions and, when the build was given one, the "
                           "source revision")
                     .Register(registry)),
      broken_invariants(BuildCounter()
                            .Name("fraud_broken_invariants_total")
                            .Help("Broken invariants the service met and went on past: each is a "
                                  "bug to report (the log holds a line 'bug: ...' for it)")
                            .Register(registry)) {
  build_info.Add(buildLabels()).Set(1);
  for (size_t i = 0; i < base::kInvariantCount; ++i) {
    broken_invariants.Add(
        {{"invariant", std::string(base::invariantName(static_cast<base::Invariant>(i)))}});
  }
}

void ServiceMetrics::refreshBrokenInvariants() {
  for (size_t i = 0; i < base::kInvariantCount; ++i) {
    const auto invariant = static_cast<base::Invariant>(i);
    const uint64_t count = base::brokenInvariantCount(invariant);
    if (count == invariants_seen_[i]) continue;
    broken_invariants.Add({{"invariant", std::string(base::invariantName(invariant))}})
        .Increment(static_cast<double>(count - invariants_seen_[i]));
    invariants_seen_[i] = count;
  }
}

IntervalMetrics::IntervalMetrics()
    : lateness(ServiceMetrics::latenessBuckets()),
      processing(ServiceMetrics::processingBuckets()),
      fetch(ServiceMetrics::stageBuckets()),
      queue(ServiceMetrics::stageBuckets()) {}

void RecordTally::countMisrouted(std::string_view topic, int32_t partition) {
  for (MisroutedCount& count : misrouted) {
    if (count.partition == partition && count.topic == topic) {
      ++count.records;
      return;
    }
  }
  misrouted.push_back(MisroutedCount{std::string(topic), partition, 1});
}

void IntervalMetrics::clear() {
  tally = RecordTally{};
  lateness = LocalHistogram(ServiceMetrics::latenessBuckets());
  processing = LocalHistogram(ServiceMetrics::processingBuckets());
  fetch = LocalHistogram(ServiceMetrics::stageBuckets());
  queue = LocalHistogram(ServiceMetrics::stageBuckets());
}

void ServiceMetrics::exposeMisrouted(const std::string& topic, int32_t partitions) {
  for (int32_t p = 0; p < partitions; ++p) {
    (void)misrouted.Add({{"topic", topic}, {"partition", std::to_string(p)}});
  }
}

void ServiceMetrics::flush(IntervalMetrics& interval) {
  RecordTally& tally = interval.tally;
  const auto& counts = tally.outcomes;
  dead_letters_truncated.Increment(static_cast<double>(tally.dead_letters_truncated));
  accepted_.Increment(static_cast<double>(counts.accepted));
  late_dropped_.Increment(static_cast<double>(counts.late_dropped));
  duplicate_.Increment(static_cast<double>(counts.duplicate));
  key_mismatch.Increment(static_cast<double>(tally.key_mismatch));
  overflow_evicted.Increment(static_cast<double>(counts.overflow_evicted));
  alerts_new_.Increment(static_cast<double>(counts.incidents));
  alerts_escalation_.Increment(static_cast<double>(counts.alerts - counts.incidents));
  uint64_t rejected_sum = 0;
  for (size_t i = 0; i < counts.rejected.size(); ++i) {
    rejected_by_reason_[i]->Increment(static_cast<double>(counts.rejected[i]));
    rejected_sum += counts.rejected[i];
  }
  rejected_total_.Increment(static_cast<double>(rejected_sum));
  for (const MisroutedCount& count : tally.misrouted) {
    misrouted.Add({{"topic", count.topic}, {"partition", std::to_string(count.partition)}})
        .Increment(static_cast<double>(count.records));
  }
  tally = RecordTally{};
  interval.lateness.flushTo(lateness);
  interval.processing.flushTo(processing, &stage_process);
  interval.fetch.flushTo(stage_fetch);
  interval.queue.flushTo(stage_queue);
}

}  // namespace fraud::service
