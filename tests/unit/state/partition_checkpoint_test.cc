#include "state/partition_checkpoint.h"

#include <gtest/gtest.h>

#include "state/key_layout.h"

namespace fraud::state {
namespace {

TEST(PartitionCheckpoint, RoundTripsWithAndWithoutStreamTime) {
  for (const PartitionCheckpoint& checkpoint :
       {PartitionCheckpoint{42, 200, 7}, PartitionCheckpoint{-1, std::nullopt, 1LL << 40}}) {
    EXPECT_EQ(PartitionCheckpoint::decode(checkpoint.encode()), checkpoint);
  }
}

TEST(PartitionCheckpoint, RefusesAnotherVersionOrSize) {
  std::string bytes = PartitionCheckpoint{1, 2, 3}.encode();
  EXPECT_EQ(PartitionCheckpoint::decode(bytes.substr(1)), std::nullopt);
  bytes[0] = 2;
  EXPECT_EQ(PartitionCheckpoint::decode(bytes), std::nullopt);
}

TEST(KeyLayout, CardKeysOfAPartitionAreContiguousAndNameTheirCard) {
  detectors::CardRef ref;
  ref.bytes.fill(0xab);
  const std::string key = cardKey(258, ref);
  EXPECT_TRUE(key.starts_with(partitionPrefix('C', 258)));
  EXPECT_LT(key, partitionPrefix('C', 259));
  EXPECT_EQ(cardOfKey(key), ref);
  EXPECT_NE(checkpointKey(258), partitionPrefix('C', 258));
}

}  // namespace
}  // namespace fraud::state
