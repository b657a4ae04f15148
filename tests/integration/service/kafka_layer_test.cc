// fraud::kafka against the real broker (FRAUD_TEST_BROKERS; skipped without one): what the mock
// cluster of the unit tests cannot show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>

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

// A topic created a moment ago by one client is found by another client's first request (its
// metadata reaches every broker shortly after CreateTopics returns; the loadgen once failed here),
// and an absent topic is still reported as absent once the settle time is over.
TEST_F(KafkaLayer, FreshClientFindsAJustCreatedTopicAndStillReportsAnAbsentOne) {
  std::string error;
  for (int round = 0; round < 5; ++round) {
    const auto name = TestKafka::uniqueName("fresh");
    ASSERT_TRUE(createTopic(client_.get(), {name, 4, 1, {}}, 30'000, error)) << error;
    auto conf = makeKafkaConf({{"bootstrap.servers", brokers_}}, error);
    ASSERT_TRUE(conf) << error;
    const auto fresh = makeKafkaClient(RD_KAFKA_CONSUMER, std::move(conf), error);
    ASSERT_TRUE(fresh) << error;
    EXPECT_EQ(topicPartitionCount(fresh.get(), name, 10'000, error), 4) << error;
  }
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(topicPartitionCount(client_.get(), TestKafka::uniqueName("absent"), 10'000, error));
  EXPECT_THAT(error, HasSubstr("does not exist"));
  EXPECT_GE(std::chrono::steady_clock::now() - started,
            std::chrono::milliseconds(kUnknownTopicSettleMs));
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

// The API's owner lookup: which member (by client.id) holds each partition of the group.
TEST_F(KafkaLayer, GroupPartitionOwnersNameTheMemberHoldingEachPartition) {
  TestKafka kafka(brokers_);
  const auto topic = TestKafka::uniqueName("owned");
  const auto group = TestKafka::uniqueName("owners");
  kafka.createTopic(topic, 2);
  std::string error;
  auto conf = makeKafkaConf(
      {{"bootstrap.servers", brokers_}, {"group.id", group}, {"client.id", "member-one"}}, error);
  ASSERT_TRUE(conf) << error;
  auto member = makeKafkaClient(RD_KAFKA_CONSUMER, std::move(conf), error);
  ASSERT_TRUE(member) << error;
  rd_kafka_poll_set_consumer(member.get());
  auto subscription = makePartitionList(1);
  rd_kafka_topic_partition_list_add(subscription.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
  ASSERT_EQ(rd_kafka_subscribe(member.get(), subscription.get()), RD_KAFKA_RESP_ERR_NO_ERROR);
  std::map<int32_t, std::string> owners;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (owners.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    // Polling joins the group and takes the assignment.
    const KafkaMessage polled(rd_kafka_consumer_poll(member.get(), 200));
    owners = groupPartitionOwners(client_.get(), group, topic, 10'000, error).value_or(owners);
  }
  EXPECT_EQ(owners, (std::map<int32_t, std::string>{{0, "member-one"}, {1, "member-one"}}));
  rd_kafka_consumer_close(member.get());
}

}  // namespace
}  // namespace fraud::kafka
