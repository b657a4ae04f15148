#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "detectors/alert.h"
#include "detectors/card_state.h"
#include "detectors/options.h"

namespace fraud::detectors {

// The per-card rule (docs/rule.md §2 steps 2–3, §3, §4) over one card's state. Pure: no clock, no
// I/O. `live_from` is the partition's live horizon ST(p) - G - W: events before it are dead. Not
// thread-safe (it keeps a scratch tally); one per partition worker.
class WindowDetector {
 public:
  explicit WindowDetector(const DetectorOptions& options) : options_(options) {}

  // docs/rule.md §2 step 2: the card holds a live event with this tx_id.
  [[nodiscard]] static bool isDuplicate(const CardState& state, std::string_view tx_id,
                                        EventTime live_from);

  struct Accepted {
    uint32_t overflow_evicted = 0;
    std::optional<Alert> alert;
  };

  // docs/rule.md §2 step 3 onward: drops the card's dead events and dead incident, adds the
  // transaction, evicts the earliest events beyond max_events, then runs detection (§3) and updates
  // the incident (§4). `live_from` is the horizon after stream time took in the transaction.
  [[nodiscard]] Accepted accept(CardState& state, const CardRef& card_ref, const Transaction& tx,
                                EventTime live_from);

 private:
  struct Window {
    EventList::Cursor begin;  // S(s*) is the events from begin up to (not including) end_offset
    uint32_t end_offset = 0;
  };
  // docs/rule.md §3: S(s*) for the smallest qualifying s in [t - W, t], if any.
  [[nodiscard]] std::optional<Window> smallestQualifyingWindow(const CardState& state, EventTime t);

  DetectorOptions options_;
  // Per-country event counts of the window under scan; all zero between calls.
  std::array<uint32_t, kCountryIndexCount> tally_{};
};

}  // namespace fraud::detectors
