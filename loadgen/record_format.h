#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "detectors/record_codec.h"
#include "detectors/transaction.h"

namespace fraud::loadgen {

// How a record writes its event_time (docs/rule.md §1 allows both forms).
enum class TimeFormat : uint8_t {
  kEpochMillis,    // 1700000000123
  kRfc3339Utc,     // "2023-11-14T22:13:20.123Z"
  kRfc3339Offset,  // the same instant at +01:00: "2023-11-14T23:13:20.123+01:00"
};

// One transaction as the model writes it. `card` is the clear card: it goes into the record and
// the Kafka key, never into the truth file or the summary.
struct TransactionFields {
  std::string_view tx_id;
  std::string_view card;
  detectors::Country country;
  detectors::EventTime event_time = 0;
  int64_t amount_cents = 0;
  std::string_view currency;
  uint32_t merchant = 0;
  bool lowercase_country = false;  // valid: the detector upper-cases it
  TimeFormat time_format = TimeFormat::kEpochMillis;
};

// Appends the record as one JSON object on one line (no newline).
void appendRecordJson(std::string& out, const TransactionFields& fields);

// Ways a record is made invalid, each breaking exactly one rule of docs/rule.md §1.
enum class Malformation : uint8_t {
  kTruncated,         // invalid_json: the object cut short
  kNanAmount,         // invalid_json: "amount":NaN
  kLoneSurrogate,     // invalid_json: "\ud800" in an ignored field
  kTrailingBytes,     // invalid_json: bytes after the object
  kNotAnObject,       // invalid_json: the object inside an array
  kMissingTxId,       // missing_field
  kMissingCard,       // missing_field
  kMissingCountry,    // missing_field
  kMissingEventTime,  // missing_field
  kBadCountry,        // invalid_field: "D1"
  kFractionalTime,    // invalid_field: 1700000000000.5
  kShortCard,         // invalid_field: 3 characters
  kImpossibleDate,    // invalid_field: February 30th
  kNullTxId,          // invalid_field: null
};
inline constexpr size_t kMalformationCount = 14;

[[nodiscard]] detectors::RejectReason rejectReasonOf(Malformation malformation);

// Appends an invalid record built from `fields`. `cut` picks where kTruncated cuts (any value).
// Never writes a newline, a carriage return or an empty record, so it stays one JSONL line that
// replay counts.
void appendMalformedRecord(std::string& out, const TransactionFields& fields,
                           Malformation malformation, uint64_t cut);

// RFC 3339 with milliseconds, `offset_minutes` east of UTC ("Z" when 0). `ms` >= 0.
void appendRfc3339(std::string& out, detectors::EventTime ms, int offset_minutes);

}  // namespace fraud::loadgen
