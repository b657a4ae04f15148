#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/kafka/producer.h"

namespace fraud::testing {

// The broker the test command started (FRAUD_TEST_BROKERS), or nothing when unset.
[[nodiscard]] std::optional<std::string> testBrokers();

// A record as read back from a topic.
struct TopicRecord {
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::map<std::string, std::string> headers;
};

// Admin, produce and read-back helpers for integration tests against a real broker, over
// fraud::kafka (the project's one Kafka layer); failures are test failures.
class TestKafka {
 public:
  explicit TestKafka(std::string brokers);
  ~TestKafka();

  [[nodiscard]] const std::string& brokers() const { return brokers_; }
  // A topic or group name no other test run uses.
  [[nodiscard]] static std::string uniqueName(std::string_view prefix);

  void createTopic(const std::string& name, int partitions, bool compact = false);
  // Sets the topic's configuration to this one entry (AlterConfigs: any other entry returns
  // to its default).
  void setTopicConfig(const std::string& topic, const std::string& key, const std::string& value);
  // The broker id leading a partition, or -1.
  [[nodiscard]] int leaderOf(const std::string& topic, int32_t partition);
  // Queues a record for an explicit partition; flush() waits for every acknowledgement.
  void produce(const std::string& topic, int32_t partition, std::string_view key,
               std::string_view value);
  void flush();

  // Every record of every partition up to the end offsets at the time of the call.
  [[nodiscard]] std::vector<TopicRecord> readAll(const std::string& topic,
                                                 bool read_committed = true);
  [[nodiscard]] std::vector<int64_t> endOffsets(const std::string& topic);
  // The group's committed offsets for the topic (-1 where none).
  [[nodiscard]] std::vector<int64_t> committedOffsets(const std::string& group,
                                                      const std::string& topic);
  // Waits until the group has committed the topic's end offsets in every partition.
  [[nodiscard]] bool waitForCaughtUp(const std::string& group, const std::string& topic,
                                     std::chrono::seconds timeout);

 private:
  [[nodiscard]] int partitionCount(const std::string& topic);

  std::string brokers_;
  kafka::SyncProducer producer_;
};

}  // namespace fraud::testing
