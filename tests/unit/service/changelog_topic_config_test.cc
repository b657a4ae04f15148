// The changelog's compaction settings: what the service creates it with, and the advice for an
// existing one that would keep many records a card (every restore reads them all).
#include <gtest/gtest.h>

#include "service/topic_admin.h"

namespace fraud::service {
namespace {

TEST(ChangelogTopicConfig, IsCompactedWithSegmentsThatRollWithinMinutes) {
  const auto& config = changelogTopicConfig();
  EXPECT_EQ(config.at("cleanup.policy"), "compact");
  EXPECT_EQ(config.at("segment.bytes"), "8388608");
  EXPECT_EQ(config.at("segment.ms"), "600000");
  EXPECT_EQ(config.at("min.cleanable.dirty.ratio"), "0.1");
  EXPECT_EQ(changelogCompactionAdvice("cl", config), std::nullopt)
      << "the service's own settings draw no advice";
}

TEST(ChangelogTopicConfig, BrokerDefaultsDrawAdviceNamingTheSegmentsAndTheRatio) {
  // What DescribeConfigs reports for a compacted topic created with nothing else set.
  const auto advice = changelogCompactionAdvice("cl", {{"cleanup.policy", "compact"},
                                                       {"segment.bytes", "1073741824"},
                                                       {"segment.ms", "604800000"},
                                                       {"min.cleanable.dirty.ratio", "0.5"}});
  ASSERT_TRUE(advice.has_value());
  EXPECT_NE(advice->find("changelog topic cl"), std::string::npos) << *advice;
  EXPECT_NE(advice->find("1073741824 bytes or 604800000 ms"), std::string::npos) << *advice;
  EXPECT_EQ(advice->find("min.cleanable.dirty.ratio is"), std::string::npos)
      << "0.5 is the broker's default, not advised against: " << *advice;
}

TEST(ChangelogTopicConfig, EitherASmallSegmentOrAShortRollIsEnough) {
  EXPECT_EQ(
      changelogCompactionAdvice("cl", {{"segment.bytes", "1073741824"}, {"segment.ms", "600000"}}),
      std::nullopt);
  EXPECT_EQ(
      changelogCompactionAdvice("cl", {{"segment.bytes", "16777216"}, {"segment.ms", "604800000"}}),
      std::nullopt);
}

TEST(ChangelogTopicConfig, AMissingCompactionOrAHighDirtyRatioIsNamed) {
  const auto advice = changelogCompactionAdvice("cl", {{"cleanup.policy", "delete"},
                                                       {"segment.bytes", "8388608"},
                                                       {"min.cleanable.dirty.ratio", "0.9"}});
  ASSERT_TRUE(advice.has_value());
  EXPECT_NE(advice->find("cleanup.policy is delete, not compact"), std::string::npos) << *advice;
  EXPECT_NE(advice->find("min.cleanable.dirty.ratio is 0.9"), std::string::npos) << *advice;
}

TEST(ChangelogTopicConfig, UnreadableNumbersCountAsTheBrokersDefaults) {
  const auto advice =
      changelogCompactionAdvice("cl", {{"segment.bytes", "lots"}, {"segment.ms", ""}});
  ASSERT_TRUE(advice.has_value());
  EXPECT_NE(advice->find("1073741824 bytes or 604800000 ms"), std::string::npos) << *advice;
}

}  // namespace
}  // namespace fraud::service
