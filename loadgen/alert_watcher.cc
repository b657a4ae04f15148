#include "loadgen/alert_watcher.h"

#include <nlohmann/json.hpp>

#include "detectors/record_headers.h"
#include "loadgen/run_series.h"
#include "service/kafka/admin.h"

namespace fraud::loadgen {
namespace {

constexpr int kTimeoutMs = 10'000;

}  // namespace

AlertWatcher::~AlertWatcher() { stop(); }

base::Status AlertWatcher::start(const kafka::KafkaProperties& properties,
                                 const std::string& topic) {
  kafka::KafkaProperties watcher = properties;
  // A latency probe must not add its own fetch wait: some brokers (librdkafka's mock cluster,
  // the embedded one) hold an empty fetch for the whole fetch.wait.max.ms (500 ms) even when an
  // alert arrives meanwhile.
  watcher.try_emplace("fetch.wait.max.ms", "10");
  auto consumer = kafka::makeReader(watcher, /*read_committed=*/true);
  if (!consumer) return consumer.status();
  consumer_ = std::move(*consumer);
  const auto partitions = kafka::topicPartitionCount(consumer_.get(), topic, kTimeoutMs);
  if (!partitions) return partitions.status();
  const auto ends = kafka::highWatermarks(consumer_.get(), topic, *partitions, kTimeoutMs);
  if (!ends) return ends.status();
  auto list = kafka::makePartitionList(topic, *partitions);
  for (int32_t p = 0; p < *partitions; ++p) list->elems[p].offset = (*ends)[static_cast<size_t>(p)];
  const auto err = rd_kafka_assign(consumer_.get(), list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::Status::failed("cannot assign " + topic + ": " + rd_kafka_err2str(err));
  }
  thread_ = std::thread([this] { run(); });
  return {};
}

void AlertWatcher::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  consumer_.reset();
}

void AlertWatcher::run() {
  while (!stopping_) {
    rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer_.get(), 100);
    if (message == nullptr) continue;
    const int64_t arrived = steadyClockNs();
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      auto key = kafka::headerValue(message, detectors::headers::kIdempotencyKey);
      if (!key && message->payload != nullptr) {
        const auto* begin = static_cast<const char*>(message->payload);
        const auto value = nlohmann::json::parse(begin, begin + message->len, nullptr, false);
        if (value.is_object() && value.contains("idempotency_key") &&
            value["idempotency_key"].is_string()) {
          key = value["idempotency_key"].get<std::string>();
        }
      }
      if (key) tracker_.arrived(*key, arrived);
    } else if (message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++consume_errors_;
    }
    rd_kafka_message_destroy(message);
  }
}

}  // namespace fraud::loadgen
