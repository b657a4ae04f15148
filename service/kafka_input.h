#pragma once

#include <map>
#include <string>
#include <vector>

#include "service/input_consumer.h"
#include "service/kafka/admin.h"
#include "service/kafka/client.h"

namespace fraud::service {

// InputConsumer over the input topic's librdkafka consumer. Every librdkafka answer is checked: a
// failed query yields no offset (the caller asks again) rather than a guessed one.
// Thread-safety: the ingest thread only (librdkafka's consumer calls are thread-safe, but the
// pause/seek order matters to the caller).
class KafkaInput final : public InputConsumer {
 public:
  // `consumer` must outlive this object.
  KafkaInput(rd_kafka_t* consumer, std::string topic, std::string auto_offset_reset);

  void pause(const std::vector<int32_t>& partitions) override;
  void resume(int32_t partition) override;
  [[nodiscard]] base::Status seek(int32_t partition, int64_t offset) override;
  [[nodiscard]] std::map<int32_t, int64_t> startOffsets(
      const std::vector<int32_t>& partitions) override;

  [[nodiscard]] bool cooperative() const override;
  [[nodiscard]] bool assignmentLost() const override;
  void incrementalAssign(const std::vector<int32_t>& partitions) override;
  void incrementalUnassign(const std::vector<int32_t>& partitions) override;
  void assign(const std::vector<int32_t>& partitions) override;
  // Unsubscribes, then subscribes to the topic again. (Subscribing again alone is not enough:
  // under the cooperative protocol librdkafka treats an unchanged subscription as no change.)
  // A refused unsubscribe is logged here and the subscription made all the same; the error is
  // the subscription's.
  [[nodiscard]] base::Status rejoin() override;
  [[nodiscard]] base::Status subscribe() override;

  // rd_kafka_consumer_poll(); the message is the handle, destroyed by release().
  [[nodiscard]] bool poll(int timeout_ms, PolledInput& polled) override;
  void release(std::span<PolledInput> polled) override;
  [[nodiscard]] base::Status fatalError() const override;
  [[nodiscard]] base::Status unsubscribe() override;
  void close() override;
  [[nodiscard]] std::optional<int64_t> cachedHighWatermark(int32_t partition) const override;

 private:
  [[nodiscard]] kafka::PartitionList listOf(const std::vector<int32_t>& partitions) const;

  rd_kafka_t* consumer_;
  std::string topic_;
  std::string auto_offset_reset_;
};

}  // namespace fraud::service
