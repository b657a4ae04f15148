// fraud::kafka against the real broker (FRAUD_TEST_BROKERS; skipped without one): what the mock
// cluster of the unit tests cannot show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/kafka/producer.h"
#include "tests/support/test_kafka.h"

namespace fraud::kafka {
namespace {

using fraud::testing::TestKafka;
using ::testing::HasSubstr;

class KafkaLayer : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto brokers = fraud::testing::testBrokers();
    if (!brokers) GTEST_SKIP() << "FRAUD_TEST_BROKERS is not set";
    brokers_ = *brokers;
    std::string error;
    auto conf = makeKafkaConf({{"bootstrap.servers", brokers_}}, error);
    ASSERT_TRUE(conf) << error;
    client_ = makeKafkaClient(RD_KAFKA_PRODUCER, std::move(conf), error);
    ASSERT_TRUE(client_) << error;
  }
  std::string brokers_;
  KafkaHandle client_;
};

TEST_F(KafkaLayer, UnknownTopicIsToldApartFromAnUnreachableBroker) {
  const auto info = describeTopic(client_.get(), TestKafka::uniqueName("absent"), 10'000);
  EXPECT_EQ(info.status, TopicStatus::kUnknownTopic) << info.error;
  EXPECT_THAT(info.error, HasSubstr("does not exist"));
  EXPECT_THAT(info.error, ::testing::Not(HasSubstr("unreachable")));
}

TEST_F(KafkaLayer, CreatedTopicHasItsPartitionsAndCannotBeCreatedTwice) {
  const auto name = TestKafka::uniqueName("created");
  std::string error;
  ASSERT_TRUE(
      createTopic(client_.get(), {name, 3, 1, {{"cleanup.policy", "compact"}}}, 30'000, error))
      << error;
  EXPECT_EQ(topicPartitionCount(client_.get(), name, 10'000, error), 3) << error;
  EXPECT_FALSE(createTopic(client_.get(), {name, 3, 1, {}}, 30'000, error));
  EXPECT_THAT(error, HasSubstr(name));
  EXPECT_TRUE(alterTopicConfig(client_.get(), name, {{"retention.ms", "3600000"}}, 30'000, error))
      << error;
}

TEST_F(KafkaLayer, CommittedOffsetsAreMinusOneForAGroupWithoutCommits) {
  TestKafka kafka(brokers_);
  const auto topic = TestKafka::uniqueName("offsets");
  kafka.createTopic(topic, 2);
  auto properties = KafkaProperties{{"bootstrap.servers", brokers_},
                                    {"group.id", TestKafka::uniqueName("group")}};
  std::string error;
  auto reader = makeReader(properties, true, error);
  ASSERT_TRUE(reader) << error;
  const auto offsets = committedOffsets(reader.get(), topic, 2, 10'000, error);
  ASSERT_TRUE(offsets) << error;
  EXPECT_EQ(*offsets, (std::vector<int64_t>{-1, -1}));
}

}  // namespace
}  // namespace fraud::kafka
