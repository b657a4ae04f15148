#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detectors/base/status.h"
#include "service/kafka/client.h"

namespace fraud::kafka {

// Record headers in the order they are sent (a name may repeat).
using Headers = std::vector<std::pair<std::string, std::string>>;

// librdkafka headers holding copies of `headers`, in order; null when there are none. The caller
// owns the result until a produce call takes it (produceWaiting() does, even on failure).
// An element is anything that binds as [name, value] of string-like types: a pair, or a struct
// of two such members.
template <typename HeaderList>
[[nodiscard]] rd_kafka_headers_t* makeHeaders(const HeaderList& headers) {
  if (std::empty(headers)) return nullptr;
  rd_kafka_headers_t* out = rd_kafka_headers_new(std::size(headers));
  for (const auto& [name, value] : headers) {
    rd_kafka_header_add(out, std::data(name), static_cast<ssize_t>(std::size(name)),
                        std::data(value), static_cast<ssize_t>(std::size(value)));
  }
  return out;
}

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
  // Nothing usable when the configuration is refused: status() says why, and every call below
  // returns that error.
  explicit SyncProducer(const KafkaProperties& properties);

  // Ok, or why the producer could not be made (a constructor returns nothing).
  [[nodiscard]] const base::Status& status() const { return created_; }
  [[nodiscard]] rd_kafka_t* client() const { return producer_.get(); }

  // Sends and waits for the acknowledgement; an error when it fails or takes longer than
  // `timeout_ms`.
  [[nodiscard]] base::Status send(const std::string& topic, int32_t partition, std::string_view key,
                                  std::string_view value, const Headers& headers = {},
                                  int timeout_ms = 30'000);
  // Queues a record (waiting while librdkafka's queue is full, up to `timeout_ms`); an error when
  // librdkafka refuses it.
  [[nodiscard]] base::Status enqueue(const std::string& topic, int32_t partition,
                                     std::string_view key, std::string_view value,
                                     const Headers& headers = {}, int timeout_ms = 30'000);
  // Waits for every queued record; an error when one failed or time ran out.
  [[nodiscard]] base::Status flush(int timeout_ms = 60'000);

 private:
  static void onDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque);

  base::Status created_;
  KafkaHandle producer_;
  int64_t pending_ = 0;
  rd_kafka_resp_err_t failed_delivery_ = RD_KAFKA_RESP_ERR_NO_ERROR;  // the first since flush()
};

}  // namespace fraud::kafka
