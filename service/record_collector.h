#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace fraud::service {

// Where a partition task's output records go (Kafka Streams' RecordCollector): changelog
// records, dead letters and (unless --alert-delivery immediate sends them to an AlertSink)
// alerts, all written in the transaction of the next commit. The commit side is
// TransactionSink's; TransactionalOutput implements both, tests use recording fakes.
// A partition number that lets the producer's partitioner choose (librdkafka's
// RD_KAFKA_PARTITION_UA).
inline constexpr int32_t kAnyPartition = -1;

// Whether a transaction may commit now, as a commit precondition tells it: kReady; kRetry, abort
// this transaction and process its records again; kFatal, never again (the process stops).
enum class CommitReadiness { kReady, kRetry, kFatal };

class RecordCollector {
 public:
  struct Header {
    std::string_view name;
    std::string_view value;
  };

  virtual ~RecordCollector() = default;

  // Queues one record.
  virtual void send(const std::string& topic, int32_t partition, std::string_view key,
                    std::optional<std::string_view> value,
                    std::initializer_list<Header> headers) = 0;
  // Queues a partition's checkpoint record (the last record a commit writes to that changelog
  // partition). A transactional collector reports the offset the broker gave it with the
  // commit's result (FinishedCommit::checkpoint_offsets); the record's offset is never written
  // into memory the caller owns.
  virtual void sendCheckpoint(const std::string& topic, int32_t partition, std::string_view key,
                              std::string_view value) {
    send(topic, partition, key, value, {});
  }
};

}  // namespace fraud::service
