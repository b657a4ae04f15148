#pragma once

#include <cstdint>
#include <string_view>

#include "detectors/partitioner.h"

namespace fraud::detectors {

// docs/rule.md §9 (co-partitioning): whether a keyed record sits in the partition its producers'
// partitioner gives its key. A card's rule is right only when all its records are in one
// partition, so a record in another is *misrouted*: the input's records are checked as they
// are processed (and processed all the same), and a card control would be refused for it.

// How a topic's producers spread its records: their partitioner and the topic's partition
// count (both as the service was told and found them at start).
struct TopicPartitioning {
  Partitioner partitioner = Partitioner::kCrc32;
  int32_t partition_count = 0;  // >= 1, or nothing can be checked
};

enum class Routing : uint8_t {
  kInPlace,    // the key maps to the partition the record is in
  kMisrouted,  // the key maps to another partition (KeyRouting::key_partition)
  kUnkeyed,    // an empty key: both partitioners spread keyless records (librdkafka at random,
               // the Java client sticky), so no partition is theirs and none is wrong
  kUnknown,    // no partition count, or the record's partition is not below it (the topic has
               // grown since the count was read: the producers' mapping is not known)
};

struct KeyRouting {
  Routing routing = Routing::kUnknown;
  int32_t key_partition = -1;  // with kInPlace and kMisrouted: where the key belongs
};

// Where `key` belongs under `topic`, against `partition`, the partition the record is in.
[[nodiscard]] KeyRouting routeKey(const TopicPartitioning& topic, std::string_view key,
                                  int32_t partition);

}  // namespace fraud::detectors
