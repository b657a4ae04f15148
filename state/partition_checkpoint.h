#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/transaction.h"

namespace fraud::state {

// Where a partition's state stands: the input offset it has consumed up to (exclusive), the
// stream time there, and the changelog offset from which a restore of newer changes continues.
struct PartitionCheckpoint {
  int64_t next_offset = 0;
  std::optional<detectors::EventTime> stream_time;
  int64_t changelog_next_offset = 0;

  // A versioned fixed-size binary form, as stored beside the partition's cards.
  [[nodiscard]] std::string encode() const;
  // Nothing when `bytes` is not an encoding of this version.
  [[nodiscard]] static std::optional<PartitionCheckpoint> decode(std::string_view bytes);
  friend bool operator==(const PartitionCheckpoint&, const PartitionCheckpoint&) = default;
};

}  // namespace fraud::state
