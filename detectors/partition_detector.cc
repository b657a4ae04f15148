#include "detectors/partition_detector.h"

#include <algorithm>
#include <limits>

namespace fraud::detectors {
namespace {

// `time - span`, saturating. The stream time is 0..kMaxEventTime (event times are, and a resumed
// one comes from a bounded checkpoint) and the options bound G and W, so this never saturates
// while those invariants hold; when one is broken it must still not overflow (undefined
// behaviour; a wrapped horizon lies in the future and late-drops every record).
EventTime before(EventTime time, int64_t span) {
  EventTime result;
  if (__builtin_sub_overflow(time, span, &result)) {
    return span > 0 ? std::numeric_limits<EventTime>::min() : std::numeric_limits<EventTime>::max();
  }
  return result;
}

}  // namespace

PartitionDetector::PartitionDetector(const DetectorOptions& options, CardStore& store,
                                     std::optional<EventTime> stream_time)
    : options_(options), store_(store), stream_time_(stream_time), window_(options) {
  store_.forEach([this](const CardRef& ref, const CardState& state) {
    expiry_.push(Expiry{state.lastRelevantTime(), ref});
  });
}

PartitionDetector::Result PartitionDetector::process(const CardRef& card_ref,
                                                     const Transaction& tx) {
  const EventTime t = tx.event_time;
  if (stream_time_ && t < before(*stream_time_, options_.grace_ms)) {
    return {Outcome::kLateDropped, 0, std::nullopt};
  }
  const EventTime live_before =
      stream_time_ ? before(before(*stream_time_, options_.grace_ms), options_.window_ms)
                   : std::numeric_limits<EventTime>::min();
  if (const CardState* state = store_.find(card_ref);
      state != nullptr && WindowDetector::isDuplicate(*state, tx.tx_id, live_before)) {
    return {Outcome::kDuplicate, 0, std::nullopt};
  }

  stream_time_ = stream_time_ ? std::max(*stream_time_, t) : t;
  const EventTime live_from = before(before(*stream_time_, options_.grace_ms), options_.window_ms);
  CardState& state = store_.modify(card_ref);
  const bool new_card = state.empty();
  auto accepted = window_.accept(state, card_ref, tx, live_from);
  if (new_card) expiry_.push(Expiry{state.lastRelevantTime(), card_ref});
  expireBefore(live_from);
  return {Outcome::kAccepted, accepted.overflow_evicted, std::move(accepted.alert)};
}

void PartitionDetector::expireBefore(EventTime live_from) {
  while (!expiry_.empty() && expiry_.top().last_relevant < live_from) {
    const CardRef card_ref = expiry_.top().card_ref;
    expiry_.pop();
    const CardState* state = store_.find(card_ref);
    if (state == nullptr) continue;
    const EventTime last_relevant = state->lastRelevantTime();
    if (last_relevant < live_from) {
      store_.erase(card_ref);
    } else {
      expiry_.push(Expiry{last_relevant, card_ref});
    }
  }
}

}  // namespace fraud::detectors
