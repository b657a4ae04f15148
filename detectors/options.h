#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "detectors/transaction.h"

namespace fraud::detectors {

// The detection rule's parameters (docs/rule.md, the table of parameters). The rule reads them by
// name only.
struct DetectorOptions {
  // W: two events share a window when their times differ by at most this. 1..kMaxEventTime.
  int64_t window_ms = 600'000;
  // G: how far behind its partition's stream time a record may be and still count.
  // 0..kMaxEventTime.
  int64_t grace_ms = 120'000;
  // N: distinct countries in one window that raise an alert. 1..max_events.
  uint32_t threshold = 3;
  // M: live events one card may hold; the earliest is evicted beyond it. threshold..1'000'000.
  uint32_t max_events = 1000;

  // Every violated bound, one message each; empty when the options are usable.
  [[nodiscard]] std::vector<std::string> validate() const;
};

}  // namespace fraud::detectors
