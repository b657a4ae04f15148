#pragma once

#include <prometheus/counter.h>
#include <prometheus/histogram.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/base/mutex.h"
#include "service/kafka/client.h"
#include "service/record_collector.h"
#include "service/transaction_sink.h"

namespace fraud::service {

// Alerts of `--alert-delivery immediate`: each produced the moment it is detected, on an
// idempotent producer of its own, outside the transaction that carries card state, offsets and
// dead letters (docs/state-and-recovery.md, "Alert delivery").
//
// The guarantee rests on one rule: a transaction commits input offsets only after every alert
// sent before it began was acknowledged (flushForCommit(), run by TransactionalOutput's
// committer as its commit precondition). An alert the broker never acknowledged fails that
// precondition, the transaction aborts, and the records behind it are processed again from the
// committed state: the alert is sent again, with the same idempotency key and content. So no
// alert is lost, and a key repeats only after a fault (an abort, a crash, a lost partition).
//
// An idempotent producer can fail for good (a sequence the broker cannot accept):
// flushForCommit() then says kFatal, and the stream thread recovers (ProducerRecovery) by closing
// its tasks dirty and restart()ing this producer. The alerts it never acknowledged are sent
// again as the records behind them are processed again.
//
// Thread-safety: sendAlert(), serveDeliveries(), failed() and restart() on the ingest thread
// (restart() only with no commit in flight); flushForCommit() on the committer thread; librdkafka
// runs the delivery reports on whichever thread polls.
class ImmediateAlertOutput final : public AlertSink {
 public:
  struct Metrics {
    prometheus::Histogram* delivery = nullptr;  // produced to acknowledged, per alert
    prometheus::Counter* failures = nullptr;    // alerts not acknowledged
  };

  using Header = RecordCollector::Header;

  // The producer of alerts to `topic`, from the service's common client properties
  // (idempotence, acks=all and a low linger are set here); an error when librdkafka refuses
  // them.
  [[nodiscard]] static base::Result<std::unique_ptr<ImmediateAlertOutput>> create(
      const kafka::KafkaProperties& properties, std::string topic, Metrics metrics);
  ~ImmediateAlertOutput() override;
  // Learns the topic's partition leaders before the first alert needs them.
  void warmUp();
  ImmediateAlertOutput(const ImmediateAlertOutput&) = delete;
  ImmediateAlertOutput& operator=(const ImmediateAlertOutput&) = delete;

  // Produces one alert now, partitioned by key. A record librdkafka refuses outright counts as
  // a failed delivery.
  void sendAlert(std::string_view key, std::string_view value,
                 std::initializer_list<Header> headers) override FRAUD_EXCLUDES(mu_);
  void serveDeliveries() override;
  // Waits until every alert sent before this call is acknowledged (alerts sent meanwhile are
  // not waited for: at a steady alert rate the wait still ends). kRetry when one was not
  // acknowledged (since the last call) or they did not all arrive within `timeout_ms`; kFatal
  // when the producer failed for good (nothing it sends will ever be acknowledged).
  [[nodiscard]] CommitReadiness flushForCommit(int timeout_ms) FRAUD_EXCLUDES(mu_);
  // The producer failed for good (librdkafka's fatal error): only restart() cures it.
  [[nodiscard]] bool failed() const;
  // Drops the producer and what it still holds (counted as failed deliveries) and makes a new
  // one from the same properties; an error when librdkafka refuses.
  [[nodiscard]] base::Status restart() FRAUD_EXCLUDES(mu_);

  [[nodiscard]] rd_kafka_t* producer() const { return producer_.get(); }
  [[nodiscard]] uint64_t failures() const { return failures_.load(); }

 private:
  ImmediateAlertOutput(kafka::KafkaProperties properties, std::string topic, Metrics metrics)
      : properties_(std::move(properties)), topic_(std::move(topic)), metrics_(metrics) {}
  [[nodiscard]] base::Status makeProducer();
  void dropProducer();
  static void onDelivery(rd_kafka_t* producer, const rd_kafka_message_t* message, void* opaque);

  kafka::KafkaProperties properties_;
  const std::string topic_;
  bool warmed_up_ = false;  // warmed up again by restart()
  Metrics metrics_;
  // Not under mu_: replaced on the ingest thread only (create(), restart()) while no commit is
  // in flight, so flushForCommit() on the committer thread never sees it change.
  kafka::KafkaHandle producer_;
  std::atomic<uint64_t> failures_{0};            // ever
  std::atomic<uint64_t> failures_unchecked_{0};  // since the last flushForCommit()

  base::Mutex mu_;
  uint64_t last_seq_ FRAUD_GUARDED_BY(mu_) = 0;  // of the last alert sent (ingest thread)
  // Alerts without a report: seq -> sent at (ns).
  std::map<uint64_t, int64_t> outstanding_ FRAUD_GUARDED_BY(mu_);
};

}  // namespace fraud::service
