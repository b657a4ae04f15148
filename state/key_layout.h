#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "detectors/card_ref.h"

namespace fraud::state {

// Internal. How the state is laid out in RocksDB's one keyspace:
//   "F"                         -> state format version (decimal text)
//   'C' be32(partition) ref[32] -> encoded CardState
//   'P' be32(partition)         -> encoded PartitionCheckpoint
// Big-endian partitions keep a partition's cards contiguous and in card-ref byte order.
inline constexpr std::string_view kFormatKey = "F";

// The first key of `partition`'s range of `tag` ('C' cards, 'P' checkpoint).
[[nodiscard]] std::string partitionPrefix(char tag, int32_t partition);
[[nodiscard]] std::string cardKey(int32_t partition, const detectors::CardRef& ref);
[[nodiscard]] std::string checkpointKey(int32_t partition);
// The card of a card key (one cardKey() made).
[[nodiscard]] detectors::CardRef cardOfKey(std::string_view key);

}  // namespace fraud::state
