// The partitioners must agree with the producers' own: librdkafka's exported partitioner
// functions, and the Java client's published murmur2 vectors (Kafka UtilsTest).
#include "detectors/partitioner.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fraud::detectors {
namespace {

// Random keys of every length 1..80, of printable and arbitrary bytes.
std::vector<std::string> randomKeys(size_t count) {
  std::mt19937_64 rng(20240611);  // the sequence need not be portable, only varied
  std::vector<std::string> keys;
  keys.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    std::string key(1 + i % 80, '\0');
    const bool printable = i % 2 == 0;
    for (char& c : key) {
      c = printable ? static_cast<char>(0x21 + rng() % 94) : static_cast<char>(rng() & 0xFF);
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

TEST(Partitioner, ParsesAndNamesBothPartitioners) {
  EXPECT_EQ(parsePartitioner("crc32"), Partitioner::kCrc32);
  EXPECT_EQ(parsePartitioner("murmur2"), Partitioner::kMurmur2);
  EXPECT_EQ(parsePartitioner("CRC32"), std::nullopt);
  EXPECT_EQ(parsePartitioner("consistent_random"), std::nullopt);
  EXPECT_EQ(partitionerName(Partitioner::kCrc32), "crc32");
  EXPECT_EQ(partitionerName(Partitioner::kMurmur2), "murmur2");
}

TEST(Partitioner, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
}

TEST(Partitioner, Murmur2MatchesJavaPublishedVectors) {
  const std::vector<std::pair<std::string, int32_t>> cases = {
      {"21", -973932308},
      {"foobar", -790332482},
      {"a-little-bit-long-string", -985981536},
      {"a-little-bit-longer-string", -1486304829},
      {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
      {"abc", 479470107},
      {"1", -1993445489},
      {"12", 126087238},
      {"123", -267702483},
      {"1234", -1614185708},
      {"12345", -1188365604},
  };
  for (const auto& [key, expected] : cases) {
    EXPECT_EQ(static_cast<int32_t>(murmur2(key)), expected) << key;
  }
}

TEST(Partitioner, Crc32PartitionMatchesLibrdkafkaConsistentPartitioner) {
  for (const int32_t count : {1, 2, 3, 7, 12, 64, 1000}) {
    for (const auto& key : randomKeys(5000)) {
      const int32_t expected = rd_kafka_msg_partitioner_consistent(nullptr, key.data(), key.size(),
                                                                   count, nullptr, nullptr);
      ASSERT_EQ(partitionCrc32(key, count), expected) << "count " << count;
      // consistent_random differs from consistent only for an empty key.
      const int32_t expected_default = rd_kafka_msg_partitioner_consistent_random(
          nullptr, key.data(), key.size(), count, nullptr, nullptr);
      ASSERT_EQ(partitionCrc32(key, count), expected_default) << "count " << count;
    }
  }
}

TEST(Partitioner, Murmur2PartitionMatchesLibrdkafkaMurmur2Partitioner) {
  for (const int32_t count : {1, 2, 3, 7, 12, 64, 1000}) {
    for (const auto& key : randomKeys(5000)) {
      const int32_t expected = rd_kafka_msg_partitioner_murmur2(nullptr, key.data(), key.size(),
                                                                count, nullptr, nullptr);
      ASSERT_EQ(partitionMurmur2(key, count), expected) << "count " << count;
    }
  }
}

TEST(Partitioner, Murmur2PartitionClearsTheSignBitLikeJavaToPositive) {
  // murmur2("21") is negative: Java takes (h & 0x7fffffff) % n, not abs(h) % n.
  const uint32_t h = murmur2("21");
  ASSERT_GT(h, 0x7FFFFFFFu);
  EXPECT_EQ(partitionMurmur2("21", 1000), static_cast<int32_t>((h & 0x7FFFFFFFu) % 1000));
  EXPECT_EQ(partitionFor(Partitioner::kMurmur2, "21", 1000), partitionMurmur2("21", 1000));
  EXPECT_EQ(partitionFor(Partitioner::kCrc32, "21", 1000), partitionCrc32("21", 1000));
}

}  // namespace
}  // namespace fraud::detectors
