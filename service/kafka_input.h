#pragma once

#include <map>
#include <string>
#include <vector>

#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/task_manager.h"

namespace fraud::service {

// InputControl over the input topic's consumer. Every librdkafka answer is checked: a failed
// query yields no offset (the caller asks again) rather than a guessed one.
// Thread-safety: the ingest thread only (librdkafka's consumer calls are thread-safe, but the
// pause/seek order matters to the caller).
class KafkaInput final : public InputControl {
 public:
  // `consumer` must outlive this object.
  KafkaInput(rd_kafka_t* consumer, std::string topic, std::string auto_offset_reset);

  void pause(const std::vector<int32_t>& partitions) override;
  void resume(int32_t partition) override;
  [[nodiscard]] bool seek(int32_t partition, int64_t offset) override;
  [[nodiscard]] std::map<int32_t, int64_t> startOffsets(
      const std::vector<int32_t>& partitions) override;

 private:
  rd_kafka_t* consumer_;
  std::string topic_;
  std::string auto_offset_reset_;
};

}  // namespace fraud::service
