#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "detectors/card_ref.h"
#include "detectors/record_codec.h"
#include "detectors/transaction.h"

namespace fraud::detectors {

// Card controls (docs/rule.md "Card controls"): a decision of the fraud team about one card, held
// by card_ref (never the clear card), that diverts the card's alerts to the suppressed output while
// it is in force. Controls never change state, incidents or revisions.

enum class ControlAction : uint8_t {
  kSuppress,  // from <= trigger_event_time < until: the alert is suppressed
  kRemove,    // the card's control, if any, is gone (also what a tombstone means)
};

// The control as applied: what a card holds. A remove is never held (it erases).
struct CardControl {
  ControlAction action = ControlAction::kRemove;
  EventTime from = 0;   // kSuppress: inclusive; 0 when the control names none
  EventTime until = 0;  // kSuppress: exclusive; from < until
  std::string reason;   // 1..200 bytes of UTF-8, no control character (C0 or DEL)
  std::string author;   // 1..64 bytes of UTF-8, no control character (C0 or DEL)

  // Whether an alert raised by a record of event time `trigger_event_time` is suppressed.
  [[nodiscard]] bool suppresses(EventTime trigger_event_time) const {
    return action == ControlAction::kSuppress && from <= trigger_event_time &&
           trigger_event_time < until;
  }

  friend bool operator==(const CardControl&, const CardControl&) = default;
};

inline constexpr size_t kMaxControlReasonBytes = 200;
inline constexpr size_t kMaxControlAuthorBytes = 64;

// Why a control record was refused, in the order the decoder tries them (docs/rule.md). The first
// three are §1's reasons with §1's names; kMisrouted is never returned by the decoder: the caller
// decides it with routeKey() (detectors/key_routing.h) against the controls topic, and counts it
// here.
enum class ControlRejectReason : uint8_t {
  kInvalidJson,   // not one JSON object (as §1), or an empty value
  kMissingField,  // card, action, reason, author; until when action is "suppress"
  kInvalidField,  // a field null, of the wrong type or breaking its rule; a tombstone's key not
                  // a card
  kCardMismatch,  // `card` is not the record key (byte for byte)
  kMisrouted,     // the key belongs to another partition of the controls topic (the caller's)
};
inline constexpr size_t kControlRejectReasonCount = 5;

// The reason's name in counts and dead-letter headers: §1's names for the first three.
[[nodiscard]] std::string_view controlRejectReasonName(ControlRejectReason reason);

struct ControlDecodeResult {
  std::optional<ControlRejectReason> rejected;
  // When ok(): the card the control is about (the key; for a keyless decode, the value's `card`),
  // a view into the decoded record or the key, valid until the next decode(). The caller hashes
  // it (CardHasher) and drops it: the clear card is never kept.
  std::string_view card;
  CardControl control;  // meaningful only when ok()

  [[nodiscard]] bool ok() const { return !rejected.has_value(); }
};

// Decodes control records (docs/rule.md "Card controls"). One decoder per thread: it reuses its
// parse buffer, and the views in a result live until the next decode().
class ControlDecoder {
 public:
  ControlDecoder();
  ~ControlDecoder();
  ControlDecoder(const ControlDecoder&) = delete;
  ControlDecoder& operator=(const ControlDecoder&) = delete;

  // A record of the controls topic: its key and its value, std::nullopt for a null value (a
  // tombstone: a remove of the key's card, which must then be a valid card).
  [[nodiscard]] ControlDecodeResult decode(std::string_view key,
                                           std::optional<std::string_view> value);

  // A value without a key (a line of replay's controls file): the key is taken to be the value's
  // own `card`, so it is never kCardMismatch; and a line is never a tombstone (`null` is
  // kInvalidJson, as any JSON value that is not an object).
  [[nodiscard]] ControlDecodeResult decodeKeyless(std::string_view value);

 private:
  [[nodiscard]] ControlDecodeResult decodeValue(std::optional<std::string_view> key,
                                                std::string_view value);

  struct Parser;
  std::unique_ptr<Parser> parser_;
};

// Tallies of control records: applied, and refused by reason.
struct ControlCounts {
  uint64_t applied = 0;
  std::array<uint64_t, kControlRejectReasonCount> rejected{};

  void countRejected(ControlRejectReason reason) { ++rejected[static_cast<size_t>(reason)]; }
  // {"applied":N,"rejected":{...}}, with only the reasons seen.
  [[nodiscard]] std::string json() const;
};

// The controls in force, one per card at most: the last applied. Not thread-safe: one task (the
// one that owns the card's partition) applies and reads them.
class CardControls {
 public:
  // A suppress replaces the card's control; a remove erases it (also when it holds none).
  void apply(const CardRef& card_ref, CardControl control);

  // The card's control, or null. Valid until the next apply().
  [[nodiscard]] const CardControl* find(const CardRef& card_ref) const;

  // The control that suppresses an alert of `card_ref` raised by a record of event time
  // `trigger_event_time` (CardControl::suppresses), or null when the alert goes out as usual.
  [[nodiscard]] const CardControl* suppressing(const CardRef& card_ref,
                                               EventTime trigger_event_time) const;

  [[nodiscard]] size_t size() const { return controls_.size(); }

 private:
  std::unordered_map<CardRef, CardControl, CardRefHash> controls_;
};

}  // namespace fraud::detectors
