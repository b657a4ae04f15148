#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detectors/base/status.h"
#include "detectors/transaction.h"

namespace fraud::loadgen {

// One injected fraud scenario that the rule (docs/rule.md) says must raise an alert: one line of
// the truth file. The clear card is never written; the card is named by its card_ref.
struct TruthScenario {
  uint64_t scenario = 0;
  std::string card_ref;
  int32_t partition = 0;
  std::vector<std::string> countries;             // distinct, sorted
  std::vector<detectors::EventTime> event_times;  // of its records, in order sent
  std::vector<std::string> tx_ids;                // of its records, in order sent
};

// One JSON object, no newline:
// {"scenario":7,"card_ref":"…","partition":3,"countries":["BR","DE","JP"],
//  "event_times":[…],"tx_ids":[…]}
[[nodiscard]] std::string truthLine(const TruthScenario& scenario);

// Reads a truth file (JSONL). An error naming the path (and line) on failure.
[[nodiscard]] base::Result<std::vector<TruthScenario>> readTruthFile(const std::string& path);

// The part of an alert the recall check reads.
struct AlertWindow {
  std::string card_ref;
  detectors::EventTime window_start = 0;
  detectors::EventTime window_end = 0;
};

// The recall rule: a scenario is recalled when an alert names its card_ref and its window
// [window_start, window_end] holds at least one of the scenario's event times. The model keeps
// ordinary traffic of a card to two countries per window and never reuses a scenario's card, so
// with a threshold of 3 or more the card's first alert is this scenario's, and its window holds
// one of the scenario's records.
[[nodiscard]] bool isRecalled(const TruthScenario& scenario,
                              const std::vector<AlertWindow>& alerts_of_card);

}  // namespace fraud::loadgen
