#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/partitioner.h"
#include "loadgen/run_series.h"
#include "loadgen/traffic_model.h"
#include "service/kafka/client.h"

namespace fraud::loadgen {

// `fraud-loadgen` (no subcommand): generate the model's traffic, produce it to Kafka paced at a
// target rate and/or write it to files, and write the truth file.
struct ProductionOptions {
  TrafficOptions traffic;
  // Records per second of wall-clock time; nothing for "as fast as possible" (`--rate max`).
  std::optional<double> rate = 20'000;
  // Stop after this much wall-clock time of production, or after this many records; the first
  // reached wins. Without a broker, a duration means duration x model rate records.
  std::optional<double> duration_s;
  std::optional<uint64_t> count;

  std::string brokers;  // empty: no Kafka, files only
  std::string topic = "transactions";
  std::string alerts_topic = "alerts";
  kafka::KafkaProperties kafka_properties;  // extra librdkafka settings, applied last
  // Partitions of the topic: from the broker's metadata when producing (this must then agree if
  // given), else this (default 12).
  std::optional<int32_t> partitions;
  detectors::Partitioner partitioner = detectors::Partitioner::kCrc32;

  std::string output_dir;     // per-partition JSONL files
  std::string output_single;  // one JSONL file in production order
  std::string truth_path;

  // End-to-end latency (needs a broker and the card-hash key).
  bool measure_latency = true;
  double latency_wait_s = 10;
  int64_t max_future_skew_ms = 300'000;  // the service's rule, to expect what it will reject
  // A consumer group whose lag on the topic is sampled every second (empty: none).
  std::string lag_group;
  // The /metrics URLs of the service's instances (http://HOST:PORT/metrics): read before and
  // after the run, for the share of its records the service dropped as too late (empty: none).
  std::vector<std::string> service_metrics;
  bool progress = true;         // a progress line on stderr every second
  RunSeries* series = nullptr;  // when set, filled at the end (the --report page's data)

  // Every problem, one message each; empty when usable. `have_key`: a card-hash key was given.
  [[nodiscard]] std::vector<std::string> validate(bool have_key) const;
};

// Runs the production and prints the summary JSON on stdout. `hasher` may be null (no key:
// no truth file, no latency). Stops early when `stop` becomes true (a signal).
// Returns the process exit status: 0 done, 1 records failed or I/O error, 2 setup error.
[[nodiscard]] int runProduction(const ProductionOptions& options,
                                const detectors::CardHasher* hasher, const std::atomic<bool>& stop);

}  // namespace fraud::loadgen
