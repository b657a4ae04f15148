#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/base/status.h"
#include "detectors/transaction.h"

namespace fraud::state {

// Where a partition's state stands: the input offset it has consumed up to (exclusive), the
// stream time there, and the changelog offset from which a restore of newer changes continues.
//
// Bounds, which decode() enforces (a checkpoint record on the changelog topic can come from any
// producer, and one adopted out of bounds harms the partition for good: each commit writes its
// stream time forward): both offsets >= 0 (an absolute offset; -1 and -2 are librdkafka's
// logical end and beginning), the stream time 0..kMaxEventTime (docs/rule.md §1: an event
// time; INT64_MAX would late-drop every later record, INT64_MIN overflow the detector).
struct PartitionCheckpoint {
  int64_t next_offset = 0;                          // >= 0
  std::optional<detectors::EventTime> stream_time;  // 0..kMaxEventTime
  int64_t changelog_next_offset = 0;                // >= 0

  // A versioned fixed-size binary form, as stored beside the partition's cards.
  [[nodiscard]] std::string encode() const;
  // Nothing when `bytes` is not an encoding of this version, or one with a value out of bounds.
  [[nodiscard]] static std::optional<PartitionCheckpoint> decode(std::string_view bytes);
  // Why decode() refuses `bytes` (which value is out of bounds, or that it is no checkpoint of
  // this version), for the log; ok when it does not.
  [[nodiscard]] static base::Status rejection(std::string_view bytes);
  friend bool operator==(const PartitionCheckpoint&, const PartitionCheckpoint&) = default;
};

}  // namespace fraud::state
