#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "detectors/card_store.h"
#include "detectors/options.h"
#include "detectors/window_detector.h"

namespace fraud::detectors {

enum class Outcome : uint8_t { kAccepted, kLateDropped, kDuplicate };

// One input partition's detector: its stream time, lateness and duplicate decisions (docs/rule.md
// §2), the per-card rule (§3, §4), and the expiry of cards that fell out of the live horizon. The
// live service and `replay` run this same class; it reads no clock. Not thread-safe: one partition
// worker drives it.
class PartitionDetector {
 public:
  // `stream_time` resumes a partition from a checkpoint (0..kMaxEventTime, as decoding bounds
  // it; outside, decisions follow the value but the arithmetic saturates instead of
  // overflowing); the store must hold that checkpoint's card states.
  PartitionDetector(const DetectorOptions& options, CardStore& store,
                    std::optional<EventTime> stream_time = std::nullopt);

  struct Result {
    Outcome outcome = Outcome::kAccepted;
    uint32_t overflow_evicted = 0;
    std::optional<Alert> alert;
  };

  // Processes one valid record of this partition, in partition order.
  [[nodiscard]] Result process(const CardRef& card_ref, const Transaction& tx);

  // ST(p): the largest event time accepted so far, none before the first.
  [[nodiscard]] std::optional<EventTime> streamTime() const { return stream_time_; }
  [[nodiscard]] const DetectorOptions& options() const { return options_; }
  // The store this detector reads and changes.
  [[nodiscard]] CardStore& store() const { return store_; }

 private:
  struct Expiry {
    EventTime last_relevant;
    CardRef card_ref;
    friend bool operator>(const Expiry& a, const Expiry& b) {
      return a.last_relevant > b.last_relevant;
    }
  };

  // Drops every card whose events and incident all lie before `live_from`. Each held card has
  // exactly one index entry; an entry that finds its card still live is pushed back at the
  // card's current last relevant time, so the index stays as small as the card count.
  void expireBefore(EventTime live_from);

  DetectorOptions options_;
  CardStore& store_;
  std::optional<EventTime> stream_time_;
  WindowDetector window_;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<>> expiry_;
};

}  // namespace fraud::detectors
