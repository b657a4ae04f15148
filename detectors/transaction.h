#pragma once

#include <compare>
#include <cstdint>
#include <string_view>

namespace fraud::detectors {

// Event time: milliseconds since the Unix epoch (docs/rule.md §1), 0..kMaxEventTime.
using EventTime = int64_t;
inline constexpr EventTime kMaxEventTime = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z

// An ISO 3166-1 alpha-2 code, always upper case. Ordered as its text.
struct Country {
  char code[2] = {'?', '?'};

  static constexpr Country of(char first, char second) { return Country{{first, second}}; }
  [[nodiscard]] std::string_view view() const { return {code, 2}; }
  // Dense index 0..675 for per-country tallies.
  [[nodiscard]] constexpr unsigned index() const {
    return static_cast<unsigned>(code[0] - 'A') * 26u + static_cast<unsigned>(code[1] - 'A');
  }
  friend constexpr auto operator<=>(const Country& a, const Country& b) {
    return a.index() <=> b.index();
  }
  friend constexpr bool operator==(const Country& a, const Country& b) {
    return a.code[0] == b.code[0] && a.code[1] == b.code[1];
  }
};
inline constexpr unsigned kCountryIndexCount = 26 * 26;

// A validated input record (docs/rule.md §1). The views point into the decoder that produced it and
// are valid until its next decode() call.
struct Transaction {
  std::string_view tx_id;
  std::string_view card;  // the clear card: never stored, logged or exported
  Country country;
  EventTime event_time = 0;
};

}  // namespace fraud::detectors
