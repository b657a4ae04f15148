// fraud::kafka against librdkafka's in-process mock cluster (no broker) and a closed loopback
// port (a broker that is down).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <stop_token>
#include <vector>

#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/kafka/producer.h"
#include "service/kafka/reader.h"
#include "tests/component/service/input_mock_cluster.h"

namespace fraud::kafka {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Port 1 on loopback: nothing listens, so every connection is refused at once.
constexpr const char* kDeadBroker = "127.0.0.1:1";

using MockCluster = testing::InputMockCluster;

KafkaHandle client(const std::string& brokers) {
  auto handle = makeKafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", brokers}});
  EXPECT_TRUE(handle) << handle.message();
  return handle ? std::move(*handle) : nullptr;
}

// An unknown topic, topic creation and configuration run against the real broker
// (tests/integration/service/kafka_layer_test.cc): librdkafka 2.0's mock cluster creates any topic
// a metadata request names and does not answer CreateTopics.
TEST(KafkaAdmin, TopicFoundWithItsPartitionsAndBrokerReachable) {
  MockCluster mock(3);
  auto c = client(mock.bootstrap());
  const auto found = describeTopic(c.get(), "input", 5000);
  ASSERT_TRUE(found) << found.message();
  EXPECT_EQ(*found, 3);
  const auto reachable = brokerReachable(c.get(), 5000);
  EXPECT_TRUE(reachable.ok()) << reachable.message();
}

// The service must say "broker unreachable", not "create the topic first", when nothing answers.
TEST(KafkaAdmin, DeadBrokerIsUnreachableNotAnUnknownTopic) {
  setLogSink([](LogLevel, std::string_view, std::string_view, std::string_view) {});
  auto c = client(kDeadBroker);
  const auto info = describeTopic(c.get(), "input", 1500);
  EXPECT_EQ(info.code(), base::StatusCode::kUnavailable) << info.message();
  EXPECT_THAT(info.message(), HasSubstr("broker unreachable"));
  const auto reachable = brokerReachable(c.get(), 1500);
  EXPECT_EQ(reachable.code(), base::StatusCode::kUnavailable);
  EXPECT_THAT(reachable.message(), HasSubstr("broker unreachable"));
  c.reset();
  setLogSink({});
}

// A failed query must be a failure, not offsets 0..0 (a `latest` start would then read all).
TEST(KafkaAdmin, FailedWatermarkQueryIsAnErrorNotOffsetZero) {
  setLogSink([](LogLevel, std::string_view, std::string_view, std::string_view) {});
  auto dead = client(kDeadBroker);
  const auto marks = queryWatermarks(dead.get(), "input", 0, 1000);
  EXPECT_FALSE(marks);
  EXPECT_THAT(marks.message(), HasSubstr("input/0"));
  EXPECT_FALSE(highWatermarks(dead.get(), "input", 2, 1000));
  dead.reset();
  setLogSink({});

  MockCluster mock(2);
  auto c = client(mock.bootstrap());
  SyncProducer producer({{"bootstrap.servers", mock.bootstrap()}});
  const base::Status sent = producer.send("input", 1, "k", "v");
  ASSERT_TRUE(sent.ok()) << sent.message();
  const auto ends = highWatermarks(c.get(), "input", 2, 5000);
  ASSERT_TRUE(ends) << ends.message();
  EXPECT_EQ(*ends, (std::vector<int64_t>{0, 1}));
}

// A leader that keeps refusing ends the listing with its error after kLeaderLookups lookups,
// never with offsets 0; one that refuses a few times (the metadata still naming it) is looked
// up again and the listing goes on.
TEST(KafkaAdmin, ListedOffsetsSurviveALeaderThatMovedAndFailWhenItNeverSettles) {
  constexpr int16_t kApiListOffsets = 2;
  MockCluster mock(1);
  SyncProducer producer({{"bootstrap.servers", mock.bootstrap()}});
  for (int i = 0; i < 2; ++i) {
    const base::Status sent = producer.send("input", 0, "k", "v");
    ASSERT_TRUE(sent.ok()) << sent.message();
  }
  auto c = client(mock.bootstrap());
  const auto endOf = [&] {
    auto list = makePartitionList();
    rd_kafka_topic_partition_list_add(list.get(), "input", 0)->offset = RD_KAFKA_OFFSET_END;
    const Status listed = listOffsets(c.get(), list.get(), 5000);
    return std::pair{listed, list->elems[0].offset};
  };

  for (int i = 0; i < 50; ++i) {
    rd_kafka_mock_push_request_errors(mock.cluster(), kApiListOffsets, 1,
                                      RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
  }
  const auto [refused, ignored] = endOf();
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), HasSubstr("Not leader"));

  rd_kafka_mock_clear_request_errors(mock.cluster(), kApiListOffsets);
  rd_kafka_mock_push_request_errors(mock.cluster(), kApiListOffsets, 2,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
  const auto [listed, end] = endOf();
  ASSERT_TRUE(listed.ok()) << listed.message();
  EXPECT_EQ(end, 2);
}

// The coordinator keeps moving: the listing would ask again for all of its 30 s. A stop ends it
// within a poll step, with an error that says so.
TEST(KafkaAdmin, AStopEndsTheListingOfCommittedOffsetsAtOnce) {
  constexpr int16_t kApiOffsetFetch = 9;
  MockCluster mock(2);
  for (int i = 0; i < 2'000; ++i) {
    rd_kafka_mock_push_request_errors(mock.cluster(), kApiOffsetFetch, 1,
                                      RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
  }
  auto client = makeGroupAdminClient({{"bootstrap.servers", mock.bootstrap()}}, "g");
  ASSERT_TRUE(client) << client.message();
  std::stop_source stop;
  auto listing = std::async(std::launch::async, [&] {
    return committedOffsetMetadata(client->get(), "g", "input", {0, 1}, 30'000, stop.get_token());
  });
  EXPECT_EQ(listing.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "the listing did not retry: the test proves nothing";
  stop.request_stop();
  ASSERT_EQ(listing.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the stop did not end the listing";
  const auto listed = listing.get();
  EXPECT_FALSE(listed);
  EXPECT_THAT(listed.message(), HasSubstr("stopping"));
}

// A broker failover moves the group coordinator: the first OffsetFetch answers NOT_COORDINATOR.
// On a producer-type client librdkafka 2.0.2 then dereferences the client's missing consumer
// group and the process dies (seen in the 3-broker fault test); the group admin client has one,
// looks the coordinator up again and reads the offsets.
TEST(KafkaAdmin, GroupOffsetsAreReadThroughACoordinatorMove) {
  constexpr int16_t kApiOffsetFetch = 9;
  MockCluster mock(2);
  {
    const base::Status committed = mock.commitWithMetadata("g", 1, 42, "instance-a");
    ASSERT_TRUE(committed.ok()) << committed.message();
  }
  rd_kafka_mock_push_request_errors(mock.cluster(), kApiOffsetFetch, 2,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR);

  auto client = makeGroupAdminClient({{"bootstrap.servers", mock.bootstrap()}}, "g");
  ASSERT_TRUE(client) << client.message();
  const auto owners = committedOffsetMetadata(client->get(), "g", "input", {0, 1}, 10'000);
  ASSERT_TRUE(owners) << owners.message();
  EXPECT_EQ(*owners, (std::map<int32_t, std::string>{{1, "instance-a"}}));
}

TEST(KafkaProducerAndReader, WhatIsSentIsReadBackToTheEndWithHeaders) {
  MockCluster mock(2);
  SyncProducer producer({{"bootstrap.servers", mock.bootstrap()}});
  ASSERT_TRUE(producer.status().ok()) << producer.status().message();
  for (int i = 0; i < 5; ++i) {
    const base::Status queued =
        producer.enqueue("input", i % 2, "key-" + std::to_string(i), "value-" + std::to_string(i),
                         {{"n", std::to_string(i)}});
    ASSERT_TRUE(queued.ok()) << queued.message();
  }
  const base::Status flushed = producer.flush();
  ASSERT_TRUE(flushed.ok()) << flushed.message();
  auto reader = makeReader({{"bootstrap.servers", mock.bootstrap()}}, true);
  ASSERT_TRUE(reader) << reader.message();
  const auto ends = highWatermarks(reader->get(), "input", 2, 5000);
  ASSERT_TRUE(ends) << ends.message();
  std::vector<std::string> seen;
  const auto read = readToEnd(
      reader->get(), "input", *ends,
      [&](const rd_kafka_message_t& m) {
        seen.push_back(std::to_string(m.partition) + ":" + std::string(keyOf(&m)) + "=" +
                       std::string(payloadOf(&m)) + "/" + headerValue(&m, "n").value_or("?"));
        EXPECT_TRUE(timestampOf(&m).has_value());
        EXPECT_EQ(headersOf(&m).size(), 1u);
      },
      10'000);
  ASSERT_TRUE(read.ok()) << read.message();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"0:key-0=value-0/0", "0:key-2=value-2/2", "0:key-4=value-4/4",
                                      "1:key-1=value-1/1", "1:key-3=value-3/3"}));
}

TEST(KafkaProducer, ARefusedConfigurationIsTheErrorOfEveryCall) {
  SyncProducer producer({{"bootstrap.servers", kDeadBroker}, {"no.such.property", "1"}});
  ASSERT_FALSE(producer.status().ok());
  EXPECT_THAT(producer.status().message(), HasSubstr("no.such.property"));
  EXPECT_EQ(producer.client(), nullptr);
  EXPECT_EQ(producer.enqueue("input", 0, "k", "v"), producer.status());
  EXPECT_EQ(producer.send("input", 0, "k", "v"), producer.status());
  EXPECT_EQ(producer.flush(10), producer.status());
}

TEST(KafkaProducer, ARecordRefusedAtOnceIsTheEnqueuesError) {
  SyncProducer producer(
      {{"bootstrap.servers", kDeadBroker}, {"message.max.bytes", "1000"}, {"log_level", "2"}});
  ASSERT_TRUE(producer.status().ok()) << producer.status().message();
  const base::Status queued = producer.enqueue("input", 0, "k", std::string(2'000, 'v'));
  ASSERT_FALSE(queued.ok());
  EXPECT_THAT(queued.message(), HasSubstr("cannot produce to input: "));
  const base::Status sent = producer.send("input", 0, "k", std::string(2'000, 'v'));
  EXPECT_EQ(sent, queued) << "send() stops at the refusal";
  EXPECT_TRUE(producer.flush(10).ok()) << "nothing was queued";
}

TEST(KafkaProducer, ARecordNotAcknowledgedInTimeIsTheFlushsError) {
  SyncProducer producer({{"bootstrap.servers", kDeadBroker}, {"log_level", "2"}});
  ASSERT_TRUE(producer.status().ok()) << producer.status().message();
  ASSERT_TRUE(producer.enqueue("input", 0, "k", "v").ok());
  const base::Status flushed = producer.flush(200);
  ASSERT_FALSE(flushed.ok());
  EXPECT_EQ(flushed.message(), "1 record(s) not acknowledged within 200 ms");
}

TEST(KafkaProducer, AFailedDeliveryIsTheFlushsError) {
  MockCluster mock(1);
  SyncProducer producer({{"bootstrap.servers", mock.bootstrap()}});
  ASSERT_TRUE(producer.status().ok()) << producer.status().message();
  constexpr int16_t kApiProduce = 0;
  rd_kafka_mock_push_request_errors(mock.cluster(), kApiProduce, 1,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  const base::Status sent = producer.send("input", 0, "k", "v", {}, 10'000);
  ASSERT_FALSE(sent.ok());
  EXPECT_THAT(sent.message(), HasSubstr("delivery failed: "));
}

// librdkafka's own log goes to the sink, never as "%3|...|FAIL|" lines on stderr.
TEST(KafkaLog, LibrdkafkaLogGoesToTheSinkWithFoldedLevels) {
  std::mutex mu;
  std::vector<std::pair<LogLevel, std::string>> lines;
  setLogSink(
      [&](LogLevel level, std::string_view, std::string_view facility, std::string_view message) {
        std::lock_guard lock(mu);
        lines.emplace_back(level, std::string(facility) + ": " + std::string(message));
      });
  ::testing::internal::CaptureStderr();
  {
    auto c = client(kDeadBroker);
    EXPECT_FALSE(brokerReachable(c.get(), 1500).ok());
  }
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  setLogSink({});
  EXPECT_THAT(stderr_text, Not(HasSubstr("|FAIL|")));
  std::lock_guard lock(mu);
  bool failure_logged = false;
  for (const auto& [level, text] : lines) {
    failure_logged = failure_logged || (level == LogLevel::kError && text.find("FAIL") == 0);
  }
  EXPECT_TRUE(failure_logged) << "no FAIL line at error level among " << lines.size();
}

TEST(KafkaLog, SyslogLevelsFoldIntoFive) {
  EXPECT_EQ(logLevelOfSyslog(0), LogLevel::kCritical);
  EXPECT_EQ(logLevelOfSyslog(2), LogLevel::kCritical);
  EXPECT_EQ(logLevelOfSyslog(3), LogLevel::kError);
  EXPECT_EQ(logLevelOfSyslog(4), LogLevel::kWarning);
  EXPECT_EQ(logLevelOfSyslog(5), LogLevel::kInfo);
  EXPECT_EQ(logLevelOfSyslog(6), LogLevel::kInfo);
  EXPECT_EQ(logLevelOfSyslog(7), LogLevel::kDebug);
}

}  // namespace
}  // namespace fraud::kafka
