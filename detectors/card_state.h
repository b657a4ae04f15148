#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detectors/transaction.h"

namespace fraud::detectors {

// One accepted transaction as a card keeps it (SPEC §2).
struct Event {
  EventTime time = 0;
  Country country;
  std::string tx_id;

  friend bool operator==(const Event&, const Event&) = default;
};

// A card's open incident (SPEC §4). `start` is its identity and never changes.
struct Incident {
  EventTime start = 0;
  EventTime end = 0;
  uint32_t revision = 0;
  std::vector<Country> countries;  // sorted, distinct

  friend bool operator==(const Incident&, const Incident&) = default;
};

// Everything the detector keeps for one card.
// Invariant: `events` is ordered by (time, order of acceptance): a new event goes after every
// event with the same time, so the order survives serialization without a sequence number.
struct CardState {
  std::vector<Event> events;
  std::optional<Incident> incident;

  [[nodiscard]] bool empty() const { return events.empty() && !incident.has_value(); }
  // The latest time at which this card still matters: its newest event or its incident's end.
  // The card can be dropped once this falls behind the partition's live horizon (SPEC §2, §4).
  [[nodiscard]] EventTime lastRelevantTime() const;

  friend bool operator==(const CardState&, const CardState&) = default;
};

}  // namespace fraud::detectors
