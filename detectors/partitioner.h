#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fraud::detectors {

// How producers map a record key to a partition. The loadgen assigns partitions with these, and
// the service's card lookup finds a card's partition with the same function the producers use.
enum class Partitioner : uint8_t {
  kCrc32,    // librdkafka's default (`consistent_random` for a non-empty key)
  kMurmur2,  // the Java client's default
};

// "crc32" or "murmur2"; nothing for any other text.
[[nodiscard]] std::optional<Partitioner> parsePartitioner(std::string_view name);
[[nodiscard]] std::string_view partitionerName(Partitioner partitioner);

// CRC-32 (IEEE 802.3, as zlib) of the key's bytes modulo `partition_count`: librdkafka's
// `consistent` partitioner, and its default `consistent_random` for a non-empty key.
// `partition_count` >= 1.
[[nodiscard]] int32_t partitionCrc32(std::string_view key, int32_t partition_count);

// Kafka's murmur2 (seed 0x9747b28c) of the key, sign bit cleared, modulo `partition_count`:
// the Java producer's default for a keyed record (`Utils.toPositive(murmur2(key)) % n`), and
// librdkafka's `murmur2` partitioner. `partition_count` >= 1.
[[nodiscard]] int32_t partitionMurmur2(std::string_view key, int32_t partition_count);

[[nodiscard]] int32_t partitionFor(Partitioner partitioner, std::string_view key,
                                   int32_t partition_count);

// The raw hashes, exposed for tests against published vectors.
[[nodiscard]] uint32_t crc32(std::string_view data);
[[nodiscard]] uint32_t murmur2(std::string_view data);

}  // namespace fraud::detectors
