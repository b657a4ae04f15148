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
  auto decoded = s.decoder->decode(value);  // SPEC §1
  PreparedRecord& record = s.record;
  record.rejected = decoded.rejected;
  record.tx = decoded.tx;
  if (record.rejected) return record;
  if (timestamp_ms && options_.max_future_skew_ms &&
      isFutureEventTime(record.tx.event_time, *timestamp_ms, *options_.max_future_skew_ms)) {
    record.rejected = RejectReason::kFutureEventTime;
    return record;
  }
  record.card_ref = hasher_.hash(record.tx.card);  // SPEC §5
  store.prefetch(record.card_ref);
  return record;
}

void RecordPipeline::warm(size_t slots, CardStore& store) const {
  // Each pass issues the next memory access of every card's lookup, so the misses of a batch
  // overlap: the index slots (fetched by prepare), then the entries, then the events.
  for (size_t i = 0; i < slots; ++i) {
    const PreparedRecord& record = slots_[i].record;
    if (!record.rejected) store.prefetchMore(record.card_ref);
  }
  for (size_t i = 0; i < slots; ++i) {
    const PreparedRecord& record = slots_[i].record;
    if (record.rejected) continue;
    if (const auto* state = store.find(record.card_ref); state != nullptr) {
      state->events.prefetch();
    }
  }
}

RecordOutcome RecordPipeline::detect(size_t slot, PartitionDetector& detector,
                                     std::string& alert_json) {
  const PreparedRecord& record = slots_[slot].record;
  RecordOutcome outcome;
  if (record.rejected) {
    outcome.rejected = record.rejected;
    counts_.countRejected(*record.rejected);
    return outcome;
  }
  outcome.detected = detector.process(record.card_ref, record.tx);  // SPEC §2–§4
  counts_.count(outcome.detected);
  if (outcome.detected.alert) {  // SPEC §5, §6
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

OutcomeCounts RecordPipeline::takeCounts() {
  OutcomeCounts taken = counts_;
  counts_ = OutcomeCounts{};
  return taken;
}

}  // namespace fraud::detectors
