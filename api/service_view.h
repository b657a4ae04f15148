#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/card_state.h"

namespace fraud::api {

// What the API reads from the running service. `service/` implements ServiceView; the API never
// sees Kafka, RocksDB or the service's threads. Every method is safe to call from the HTTP
// threads while the service ingests, and returns a snapshot (never a reference into live state).

enum class PartitionPhase { kRestoring, kActive };

// Lateness quantiles over the measured interval, in ms (a record on time or ahead counts 0).
// Read from log-bucketed histograms: each figure is its bucket's upper bound, at most 1/16
// (6.25 %) above the true value.
struct LatenessQuantiles {
  int64_t p50_ms = 0;
  int64_t p99_ms = 0;
  int64_t p999_ms = 0;
  int64_t max_ms = 0;  // exact
};

// What one grace would have dropped over the interval (lateness against stream time above it).
struct GraceCandidate {
  int64_t grace_ms = 0;
  uint64_t dropped = 0;
  double dropped_share = 0;  // of `records`
};

// Lateness measured over the last `interval_ms` of wall clock (docs/rule.md §2). Against stream
// time: ST(p) as it stood before the record minus its event time; a record is late-dropped exactly
// when that exceeds the grace, and a dropped record never moves ST(p), so the figures say what
// any other grace would have dropped. Against the record timestamp: the Kafka record's own
// timestamp minus its event time (how late the producer was), for records that have one.
struct LatenessReport {
  int64_t interval_ms = 0;
  int64_t grace_ms = 0;              // the configured grace G
  uint64_t records = 0;              // valid records measured (rejected ones are not)
  uint64_t late_dropped = 0;         // of those, dropped by the current grace (exact)
  double late_dropped_share = 0;     // late_dropped / records; 0 without records
  uint64_t timestamped_records = 0;  // records with a record timestamp
  std::optional<LatenessQuantiles> vs_stream_time;       // none without records
  std::optional<LatenessQuantiles> vs_record_timestamp;  // none without timestamped records
  // The smallest grace that would have kept 99 % / 99.9 % of the records (none without records).
  std::optional<int64_t> advised_grace_p99_ms;
  std::optional<int64_t> advised_grace_p999_ms;
  std::vector<GraceCandidate> candidates;  // ascending grace_ms; the current grace among them
};

// One alert this instance detected, as the console lists it. Never the clear card.
struct RecentAlert {
  std::string alert_id;
  std::string idempotency_key;
  detectors::CardRef card_ref;
  int32_t partition = 0;
  uint32_t revision = 0;
  int64_t window_start_ms = 0;
  int64_t window_end_ms = 0;
  std::vector<std::string> countries;
  int64_t trigger_event_time_ms = 0;
  int64_t detected_at_ms = 0;
};

struct PartitionStatus {
  int32_t partition = 0;
  PartitionPhase phase = PartitionPhase::kRestoring;
  std::optional<int64_t> stream_time_ms;         // ST(p); none before the first record
  std::optional<double> event_time_lag_seconds;  // wall clock minus ST(p)
  int64_t next_offset = -1;                      // next input offset to process; -1 unknown
  std::optional<int64_t> high_watermark;         // input partition's end offset, when known
  std::optional<int64_t> offset_lag;             // high_watermark - next_offset
  uint64_t cards = 0;                            // cards held in state
  double restore_progress = 0;                   // 0..1; 1 once active
  uint64_t restored_records = 0;                 // changelog records applied by the restore
  std::optional<LatenessReport> lateness;        // none when the service measures none
  // Records processed here whose key the producers' partitioner maps to another partition
  // (docs/rule.md §9), since this instance took the partition.
  uint64_t misrouted_records = 0;
};

// A warm copy this instance keeps of a partition owned elsewhere (--standby-replicas).
struct StandbyCopy {
  int32_t partition = 0;
  std::optional<int64_t> changelog_offset;  // the next changelog offset it lacks
  std::optional<int64_t> lag_records;       // what it lacked when its last catch-up began
  std::optional<double> seconds_since_caught_up;
  uint64_t catchups = 0;
  uint64_t failures = 0;
};

struct ServiceStatus {
  bool consumer_joined = false;             // the consumer is a member of the group
  bool outputs_blocked = false;             // alerts cannot be written: input is held
  std::string instance_id;                  // this instance, as peers name it
  std::vector<PartitionStatus> partitions;  // the partitions assigned here, by number
  std::vector<StandbyCopy> standbys;        // warm copies of partitions owned elsewhere
  uint64_t state_bytes = 0;                 // RocksDB SST and memtable bytes
};

struct CardSnapshot {
  detectors::CardRef card_ref;
  int32_t partition = 0;
  std::optional<int64_t> stream_time_ms;  // the partition's stream time
  detectors::CardState state;
};

enum class CardLookupOutcome {
  kFound,
  kNotFound,   // the partition is held here and the card has no state
  kRestoring,  // the partition is held here but is still being restored
  kNotHeld,    // the partition is not assigned to this instance
};

struct CardLookup {
  CardLookupOutcome outcome = CardLookupOutcome::kNotFound;
  std::optional<CardSnapshot> card;  // set when kFound
};

class ServiceView {
 public:
  virtual ~ServiceView() = default;

  [[nodiscard]] virtual ServiceStatus status() const = 0;
  // The input partition the producers' partitioner gives this card (the Kafka key); nothing
  // while the topic's partition count is unknown.
  [[nodiscard]] virtual std::optional<int32_t> partitionOf(std::string_view card) const = 0;
  [[nodiscard]] virtual detectors::CardRef cardRef(std::string_view card) const = 0;
  // The card's state in one partition.
  [[nodiscard]] virtual CardLookup lookup(int32_t partition,
                                          const detectors::CardRef& card_ref) const = 0;
  // The card's state in whichever partition held here has it (kNotFound when none has it,
  // kRestoring when none has it and some are still restoring).
  [[nodiscard]] virtual CardLookup lookupHeld(const detectors::CardRef& card_ref) const = 0;
  // The instance id of the group member that owns `partition`, when known.
  [[nodiscard]] virtual std::optional<std::string> ownerOf(int32_t partition) const = 0;
  // status().instance_id, without computing the rest of the status.
  [[nodiscard]] virtual std::string instanceId() const { return status().instance_id; }

  // For answering on an HTTP I/O thread: lookup() and lookupHeld()'s answer when it can be
  // given at once, without waiting for a lock another thread holds and without reading disk
  // (the card, or its absence, is in the state's memory cache; or kNotHeld, kRestoring, which
  // need no state). Nothing otherwise: then call lookup() or lookupHeld() (off the I/O thread).
  // The defaults always decline. A view that answers kNotHeld here must answer ownerOf() and
  // instanceId() without waiting too: the router reads them for that answer on the I/O thread.
  [[nodiscard]] virtual std::optional<CardLookup> tryLookupCached(
      int32_t partition, const detectors::CardRef& card_ref) const {
    (void)partition;
    (void)card_ref;
    return std::nullopt;
  }
  [[nodiscard]] virtual std::optional<CardLookup> tryLookupHeldCached(
      const detectors::CardRef& card_ref) const {
    (void)card_ref;
    return std::nullopt;
  }
  // The lateness of every partition measured here, merged (the default measures nothing).
  [[nodiscard]] virtual LatenessReport latenessMerged() const { return {}; }
  // The last `limit` alerts detected here, newest first (the default keeps none).
  [[nodiscard]] virtual std::vector<RecentAlert> recentAlerts(size_t limit) const {
    (void)limit;
    return {};
  }
};

}  // namespace fraud::api
