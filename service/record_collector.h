#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace fraud::service {

// Where a partition task's output records go (Kafka Streams' RecordCollector): alerts, dead
// letters and changelog records, all written in the transaction of the next commit.
// Implemented by TransactionalOutput; tests use a recording fake.
// A partition number that lets the producer's partitioner choose (librdkafka's
// RD_KAFKA_PARTITION_UA).
inline constexpr int32_t kAnyPartition = -1;

class RecordCollector {
 public:
  struct Header {
    std::string_view name;
    std::string_view value;
  };

  virtual ~RecordCollector() = default;

  // Queues one record. `delivered_offset`, when given, receives the record's offset once the
  // broker acknowledges it; it must stay valid until the transaction ends.
  virtual void send(const std::string& topic, int32_t partition, std::string_view key,
                    std::optional<std::string_view> value, std::initializer_list<Header> headers,
                    int64_t* delivered_offset = nullptr) = 0;
};

}  // namespace fraud::service
