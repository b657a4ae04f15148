#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "detectors/card_state.h"

namespace fraud::state {

// Binary form of a CardState, as stored in RocksDB and on the changelog topic. The first byte is
// the format version; a reader refuses any other version rather than misread it.
inline constexpr uint8_t kCardStateFormat = 1;

void encodeCardState(const detectors::CardState& state, std::string& out);
[[nodiscard]] std::string encodeCardState(const detectors::CardState& state);
// The same bytes into `buffer`, when they fit: never allocates. Returns the encoding's size;
// when that exceeds buffer.size(), what the buffer holds is not an encoding.
[[nodiscard]] size_t encodeCardStateInto(const detectors::CardState& state,
                                         std::span<char> buffer) noexcept;

// The largest encoding of a card holding `max_events` events (each with a tx_id of the longest
// size docs/rule.md §1 allows) and an incident naming every possible country: what a changelog
// record of one card can reach, to check against the topic's record limit at start-up.
[[nodiscard]] size_t maxEncodedCardStateBytes(size_t max_events);

// Nothing when `bytes` is not a well-formed encoding of this format version, or names a time no
// card state of the rule holds: an event time outside 0..kMaxEventTime (docs/rule.md §1), an
// incident starting outside it or ending more than the longest window past it (§4).
[[nodiscard]] std::optional<detectors::CardState> decodeCardState(std::string_view bytes);
// Whether decodeCardState() would accept `bytes`, without building the state: never allocates
// (a restore checks every changelog record it stores).
[[nodiscard]] bool isCardState(std::string_view bytes) noexcept;

}  // namespace fraud::state
