#include "tests/support/test_kafka.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "service/kafka/admin.h"
#include "service/kafka/reader.h"

namespace fraud::testing {
namespace {

constexpr int kTimeoutMs = 10'000;

kafka::KafkaProperties baseProperties(const std::string& brokers) {
  return {{"bootstrap.servers", brokers}, {"log_level", "3"}};
}

}  // namespace

std::optional<std::string> testBrokers() {
  const char* brokers = std::getenv("FRAUD_TEST_BROKERS");
  if (brokers == nullptr || *brokers == '\0') return std::nullopt;
  return std::string(brokers);
}

TestKafka::TestKafka(std::string brokers)
    : brokers_(std::move(brokers)), producer_(baseProperties(brokers_)) {
  if (!producer_.status().ok()) ADD_FAILURE() << "test producer: " << producer_.status().message();
}

// Best effort: a test that needed its records acknowledged called flush() and checked it.
TestKafka::~TestKafka() { producer_.flush(10'000).ignoreError(); }

std::string TestKafka::uniqueName(std::string_view prefix) {
  static std::atomic<int> counter{0};
  std::random_device random;
  return std::string(prefix) + "-" + std::to_string(random() % 1'000'000) + "-" +
         std::to_string(counter++);
}

void TestKafka::createTopic(const std::string& name, int partitions, bool compact) {
  kafka::NewTopic topic{name, partitions, -1, {}};
  if (compact) topic.config["cleanup.policy"] = "compact";
  const auto created = kafka::createTopic(producer_.client(), topic, 30'000);
  ASSERT_TRUE(created.ok()) << created.message();
  // Wait until the metadata shows every partition with a leader.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (partitionCount(name) != partitions) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "topic " << name << " never appeared";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void TestKafka::setTopicConfig(const std::string& topic, const std::string& key,
                               const std::string& value) {
  const auto altered = kafka::alterTopicConfig(producer_.client(), topic, {{key, value}}, 30'000);
  EXPECT_TRUE(altered.ok()) << altered.message();
}

int TestKafka::leaderOf(const std::string& topic, int32_t partition) {
  const rd_kafka_metadata_t* metadata = nullptr;
  kafka::TopicHandle handle(rd_kafka_topic_new(producer_.client(), topic.c_str(), nullptr));
  int leader = -1;
  if (rd_kafka_metadata(producer_.client(), 0, handle.get(), &metadata, 5000) ==
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (metadata->topic_cnt == 1 && partition < metadata->topics[0].partition_cnt) {
      leader = metadata->topics[0].partitions[partition].leader;
    }
    rd_kafka_metadata_destroy(metadata);
  }
  return leader;
}

int TestKafka::partitionCount(const std::string& topic) {
  const auto partitions = kafka::describeTopic(producer_.client(), topic, 5000);
  if (!partitions) return 0;
  for (int32_t p = 0; p < *partitions; ++p) {
    if (leaderOf(topic, p) < 0) return 0;
  }
  return *partitions;
}

void TestKafka::produce(const std::string& topic, int32_t partition, std::string_view key,
                        std::string_view value) {
  const base::Status queued = producer_.enqueue(topic, partition, key, value);
  ASSERT_TRUE(queued.ok()) << queued.message();
}

void TestKafka::flush() {
  const base::Status flushed = producer_.flush(60'000);
  ASSERT_TRUE(flushed.ok()) << flushed.message();
}

std::vector<int64_t> TestKafka::endOffsets(const std::string& topic) {
  const auto ends =
      kafka::highWatermarks(producer_.client(), topic, partitionCount(topic), kTimeoutMs);
  EXPECT_TRUE(ends.ok()) << ends.message();
  return ends.valueOr(std::vector<int64_t>{});
}

std::vector<TopicRecord> TestKafka::readAll(const std::string& topic, bool read_committed) {
  const auto ends = endOffsets(topic);
  auto consumer = kafka::makeReader(baseProperties(brokers_), read_committed);
  EXPECT_TRUE(consumer) << consumer.message();
  std::vector<TopicRecord> records;
  if (!consumer) return records;
  const auto read = kafka::readToEnd(
      consumer->get(), topic, ends,
      [&](const rd_kafka_message_t& m) {
        TopicRecord r;
        r.partition = m.partition;
        r.offset = m.offset;
        if (m.key != nullptr) r.key = std::string(kafka::keyOf(&m));
        if (m.payload != nullptr) r.value = std::string(kafka::payloadOf(&m));
        r.headers = kafka::headersOf(&m);
        records.push_back(std::move(r));
      },
      60'000);
  EXPECT_TRUE(read.ok()) << read.message();
  return records;
}

std::vector<int64_t> TestKafka::committedOffsets(const std::string& group,
                                                 const std::string& topic) {
  const int partitions = partitionCount(topic);
  auto properties = baseProperties(brokers_);
  properties["group.id"] = group;
  auto consumer = kafka::makeReader(properties, /*read_committed=*/true);
  EXPECT_TRUE(consumer) << consumer.message();
  if (!consumer) return std::vector<int64_t>(static_cast<size_t>(partitions), -1);
  const auto offsets = kafka::committedOffsets(consumer->get(), topic, partitions, kTimeoutMs);
  if (!offsets) {
    std::fprintf(stderr, "committed offsets of %s: %s\n", group.c_str(), offsets.message().c_str());
    return std::vector<int64_t>(static_cast<size_t>(partitions), -1);
  }
  return *offsets;
}

bool TestKafka::waitForCaughtUp(const std::string& group, const std::string& topic,
                                std::chrono::seconds timeout) {
  const auto ends = endOffsets(topic);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto committed = committedOffsets(group, topic);
    bool caught_up = committed.size() == ends.size();
    for (size_t p = 0; caught_up && p < ends.size(); ++p) {
      caught_up = ends[p] == 0 || committed[p] >= ends[p];
    }
    if (caught_up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace fraud::testing
