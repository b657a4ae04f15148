// The whole service on librdkafka's mock cluster, for the component tests of the stream loop:
// a fixture with the topics, a configuration, real RocksDB in a temp dir, the metrics and a
// producer of input records; and a StreamProcessor running on a thread of its own.
#pragma once

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "detectors/card_ref.h"
#include "service/config.h"
#include "service/kafka/producer.h"
#include "service/metrics.h"
#include "service/stream_processor.h"
#include "tests/support/mock_cluster.h"
#include "tests/support/service_fakes.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service::testing {

// A started StreamProcessor whose run() goes on on a thread of its own. Stopped (requestStop)
// when it goes out of scope, so that a test ending early never waits for a run that goes on.
class RunningProcessor {
 public:
  RunningProcessor(const ServiceConfig& config, kafka::KafkaProperties kafka,
                   const detectors::CardHasher& hasher, state::StateDb& db, ServiceMetrics& metrics)
      : processor_(config, std::move(kafka), hasher, db, metrics) {
    start_error_ = processor_.start();
    if (start_error_.ok()) {
      run_ = std::async(std::launch::async, [this] { return processor_.run(); });
    }
  }
  ~RunningProcessor() { processor_.requestStop(); }  // then run_'s destructor waits for it
  RunningProcessor(const RunningProcessor&) = delete;
  RunningProcessor& operator=(const RunningProcessor&) = delete;

  // start()'s error, if it failed (run() was not called then); ok otherwise.
  [[nodiscard]] const base::Status& startError() const { return start_error_; }
  [[nodiscard]] StreamProcessor& processor() { return processor_; }

  // Waits until `done()` holds, up to `limit`, looking every `poll`; false when the limit passed
  // or run() ended first.
  template <typename Condition>
  [[nodiscard]] bool waitFor(Condition done, std::chrono::milliseconds limit,
                             std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      if (exitWithin(poll)) return false;
    }
    return done();
  }
  // run()'s status when it ends within `limit`.
  [[nodiscard]] std::optional<int> exitWithin(std::chrono::milliseconds limit) {
    if (!run_.valid()) return status_;
    if (run_.wait_for(limit) != std::future_status::ready) return std::nullopt;
    status_ = run_.get();
    return status_;
  }
  // Asks run() to stop; its status when it ended within `limit`.
  [[nodiscard]] std::optional<int> stop(std::chrono::milliseconds limit) {
    processor_.requestStop();
    return exitWithin(limit);
  }

 private:
  StreamProcessor processor_;
  base::Status start_error_;
  std::optional<int> status_;  // once run() ended and its future was read
  std::future<int> run_;
};

// The cluster has the configuration's input and changelog topics (2 partitions each), its alerts
// and dead-letter topics (1 each). The configuration persists committed state after every
// commit and takes the mock cluster's limits (as --embedded-kafka does).
class MockClusterServiceTest : public ::testing::Test {
 protected:
  explicit MockClusterServiceTest(const std::string& instance_id) {
    config_.brokers = cluster_.bootstrap();
    config_.embedded_kafka = true;  // the mock cluster's limits apply (run.cc does not start one)
    config_.instance_id = instance_id;
    config_.shutdown_timeout_ms = 10'000;
    config_.checkpoint_interval_ms = 0;  // persist after every commit
    config_.resolveDefaults();
    cluster_.createTopic(config_.input_topic, 2);
    cluster_.createTopic(config_.alerts_topic, 1);
    cluster_.createTopic(config_.dlq_topic, 1);
    cluster_.createTopic(config_.changelog_topic, 2);
  }

  // A processor over this fixture's configuration, database and metrics, started and running
  // unless startError() says otherwise.
  [[nodiscard]] std::unique_ptr<RunningProcessor> startProcessor(kafka::KafkaProperties kafka) {
    return std::make_unique<RunningProcessor>(config_, std::move(kafka), hasher_, *db_, metrics_);
  }
  [[nodiscard]] std::unique_ptr<RunningProcessor> startProcessor() {
    return startProcessor({{"log_level", "2"}});
  }

  void produce(int32_t partition, const std::string& key, const std::string& value) {
    const base::Status sent = input_.send(config_.input_topic, partition, key, value);
    ASSERT_TRUE(sent.ok()) << sent.message();
  }
  [[nodiscard]] double committedTransactions() {
    return metrics_.transactions.Add({{"result", "committed"}}).Value();
  }

  MockCluster cluster_;
  ServiceConfig config_;
  TempStateDb db_;
  prometheus::Registry registry_;
  ServiceMetrics metrics_{registry_};
  detectors::CardHasher hasher_{kTestKey};
  kafka::SyncProducer input_{{{"bootstrap.servers", cluster_.bootstrap()}, {"log_level", "2"}}};
};

}  // namespace fraud::service::testing
