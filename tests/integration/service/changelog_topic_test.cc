// The changelog topic as the service creates it on a real broker: compacted, with the segment
// and cleaning settings that keep it near one record a card (read back with DescribeConfigs).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "service/config.h"
#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/topic_admin.h"
#include "tests/support/test_kafka.h"

namespace fraud::service {
namespace {

using fraud::testing::TestKafka;

TEST(ChangelogTopic, IsCreatedCompactedWithSegmentsThatRollWithinMinutes) {
  const auto brokers = fraud::testing::testBrokers();
  if (!brokers) GTEST_SKIP() << "FRAUD_TEST_BROKERS is not set";
  TestKafka kafka(*brokers);
  ServiceConfig config;
  config.brokers = *brokers;
  const auto name = TestKafka::uniqueName("changelog-config");
  config.input_topic = name + ".tx";
  config.alerts_topic = name + ".alerts";
  config.dlq_topic = name + ".dlq";
  config.group_id = name;
  config.instance_id = "test";
  config.resolveDefaults();
  kafka.createTopic(config.input_topic, 3);
  kafka.createTopic(config.alerts_topic, 1);
  kafka.createTopic(config.dlq_topic, 1);

  auto made = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", *brokers}});
  ASSERT_TRUE(made) << made.message();
  const kafka::KafkaHandle client = std::move(*made);
  TopicAdmin admin(client.get(), config);
  ASSERT_TRUE(admin.checkTopics().ok());

  // A topic created a moment ago may not be known to DescribeConfigs yet: ask again a while.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto described = kafka::describeTopicConfig(client.get(), config.changelog_topic, 10'000);
  while (!described && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    described = kafka::describeTopicConfig(client.get(), config.changelog_topic, 10'000);
  }
  ASSERT_TRUE(described) << described.message();
  for (const auto& [key, value] : changelogTopicConfig()) {
    ASSERT_EQ(described->count(key), 1u) << key;
    EXPECT_EQ(described->at(key), value) << key;
  }
  EXPECT_EQ(changelogCompactionAdvice(config.changelog_topic, *described), std::nullopt);
  EXPECT_EQ(admin.maxMessageBytes(config.changelog_topic).has_value(), true);
  // Found the second time, not created again.
  ASSERT_TRUE(admin.checkTopics().ok());
}

}  // namespace
}  // namespace fraud::service
