// routeKey (docs/rule.md §9): a keyed record is misrouted when its producers' partitioner puts
// its key in another partition than the one it is in; the partitions are librdkafka's own.
#include "detectors/key_routing.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>

namespace fraud::detectors {
namespace {

// The first of "card-0000", "card-0001", ... that `partitioner` maps to `partition` of `count`.
std::string keyIn(Partitioner partitioner, int32_t partition, int32_t count) {
  for (int i = 0;; ++i) {
    std::string key = "card-" + std::to_string(10'000 + i);
    if (partitionFor(partitioner, key, count) == partition) return key;
  }
}

TEST(KeyRouting, AKeyOfPartitionTwoInPartitionOneIsMisrouted) {
  const TopicPartitioning topic{Partitioner::kCrc32, 4};
  const std::string key = keyIn(Partitioner::kCrc32, 2, 4);
  // Where librdkafka's default partitioner sends it, independently of partitioner.cc.
  ASSERT_EQ(rd_kafka_msg_partitioner_consistent_random(nullptr, key.data(), key.size(), 4, nullptr,
                                                       nullptr),
            2);
  const KeyRouting in_one = routeKey(topic, key, 1);
  EXPECT_EQ(in_one.routing, Routing::kMisrouted);
  EXPECT_EQ(in_one.key_partition, 2);
  const KeyRouting in_two = routeKey(topic, key, 2);
  EXPECT_EQ(in_two.routing, Routing::kInPlace);
  EXPECT_EQ(in_two.key_partition, 2);
}

TEST(KeyRouting, TheJavaClientsPartitionerIsMurmur2) {
  const TopicPartitioning topic{Partitioner::kMurmur2, 4};
  const std::string key = keyIn(Partitioner::kMurmur2, 2, 4);
  ASSERT_EQ(rd_kafka_msg_partitioner_murmur2(nullptr, key.data(), key.size(), 4, nullptr, nullptr),
            2);
  EXPECT_EQ(routeKey(topic, key, 1).routing, Routing::kMisrouted);
  EXPECT_EQ(routeKey(topic, key, 2).routing, Routing::kInPlace);
  // A key in place under one partitioner is misrouted under the other when they disagree.
  const std::string crc_key = keyIn(Partitioner::kCrc32, 1, 4);
  const int32_t murmur_partition = partitionFor(Partitioner::kMurmur2, crc_key, 4);
  EXPECT_EQ(routeKey(topic, crc_key, 1).routing,
            murmur_partition == 1 ? Routing::kInPlace : Routing::kMisrouted);
  EXPECT_EQ(routeKey(topic, crc_key, 1).key_partition, murmur_partition);
}

TEST(KeyRouting, AKeylessRecordBelongsNowhereAndIsNeverMisrouted) {
  for (const Partitioner partitioner : {Partitioner::kCrc32, Partitioner::kMurmur2}) {
    const KeyRouting routing = routeKey(TopicPartitioning{partitioner, 4}, "", 1);
    EXPECT_EQ(routing.routing, Routing::kUnkeyed);
    EXPECT_EQ(routing.key_partition, -1);
  }
}

TEST(KeyRouting, WithoutAPartitionCountOrBeyondItNothingIsKnown) {
  const std::string key = keyIn(Partitioner::kCrc32, 2, 4);
  EXPECT_EQ(routeKey(TopicPartitioning{Partitioner::kCrc32, 0}, key, 1).routing, Routing::kUnknown);
  // Partition 5 of a topic counted with 4: the topic grew since; its mapping is not known.
  EXPECT_EQ(routeKey(TopicPartitioning{Partitioner::kCrc32, 4}, key, 5).routing, Routing::kUnknown);
  EXPECT_EQ(routeKey(TopicPartitioning{Partitioner::kCrc32, 4}, key, 4).routing, Routing::kUnknown);
  EXPECT_EQ(routeKey(TopicPartitioning{Partitioner::kCrc32, 4}, key, -1).routing,
            Routing::kUnknown);
  EXPECT_EQ(routeKey(TopicPartitioning{}, "", 0).routing, Routing::kUnknown);
}

TEST(KeyRouting, OnePartitionHoldsEveryKey) {
  for (const Partitioner partitioner : {Partitioner::kCrc32, Partitioner::kMurmur2}) {
    EXPECT_EQ(routeKey(TopicPartitioning{partitioner, 1}, "4111111111111111", 0).routing,
              Routing::kInPlace);
  }
}

}  // namespace
}  // namespace fraud::detectors
