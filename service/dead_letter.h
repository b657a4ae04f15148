#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace fraud::service {

// A rejected record as it goes to the dead-letter topic (docs/rule.md §8): its bytes as they came,
// or, when key, value and headers together would exceed what the producer and the topic accept, cut
// to fit. The record itself stays on the input topic; the dead letter says where it came from.
struct DeadLetter {
  std::string_view key;
  std::optional<std::string_view> value;  // none: the input record was a tombstone
  bool truncated = false;
  size_t original_key_size = 0;
  size_t original_value_size = 0;
};

// Bytes kept free of `max_record_bytes` for the headers that say a record was cut, and for the
// record and batch framing that the broker counts against its limit and the producer does not.
inline constexpr size_t kDeadLetterReserveBytes = 1024;

// Fits a rejected record into `max_record_bytes` (key + value + headers, as librdkafka counts a
// record against message.max.bytes). `header_bytes` are the headers it always carries. The value
// is cut first; the key only when the key alone leaves no room. Never fails: with a limit below
// the reserve, key and value are cut to nothing.
[[nodiscard]] DeadLetter fitDeadLetter(std::string_view key, std::optional<std::string_view> value,
                                       size_t header_bytes, size_t max_record_bytes);

}  // namespace fraud::service
