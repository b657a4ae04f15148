#include "detectors/record_pipeline.h"

#include <algorithm>

namespace fraud::detectors {

RecordPipeline::RecordPipeline(const PipelineOptions& options, const CardHasher& hasher)
    : options_(options), hasher_(hasher) {}

RecordPipeline::~RecordPipeline() = default;

const PreparedRecord& RecordPipeline::prepare(size_t slot, std::string_view value,
                                              std::optional<int64_t> timestamp_ms,
                                              CardStore& store) {
  Slot& s = slots_[slot];
  if (!s.decoder) s.decoder = std::make_unique<RecordDecoder>();
  auto decoded = s.decoder->decode(value);  // docs/rule.md §1
  PreparedRecord& record = s.record;
  record.rejected = decoded.rejected;
  record.tx = decoded.tx;
  if (record.rejected) return record;
  if (timestamp_ms && options_.max_future_skew_ms &&
      isFutureEventTime(record.tx.event_time, *timestamp_ms, *options_.max_future_skew_ms)) {
    record.rejected = RejectReason::kFutureEventTime;
    return record;
  }
  record.card_ref = hasher_.hash(record.tx.card);  // docs/rule.md §5
  store.prefetch(record.card_ref);
  return record;
}

// The lookup of a card in a store such as MemoryCardStore takes three dependent memory accesses:
// index slot (prefetch(), by prepare), entry (prefetchMore()), events. While a batch is prepared,
// stage() moves each earlier record one step on, kLag records after its previous step, so the
// misses overlap with decoding; warm() and warmAhead() do the steps the batch's last records
// still need, kStepAhead records before they are detected.
namespace {
constexpr size_t kLag = 8;
constexpr size_t kStepAhead = 6;
}  // namespace

void RecordPipeline::prefetchEntry(size_t slot, CardStore& store) const {
  const PreparedRecord& record = slots_[slot].record;
  if (!record.rejected) store.prefetchMore(record.card_ref);
}

void RecordPipeline::prefetchEvents(size_t slot, CardStore& store) const {
  const PreparedRecord& record = slots_[slot].record;
  if (record.rejected) return;
  if (const auto* state = store.find(record.card_ref); state != nullptr) state->events.prefetch();
}

void RecordPipeline::stage(size_t slot, CardStore& store) const {
  if (slot >= kLag) prefetchEntry(slot - kLag, store);
  if (slot >= 2 * kLag) prefetchEvents(slot - 2 * kLag, store);
}

void RecordPipeline::warm(size_t slots, CardStore& store) const {
  // Entries of the last kLag slots; events of the kLag before them (stage() fetched their entries).
  const size_t entries_from = slots > kLag ? slots - kLag : 0;
  const size_t events_from = slots > 2 * kLag ? slots - 2 * kLag : 0;
  for (size_t i = entries_from; i < slots; ++i) prefetchEntry(i, store);
  for (size_t i = events_from; i < entries_from; ++i) prefetchEvents(i, store);
}

void RecordPipeline::warmAhead(size_t slot, size_t slots, CardStore& store) const {
  // The events of the last kLag slots, whose entries warm() fetched.
  const size_t ahead = slot + kStepAhead;
  if (ahead < slots && ahead + kLag >= slots) prefetchEvents(ahead, store);
}

RecordOutcome RecordPipeline::detect(size_t slot, PartitionDetector& detector,
                                     std::string& alert_json) {
  const PreparedRecord& record = slots_[slot].record;
  RecordOutcome outcome;
  if (record.rejected) {
    outcome.rejected = record.rejected;
    return outcome;
  }
  outcome.card = record.tx.card;
  outcome.event_time = record.tx.event_time;
  outcome.detected = detector.process(record.card_ref, record.tx);  // docs/rule.md §2–§4
  if (outcome.detected.alert) {
    // docs/rule.md §5, §6
    outcome.alert_key = AlertKey::of(*outcome.detected.alert);
    const size_t before = alert_json.size();
    appendAlertJson(alert_json, *outcome.detected.alert, *outcome.alert_key, detector.options(),
                    options_.detected_at_ms == nullptr ? 0 : options_.detected_at_ms());
    outcome.alert_json_size = alert_json.size() - before;
  }
  return outcome;
}

RecordOutcome RecordPipeline::process(std::string_view value, std::optional<int64_t> timestamp_ms,
                                      PartitionDetector& detector, std::string& alert_json) {
  // The detector's store is the one whose state the prefetch hint concerns.
  (void)prepare(0, value, timestamp_ms, detector.store());
  return detect(0, detector, alert_json);
}

}  // namespace fraud::detectors
