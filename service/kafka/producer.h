#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "service/kafka/client.h"

namespace fraud::kafka {

// Record headers in the order they are sent (a name may repeat).
using Headers = std::vector<std::pair<std::string, std::string>>;

// Enqueues one record for `partition` (RD_KAFKA_PARTITION_UA: the partitioner's choice), key,
// value and headers copied. `timestamp_ms` 0 lets librdkafka stamp it. Returns librdkafka's
// code: RD_KAFKA_RESP_ERR__QUEUE_FULL means poll and try again.
[[nodiscard]] rd_kafka_resp_err_t produce(rd_kafka_t* producer, rd_kafka_topic_t* topic,
                                          int32_t partition, std::string_view key,
                                          std::string_view value, int64_t timestamp_ms,
                                          const Headers& headers = {});

// One record for produceWaiting(). Key and value are copied; `headers` (may be null) belongs to
// the message once produced; `opaque` reaches the delivery report as message->_private.
struct OutgoingRecord {
  const char* topic = nullptr;
  int32_t partition = RD_KAFKA_PARTITION_UA;
  std::string_view key;
  std::optional<std::string_view> value;  // none: a null value
  rd_kafka_headers_t* headers = nullptr;
  void* opaque = nullptr;
};

// Produces `record`. While librdkafka's queue is full it serves delivery reports (100 ms polls)
// and tries again, calling `on_full` before each wait, for up to `patience`. Returns NO_ERROR,
// or the error that stopped it (QUEUE_FULL once patience ran out); on an error the headers are
// destroyed.
[[nodiscard]] rd_kafka_resp_err_t produceWaiting(rd_kafka_t* producer, const OutgoingRecord& record,
                                                 std::chrono::milliseconds patience,
                                                 const std::function<void()>& on_full = {});

// A producer for tools and tests, where simplicity beats throughput (acks=all, idempotent):
// send() returns when the record is acknowledged; enqueue() then flush() waits once for many.
// Not thread-safe.
class SyncProducer {
 public:
  // Nothing usable (ok() false, error() set) when the configuration is refused.
  explicit SyncProducer(const KafkaProperties& properties);

  [[nodiscard]] bool ok() const { return producer_ != nullptr; }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] rd_kafka_t* client() const { return producer_.get(); }

  // Sends and waits for the acknowledgement; false and error() set when it fails or takes longer
  // than `timeout_ms`.
  [[nodiscard]] bool send(const std::string& topic, int32_t partition, std::string_view key,
                          std::string_view value, const Headers& headers = {},
                          int timeout_ms = 30'000);
  // Queues a record (waiting while librdkafka's queue is full, up to `timeout_ms`).
  [[nodiscard]] bool enqueue(const std::string& topic, int32_t partition, std::string_view key,
                             std::string_view value, const Headers& headers = {},
                             int timeout_ms = 30'000);
  // Waits for every queued record; false and error() set when one failed or time ran out.
  [[nodiscard]] bool flush(int timeout_ms = 60'000);

 private:
  static void onDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque);

  std::string error_;
  KafkaHandle producer_;
  int64_t pending_ = 0;
  rd_kafka_resp_err_t failed_delivery_ = RD_KAFKA_RESP_ERR_NO_ERROR;  // the first since flush()
};

}  // namespace fraud::kafka
