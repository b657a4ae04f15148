#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace fraud::testing {

// A producer for the records TestKafka cannot write: null values (tombstones) and values as
// large as a broker accepts (librdkafka's own default message.max.bytes, 1,000,000, refuses
// them before they leave; a Java producer's default, 1 MiB, does not). No compression, so the
// broker sees the size that was produced. Records to one partition keep their order
// (idempotent). Used from one thread.
class RawProducer {
 public:
  // `max_message_bytes`: this producer's message.max.bytes and batch.size.
  RawProducer(const std::string& brokers, int max_message_bytes);
  ~RawProducer();
  RawProducer(const RawProducer&) = delete;
  RawProducer& operator=(const RawProducer&) = delete;

  // Queues a record; `value` nullopt writes a null value.
  void produce(const std::string& topic, int32_t partition, std::string_view key,
               std::optional<std::string_view> value);
  // Waits for every acknowledgement; fails the test if the broker refused a record.
  void flush();

 private:
  static void onDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque);

  rd_kafka_t* producer_ = nullptr;
  std::mutex mu_;  // guards failed_ and first_error_ (delivery reports)
  int failed_ = 0;
  std::string first_error_;
};

}  // namespace fraud::testing
