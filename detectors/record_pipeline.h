#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/alert.h"
#include "detectors/card_ref.h"
#include "detectors/card_store.h"
#include "detectors/partition_detector.h"
#include "detectors/record_codec.h"

namespace fraud::detectors {

// The rule's parameters are the detector's (PartitionDetector::options()); these are the rest.
struct PipelineOptions {
  // docs/rule.md §1 future_event_time: records whose event time lies beyond their record timestamp
  // plus this are rejected. Nothing: no such check (`replay`: a file has no record timestamps).
  std::optional<int64_t> max_future_skew_ms;
  // The wall clock that stamps `detected_at` in rendered alerts (docs/rule.md §6), read once per
  // alert. detectors/ reads no clock itself; the caller passes one (a fixed one in tests).
  int64_t (*detected_at_ms)() = nullptr;  // nullptr: detected_at 0
};

// One record on its way through prepare(): decoded, checked and hashed.
struct PreparedRecord {
  std::optional<RejectReason> rejected;  // set: a dead letter, nothing else below is meaningful
  Transaction tx;                        // its views live until the next prepare() of the same slot
  CardRef card_ref;                      // HMAC of tx.card (docs/rule.md §5)
};

// What detect() made of one record: all a caller needs of it (it counts the outcome with
// OutcomeCounts::count, writes the alert or the dead letter), without reading the slot back.
struct RecordOutcome {
  // Set when the record was rejected (docs/rule.md §1): the live service writes it as a dead letter
  // with this reason (rejectReasonName); the detector never saw it.
  std::optional<RejectReason> rejected;
  // When not rejected: the record's card (valid until the slot is prepared again, like the
  // value it was decoded from) and event time.
  std::string_view card;
  EventTime event_time = 0;
  // When not rejected: the detector's outcome, evictions, and the alert if one was raised.
  PartitionDetector::Result detected;
  // With detected.alert: its key (the alert's record key is detected.alert->card_ref.hex(), the
  // header headers::kIdempotencyKey is alert_key->idempotency_key) and the alert record's JSON,
  // appended to the caller's buffer as `alert_json_size` bytes without a newline.
  std::optional<AlertKey> alert_key;
  size_t alert_json_size = 0;
};

// The one path a record takes from bytes to an alert (docs/rule.md §1–§6), shared by the live
// service, `fraud-detector replay` and `fraud-loadgen verify`, so they cannot drift:
//
//   prepare:  decode (RecordDecoder) -> future-skew check (optional) -> card_ref -> prefetch
//   detect:   PartitionDetector::process -> render alert JSON -> RecordOutcome
//
// The pipeline keeps no counts: each caller counts the outcomes it is given, once, with
// OutcomeCounts::count (the live task per commit interval, replay and verify per run).
//
// The two steps are apart so that a caller can batch: prepare up to kSlots records (each in its
// own slot), then detect them in the same order; the memory latency of one card's state then
// overlaps the work on the others (replay does this). A caller that handles one record at a time
// uses slot 0, or process().
//
// The PartitionDetector and its CardStore belong to the caller and are passed to each call: the
// live task recreates its detector when it rewinds, replay and verify keep one per partition.
// Records of one partition must be detected in partition order; slots of a batch may hold
// records of different partitions, each detected with its own detector.
//
// Not thread-safe: one thread drives a pipeline (the hasher it shares may be shared).
class RecordPipeline {
 public:
  static constexpr size_t kSlots = 32;

  // `hasher` must outlive the pipeline.
  RecordPipeline(const PipelineOptions& options, const CardHasher& hasher);
  ~RecordPipeline();
  RecordPipeline(const RecordPipeline&) = delete;
  RecordPipeline& operator=(const RecordPipeline&) = delete;

  // Decodes `value` into `slot` (< kSlots), checks its event time against `timestamp_ms` when
  // both a timestamp and options.max_future_skew_ms are given, hashes its card and hints `store`
  // (the store of the detector that will detect it) to fetch the card's state. Replaces what the
  // slot held. `value` must stay alive until the slot is detected.
  const PreparedRecord& prepare(size_t slot, std::string_view value,
                                std::optional<int64_t> timestamp_ms, CardStore& store);

  // Optional, for a batch of `slots` prepared slots whose cards are all in `store`: stage(i, ...)
  // after each prepare(i, ...), warm() after preparing the batch, then warmAhead(i, ...) before
  // each detect(i). Together they fetch each card's entry and events a few records after its
  // index slot and before detecting it (while preparing, where the batch is long enough), so
  // detect finds them in cache. Worth it for in-memory stores; they change nothing.
  void stage(size_t slot, CardStore& store) const;
  void warm(size_t slots, CardStore& store) const;
  void warmAhead(size_t slot, size_t slots, CardStore& store) const;

  // Runs the prepared record of `slot` through `detector` (unless it was rejected) and appends
  // the alert's JSON to `alert_json` when one is raised. Each prepared slot is detected once.
  // Lets detectors::CardStoreError from the detector's store through (the record's effect on
  // the store is then unknown).
  [[nodiscard]] RecordOutcome detect(size_t slot, PartitionDetector& detector,
                                     std::string& alert_json);

  // prepare(0, ...) then detect(0, ...).
  [[nodiscard]] RecordOutcome process(std::string_view value, std::optional<int64_t> timestamp_ms,
                                      PartitionDetector& detector, std::string& alert_json);

  [[nodiscard]] const PipelineOptions& options() const { return options_; }

 private:
  struct Slot {
    std::unique_ptr<RecordDecoder> decoder;  // made on first use: most callers use one slot
    PreparedRecord record;
  };

  void prefetchEntry(size_t slot, CardStore& store) const;
  void prefetchEvents(size_t slot, CardStore& store) const;

  PipelineOptions options_;
  const CardHasher& hasher_;
  std::array<Slot, kSlots> slots_;
};

}  // namespace fraud::detectors
