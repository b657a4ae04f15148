#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/options.h"
#include "service/kafka/client.h"

namespace fraud::loadgen {

// `fraud-loadgen verify`: an end-to-end audit of any input topic against the service's alerts
// and dead-letter topics.
struct VerifyOptions {
  std::string brokers;
  std::string topic = "transactions";
  std::string alerts_topic = "alerts";
  std::string dlq_topic = "transactions.dlq";
  std::string truth_path;  // optional
  std::string group = "fraud-detector";
  kafka::KafkaProperties kafka_properties;
  detectors::DetectorOptions detector;
  int64_t max_future_skew_ms = 300'000;
  // How long to wait for the group's committed offsets to reach the input's last records; 0
  // skips the wait (no service: alerts produced by other means).
  double wait_seconds = 60;
  // A topic read fails when no record arrives for this long short of its end.
  double stall_seconds = 30;
  size_t list_limit = 100;  // entries per list in the report
  // The service's --alert-delivery: "immediate" accepts exact repeats of an idempotency key.
  std::string alert_delivery = "transactional";

  [[nodiscard]] std::vector<std::string> validate() const;
};

// Runs the audit and prints the JSON report on stdout.
// Returns 0 when everything matches, 1 on any mismatch, 2 on a setup or connection error.
[[nodiscard]] int runVerify(const VerifyOptions& options, const detectors::CardHasher& hasher);

}  // namespace fraud::loadgen
