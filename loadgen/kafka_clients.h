#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "service/kafka/client.h"

namespace fraud::loadgen {

// The Kafka clients of a production run: the idempotent producer (with the loadgen's batching
// defaults under the user's --kafka properties) and the settings of its consumers (the alerts
// watcher, the lag sampler).

// Delivery reports, counted on the thread that polls the producer (the producing thread).
struct Deliveries {
  uint64_t acked = 0;
  uint64_t failed = 0;
  std::map<std::string, uint64_t> failures;  // by librdkafka error name

  void fail(const char* reason) {
    ++failed;
    ++failures[reason];
  }
};

// The producer's properties: the loadgen's defaults, then `extra` (which win).
[[nodiscard]] kafka::KafkaProperties producerProperties(const std::string& brokers,
                                                        const kafka::KafkaProperties& extra);
// A consumer's properties: the brokers and the client id, then `extra` (which win).
[[nodiscard]] kafka::KafkaProperties consumerProperties(const std::string& brokers,
                                                        const kafka::KafkaProperties& extra);

// The producer, reporting each delivery into `deliveries` (which must outlive it) when polled.
// An error when it cannot be made.
[[nodiscard]] base::Result<kafka::KafkaHandle> makeProducer(
    const kafka::KafkaProperties& properties, Deliveries& deliveries);

}  // namespace fraud::loadgen
