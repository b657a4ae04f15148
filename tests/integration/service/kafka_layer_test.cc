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
    auto client = makeKafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", brokers_}});
    ASSERT_TRUE(client) << client.message();
    client_ = std::move(*client);
  }
  std::string brokers_;
  KafkaHandle client_;
};

TEST_F(KafkaLayer, UnknownTopicIsToldApartFromAnUnreachableBroker) {
  const auto info = describeTopic(client_.get(), TestKafka::uniqueName("absent"), 10'000);
  EXPECT_EQ(info.code(), base::StatusCode::kNotFound) << info.message();
  EXPECT_THAT(info.message(), HasSubstr("does not exist"));
  EXPECT_THAT(info.message(), ::testing::Not(HasSubstr("unreachable")));
}

// A topic created a moment ago by one client is found by another client's first request (its
// metadata reaches every broker shortly after CreateTopics returns; the loadgen once failed here),
// and an absent topic is still reported as absent once the settle time is over.
TEST_F(KafkaLayer, FreshClientFindsAJustCreatedTopicAndStillReportsAnAbsentOne) {
  for (int round = 0; round < 5; ++round) {
    const auto name = TestKafka::uniqueName("fresh");
    const auto created = createTopic(client_.get(), {name, 4, 1, {}}, 30'000);
    ASSERT_TRUE(created.ok()) << created.message();
    const auto fresh = makeKafkaClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", brokers_}});
    ASSERT_TRUE(fresh) << fresh.message();
    const auto count = topicPartitionCount(fresh->get(), name, 10'000);
    EXPECT_EQ(count.valueOr(0), 4) << count.message();
  }
  const auto started = std::chrono::steady_clock::now();
  const auto absent = topicPartitionCount(client_.get(), TestKafka::uniqueName("absent"), 10'000);
  EXPECT_FALSE(absent);
  EXPECT_THAT(absent.message(), HasSubstr("does not exist"));
  EXPECT_GE(std::chrono::steady_clock::now() - started,
            std::chrono::milliseconds(kUnknownTopicSettleMs));
}

TEST_F(KafkaLayer, CreatedTopicHasItsPartitionsAndCannotBeCreatedTwice) {
  const auto name = TestKafka::uniqueName("created");
  const auto created =
      createTopic(client_.get(), {name, 3, 1, {{"cleanup.policy", "compact"}}}, 30'000);
  ASSERT_TRUE(created.ok()) << created.message();
  const auto count = topicPartitionCount(client_.get(), name, 10'000);
  EXPECT_EQ(count.valueOr(0), 3) << count.message();
  const auto again = createTopic(client_.get(), {name, 3, 1, {}}, 30'000);
  EXPECT_FALSE(again.ok());
  EXPECT_THAT(again.message(), HasSubstr(name));
  const auto altered = alterTopicConfig(client_.get(), name, {{"retention.ms", "3600000"}}, 30'000);
  EXPECT_TRUE(altered.ok()) << altered.message();
}

TEST_F(KafkaLayer, CommittedOffsetsAreMinusOneForAGroupWithoutCommits) {
  TestKafka kafka(brokers_);
  const auto topic = TestKafka::uniqueName("offsets");
  kafka.createTopic(topic, 2);
  auto properties = KafkaProperties{{"bootstrap.servers", brokers_},
                                    {"group.id", TestKafka::uniqueName("group")}};
  auto reader = makeReader(properties, true);
  ASSERT_TRUE(reader) << reader.message();
  const auto offsets = committedOffsets(reader->get(), topic, 2, 10'000);
  ASSERT_TRUE(offsets) << offsets.message();
  EXPECT_EQ(*offsets, (std::vector<int64_t>{-1, -1}));
}

// The API's owner lookup: which member (by client.id) holds each partition of the group.
TEST_F(KafkaLayer, GroupPartitionOwnersNameTheMemberHoldingEachPartition) {
  TestKafka kafka(brokers_);
  const auto topic = TestKafka::uniqueName("owned");
  const auto group = TestKafka::uniqueName("owners");
  kafka.createTopic(topic, 2);
  auto made = makeKafkaClient(
      RD_KAFKA_CONSUMER,
      {{"bootstrap.servers", brokers_}, {"group.id", group}, {"client.id", "member-one"}});
  ASSERT_TRUE(made) << made.message();
  const KafkaHandle member = std::move(*made);
  ASSERT_EQ(rd_kafka_poll_set_consumer(member.get()), RD_KAFKA_RESP_ERR_NO_ERROR);
  auto subscription = makePartitionList(1);
  rd_kafka_topic_partition_list_add(subscription.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
  ASSERT_EQ(rd_kafka_subscribe(member.get(), subscription.get()), RD_KAFKA_RESP_ERR_NO_ERROR);
  std::map<int32_t, std::string> owners;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (owners.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    // Polling joins the group and takes the assignment.
    const KafkaMessage polled(rd_kafka_consumer_poll(member.get(), 200));
    owners = groupPartitionOwners(client_.get(), group, topic, 10'000).valueOr(owners);
  }
  EXPECT_EQ(owners, (std::map<int32_t, std::string>{{0, "member-one"}, {1, "member-one"}}));
  rd_kafka_consumer_close(member.get());
}

}  // namespace
}  // namespace fraud::kafka
