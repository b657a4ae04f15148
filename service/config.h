#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detectors/options.h"
#include "service/kafka/client.h"
#include "state/state_db.h"

namespace CLI {
class App;
}

namespace fraud::service {

// How alerts leave the service (--alert-delivery transactional|immediate).
enum class AlertDelivery { kTransactional, kImmediate };

// Everything `fraud-detector run` is told (docs/configuration.md). Flags, then FRAUD_*
// environment variables, then these defaults.
struct ServiceConfig {
  std::string brokers;               // required unless embedded_kafka
  bool embedded_kafka = false;       // librdkafka's in-process mock cluster
  int32_t embedded_partitions = 12;  // 1..1024
  std::string input_topic = "transactions";
  std::string alerts_topic = "alerts";
  std::string dlq_topic = "transactions.dlq";
  std::string changelog_topic;                // default: <group_id>.state-changelog
  int32_t changelog_replication_factor = -1;  // when we create it; -1: the broker's default
  std::string group_id = "fraud-detector";
  std::string instance_id;  // default: the host name
  bool static_membership = false;
  std::string auto_offset_reset = "earliest";  // earliest | latest

  state::StateDbOptions state{.dir = "./fraud-state"};
  detectors::DetectorOptions detector;
  int64_t max_future_skew_ms = 300'000;    // 0..kMaxEventTime
  int64_t commit_interval_ms = 50;         // 10..60000
  int64_t checkpoint_interval_ms = 1'000;  // 0..600000; committed state handed to disk
  int64_t shutdown_timeout_ms = 20'000;    // 1000..600000
  int64_t max_held_output_mb = 64;         // 1..4096; held output before input waits
  // kTransactional: alerts commit with state and offsets (each alert once, visible at the
  // commit). kImmediate: alerts produced at detection on an idempotent producer (repeats of a
  // key only after a fault; docs/state-and-recovery.md).
  AlertDelivery alert_delivery = AlertDelivery::kTransactional;
  // Warm copies of partitions owned by other members, kept by tailing their changelog
  // (0..16; 0: none). standby_interval_ms: how often a copy catches up (100..60000).
  int32_t standby_replicas = 0;
  int64_t standby_interval_ms = 1'000;

  std::optional<std::string> card_hash_key_file;
  std::optional<std::string> kafka_config_file;
  std::vector<std::string> kafka_overrides;  // KEY=VALUE, applied after the file

  // Unset (no --http-address, no FRAUD_HTTP_ADDRESS): 127.0.0.1 under embedded_kafka (trying
  // the product does not serve card state to the network), else 0.0.0.0 (resolveDefaults).
  std::optional<std::string> http_address;
  int32_t http_port = 8080;  // 0..65535 (0: any free port)
  // -1..65535 (-1: off, 0: any free port); not http_port. Unset: http_port + 1, or 0 when
  // http_port is 0, so that instances given only their own --http-port do not collide on the
  // probes (resolveDefaults; for http_port 65535 it stays unset and validate() says so).
  std::optional<int32_t> probe_port;
  int32_t api_thread_nice = 0;        // 0..19: niceness of the API's threads (not the probes')
  int64_t ready_max_lag = 10'000;     // >= 0
  std::string partitioner = "crc32";  // crc32 | murmur2
  std::string peer_url_template;
  std::optional<std::string> api_token_file;
  std::optional<std::string> tls_cert_file;
  std::optional<std::string> tls_key_file;

  // The sliding interval over which lateness is measured and a grace advised (s; whole
  // minutes, 60..86400).
  int64_t lateness_interval_s = 3'600;

  std::string log_format = "text";  // text | json
  std::string log_level = "info";

  // false: no core files and a non-dumpable process (service/core_dumps.h); true for debugging.
  bool allow_core_dumps = false;

  // Every problem with the values, one message each. Files are not read here; the state
  // directory is checked to be usable (StateDbOptions::checkDir: a probe file created and
  // removed).
  [[nodiscard]] std::vector<std::string> validate() const;
  // Fills defaults that depend on other values (changelog topic, instance id, the API's
  // address and the probe port).
  void resolveDefaults();

 private:
  void validateKafka(std::vector<std::string>& problems) const;
  void validateProcessing(std::vector<std::string>& problems) const;
  void validateServer(std::vector<std::string>& problems) const;
};

// Registers every `run` flag with its FRAUD_* variable on `cmd`.
void addRunFlags(CLI::App& cmd, ServiceConfig& config);

// librdkafka properties from the --kafka-config file and the --kafka overrides, in that order.
// Appends every problem (unreadable file, malformed line) to `problems`.
// The file's syntax: service/kafka/properties.h.
[[nodiscard]] kafka::KafkaProperties kafkaProperties(const ServiceConfig& config,
                                                     std::vector<std::string>& problems);

}  // namespace fraud::service
