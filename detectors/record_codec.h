#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "detectors/transaction.h"

namespace fraud::detectors {

// Why a record was rejected (docs/rule.md §1), in the order the reasons are tried.
enum class RejectReason : uint8_t {
  kInvalidJson,
  kMissingField,
  kInvalidField,
  kFutureEventTime,  // live service only: event_time beyond record timestamp + max_future_skew
};
inline constexpr size_t kRejectReasonCount = 4;

// The reason's name as it appears in counts, metrics and dead-letter headers.
[[nodiscard]] std::string_view rejectReasonName(RejectReason reason);

struct DecodeResult {
  std::optional<RejectReason> rejected;
  Transaction tx;  // meaningful only when ok()

  [[nodiscard]] bool ok() const { return !rejected.has_value(); }
};

// Validates a whole record and extracts its transaction (docs/rule.md §1). One decoder per thread:
// it reuses its parse buffers, and the views in a result live until the next decode().
class RecordDecoder {
 public:
  RecordDecoder();
  ~RecordDecoder();
  RecordDecoder(const RecordDecoder&) = delete;
  RecordDecoder& operator=(const RecordDecoder&) = delete;

  [[nodiscard]] DecodeResult decode(std::string_view record);

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

// docs/rule.md §1 event_time as a string: RFC 3339 `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, a
// real calendar date and time, fraction truncated to milliseconds. Returns epoch milliseconds, or
// nothing when the text breaks the rule or the instant lies outside 0..kMaxEventTime.
[[nodiscard]] std::optional<EventTime> parseRfc3339(std::string_view text);

// The live service's extra rule (docs/rule.md §1): an event stamped later than its Kafka record's
// timestamp plus the allowed skew (>= 0) is rejected as future_event_time. A bound past the
// int64 range is no bound: nothing is later than it.
[[nodiscard]] inline bool isFutureEventTime(EventTime event_time, int64_t record_timestamp_ms,
                                            int64_t max_future_skew_ms) {
  // Saturating: a record timestamp near INT64_MAX must not overflow into the past.
  // (max_future_skew_ms is 0..kMaxEventTime, so the subtraction cannot overflow.)
  if (record_timestamp_ms >= kMaxEventTime - max_future_skew_ms) return false;
  return event_time > record_timestamp_ms + max_future_skew_ms;
}

}  // namespace fraud::detectors
