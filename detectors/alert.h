#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/card_state.h"
#include "detectors/options.h"

namespace fraud::detectors {

// What one new incident or escalation reports (docs/rule.md §4, §6).
struct Alert {
  CardRef card_ref;
  Incident incident;                // as it stands after this alert
  std::vector<std::string> tx_ids;  // S(s*), by (event time, order of acceptance)
  std::string trigger_tx_id;
  EventTime trigger_event_time = 0;

  friend bool operator==(const Alert&, const Alert&) = default;
};

// The alert's identity (docs/rule.md §5): deterministic in card and incident start, so a replay, a
// restart or a partition move re-emits an alert only under the same key.
struct AlertKey {
  std::string alert_id;         // 32 hex characters
  std::string idempotency_key;  // alert_id ":" revision

  [[nodiscard]] static AlertKey of(const Alert& alert);
};

// Appends the alert record (docs/rule.md §6) as one JSON object, without a newline.
void appendAlertJson(std::string& out, const Alert& alert, const AlertKey& key,
                     const DetectorOptions& options, int64_t detected_at_ms);

// Appends `text` as a JSON string literal, quotes included.
void appendJsonString(std::string& out, std::string_view text);

}  // namespace fraud::detectors
