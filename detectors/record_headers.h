#pragma once

#include <string_view>

// The Kafka record header names of the output records (docs/rule.md §1 dead letters, §6 alerts),
// defined once for the service that writes them and `fraud-loadgen verify` that audits them. They
// live in detectors/ because they are part of the output contract, not of the transport: plain
// names, no librdkafka type.
namespace fraud::detectors::headers {

// Alerts (docs/rule.md §6): the alert's idempotency_key, so consumers can drop repeats unparsed.
inline constexpr std::string_view kIdempotencyKey = "idempotency-key";

// Dead letters (docs/rule.md §1): why the record was rejected (rejectReasonName) and where it came
// from.
inline constexpr std::string_view kRejectReason = "reject-reason";
inline constexpr std::string_view kSourceTopic = "source-topic";
inline constexpr std::string_view kSourcePartition = "source-partition";
inline constexpr std::string_view kSourceOffset = "source-offset";

// Dead letters cut to fit the producer's size limit: the record's size in bytes before cutting,
// and "true" on a copy that was cut (the record itself stays on the input topic).
inline constexpr std::string_view kOriginalSize = "original-size";
inline constexpr std::string_view kTruncated = "truncated";
// With kTruncated: the record key's size in bytes before cutting (a key is cut only when it
// alone leaves the value no room).
inline constexpr std::string_view kOriginalKeySize = "original-key-size";

}  // namespace fraud::detectors::headers
