#include "state/partition_checkpoint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "state/key_layout.h"

namespace fraud::state {
namespace {

TEST(PartitionCheckpoint, RoundTripsWithAndWithoutStreamTime) {
  for (const PartitionCheckpoint& checkpoint :
       {PartitionCheckpoint{42, 200, 7}, PartitionCheckpoint{0, std::nullopt, 1LL << 40}}) {
    EXPECT_EQ(PartitionCheckpoint::decode(checkpoint.encode()), checkpoint);
  }
}

TEST(PartitionCheckpoint, RefusesAnotherVersionOrSize) {
  std::string bytes = PartitionCheckpoint{1, 2, 3}.encode();
  EXPECT_EQ(PartitionCheckpoint::decode(bytes.substr(1)), std::nullopt);
  bytes[0] = 2;
  EXPECT_EQ(PartitionCheckpoint::decode(bytes), std::nullopt);
}

// A checkpoint record of the right size and format can still carry values no owner writes (a
// foreign or broken producer on the changelog): each one out of bounds is refused, so that no
// restore adopts it. Stream time INT64_MAX would late-drop every later record, INT64_MIN
// overflow the detector, and next offsets -1 and -2 are librdkafka's logical offsets (end,
// beginning): the backlog skipped or the partition replayed.
TEST(PartitionCheckpoint, RefusesValuesOutOfBounds) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const PartitionCheckpoint& bad : {
           PartitionCheckpoint{-1, 200, 7},
           PartitionCheckpoint{-2, 200, 7},
           PartitionCheckpoint{kMin, 200, 7},
           PartitionCheckpoint{42, kMax, 7},
           PartitionCheckpoint{42, kMin, 7},
           PartitionCheckpoint{42, -1, 7},
           PartitionCheckpoint{42, detectors::kMaxEventTime + 1, 7},
           PartitionCheckpoint{42, 200, -1},
           PartitionCheckpoint{42, std::nullopt, kMin},
       }) {
    EXPECT_EQ(PartitionCheckpoint::decode(bad.encode()), std::nullopt)
        << "next offset " << bad.next_offset << ", stream time "
        << (bad.stream_time ? std::to_string(*bad.stream_time) : "none") << ", changelog offset "
        << bad.changelog_next_offset;
    EXPECT_FALSE(PartitionCheckpoint::rejection(bad.encode()).ok());
  }
}

// The bounds themselves are values an owner may write.
TEST(PartitionCheckpoint, AcceptsValuesAtTheBounds) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const PartitionCheckpoint& edge :
       {PartitionCheckpoint{0, 0, 0}, PartitionCheckpoint{kMax, detectors::kMaxEventTime, kMax}}) {
    EXPECT_EQ(PartitionCheckpoint::decode(edge.encode()), edge);
    EXPECT_TRUE(PartitionCheckpoint::rejection(edge.encode()).ok());
  }
}

// Why a checkpoint is refused names the field, for the log.
TEST(PartitionCheckpoint, SaysWhyItRefusesBytes) {
  EXPECT_NE(PartitionCheckpoint::rejection("garbage").message().find("not a checkpoint"),
            std::string::npos);
  EXPECT_NE(PartitionCheckpoint::rejection(PartitionCheckpoint{-1, 1, 0}.encode())
                .message()
                .find("next offset -1"),
            std::string::npos);
  EXPECT_NE(PartitionCheckpoint::rejection(PartitionCheckpoint{0, -5, 0}.encode())
                .message()
                .find("stream time -5"),
            std::string::npos);
  EXPECT_NE(PartitionCheckpoint::rejection(PartitionCheckpoint{0, 1, -3}.encode())
                .message()
                .find("changelog offset -3"),
            std::string::npos);
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
