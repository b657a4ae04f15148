#pragma once

// Internal to detectors/ (README "internal headers"): the field rules of docs/rule.md §1 that more
// than one decoder applies, so that the record codec and the card-control decoder (§9) read a
// card and an event time the same way. Holds a simdjson type, which no public header may.

#include <simdjson.h>

#include <cstddef>
#include <optional>
#include <string_view>

#include "detectors/transaction.h"

namespace fraud::detectors::fields {

// §1 invalid_json: whether `record` is one JSON text per RFC 8259 (UTF-8, grammar, escapes, no
// trailing bytes, no byte order mark) whose value is an object. `object` then points into
// `parser`, valid until its next parse.
[[nodiscard]] bool parseObject(simdjson::dom::parser& parser, std::string_view record,
                               simdjson::dom::object& object);

// §1 `card`: 4..64 characters, each printable ASCII other than space (0x21..0x7E).
[[nodiscard]] bool isValidCard(std::string_view card);

// §1's control characters: below U+0020, and U+007F (C0 and DEL). The C1 range U+0080..U+009F is
// not among them. `text` is decoded UTF-8, so each such code point is exactly one such byte.
[[nodiscard]] bool hasControlCharacter(std::string_view text);

// A decoded string of min_bytes..max_bytes bytes (of UTF-8) with no control character: §1
// `tx_id` (1..64), §9 `reason` (1..200) and `author` (1..64).
[[nodiscard]] inline bool isValidText(std::string_view text, size_t min_bytes, size_t max_bytes) {
  return text.size() >= min_bytes && text.size() <= max_bytes && !hasControlCharacter(text);
}

// §1 `event_time` in either form: an integer literal (no fraction, no exponent) or an RFC 3339
// string, 0..kMaxEventTime. Nothing for any other value (null, another type, out of range).
[[nodiscard]] std::optional<EventTime> eventTimeOf(const simdjson::dom::element& value);

}  // namespace fraud::detectors::fields
