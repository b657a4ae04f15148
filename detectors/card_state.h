#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/transaction.h"

namespace fraud::detectors {

// A tx_id held inline: SPEC §1 caps it at 64 bytes, so an event never allocates, and a card's
// events, ids included, sit in one contiguous block for the duplicate check.
class TxId {
 public:
  static constexpr size_t kMaxSize = 64;

  TxId() = default;
  // `id` must be at most kMaxSize bytes (the codec guarantees it); longer is cut.
  TxId(std::string_view id)  // NOLINT(google-explicit-constructor): a value type for text
      : size_(static_cast<uint8_t>(std::min(id.size(), kMaxSize))) {
    std::memcpy(data_, id.data(), size_);
  }
  TxId(const char* id) : TxId(std::string_view(id)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] std::string_view view() const { return {data_, size_}; }
  [[nodiscard]] size_t size() const { return size_; }
  friend bool operator==(const TxId& a, const TxId& b) { return a.view() == b.view(); }
  friend bool operator==(const TxId& a, std::string_view b) { return a.view() == b; }

 private:
  uint8_t size_ = 0;
  char data_[kMaxSize] = {};
};

// One accepted transaction as a card keeps it (SPEC §2).
struct Event {
  EventTime time = 0;
  Country country;
  TxId tx_id;

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
