#include "service/immediate_alert_output.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "service/kafka/admin.h"
#include "service/kafka/producer.h"

namespace fraud::service {
namespace {

// How long a send waits for room in a full producer queue before the alert counts as failed
// (its transaction then aborts and the alert is sent again).
constexpr auto kQueueFullPatience = std::chrono::seconds(10);

int64_t steadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

base::Result<std::unique_ptr<ImmediateAlertOutput>> ImmediateAlertOutput::create(
    const kafka::KafkaProperties& properties, std::string topic, Metrics metrics) {
  kafka::KafkaProperties props = properties;
  // Idempotence: librdkafka's retries never write an alert twice nor out of order; acks=all is
  // part of it. A low linger: an alert is worth most in its first milliseconds.
  props["enable.idempotence"] = "true";
  props["acks"] = "all";
  props.erase("transactional.id");
  props.try_emplace("linger.ms", "1");
  props.try_emplace("client.id", "fraud-detector-alerts");
  std::unique_ptr<ImmediateAlertOutput> output(
      new ImmediateAlertOutput(std::move(props), std::move(topic), metrics));
  if (auto e = output->makeProducer(); !e.ok()) return e;
  return output;
}

base::Status ImmediateAlertOutput::makeProducer() {
  auto conf = kafka::makeKafkaConf(properties_);
  if (!conf) return conf.status();
  rd_kafka_conf_set_dr_msg_cb(conf->get(), &ImmediateAlertOutput::onDelivery);
  rd_kafka_conf_set_opaque(conf->get(), this);
  auto producer = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  if (!producer) return producer.status();
  producer_ = std::move(*producer);
  return {};
}

void ImmediateAlertOutput::warmUp() {
  warmed_up_ = true;
  // The partition leaders now, not on the first alerts (librdkafka asks for them lazily).
  // Only for its side effect: a topic that cannot be described fails the first alerts instead.
  kafka::describeTopic(producer_.get(), topic_, 5000).ignoreError();
}

ImmediateAlertOutput::~ImmediateAlertOutput() { dropProducer(); }

void ImmediateAlertOutput::dropProducer() {
  // Delivery reports of what is still queued would call into this object: purge first.
  if (producer_) {
    rd_kafka_purge(producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(producer_.get(), 0);
    producer_.reset();
  }
}

bool ImmediateAlertOutput::failed() const {
  char reason[256];
  return producer_ && rd_kafka_fatal_error(producer_.get(), reason, sizeof(reason)) != 0;
}

base::Status ImmediateAlertOutput::restart() {
  dropProducer();
  {
    base::MutexLock lock(mu_);
    outstanding_.clear();  // no report will come for these
  }
  // The tasks that sent them were closed: their records, and alerts, come again.
  failures_unchecked_.store(0);
  if (auto e = makeProducer(); !e.ok()) return e;
  if (warmed_up_) warmUp();
  return {};
}

void ImmediateAlertOutput::onDelivery(rd_kafka_t*, const rd_kafka_message_t* message,
                                      void* opaque) {
  auto* self = static_cast<ImmediateAlertOutput*>(opaque);
  const auto seq = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(message->_private));
  if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::warn("alert delivery to {} failed: {}; its transaction aborts and it is sent again",
                 rd_kafka_topic_name(message->rkt), rd_kafka_err2str(message->err));
    ++self->failures_;
    ++self->failures_unchecked_;
    if (self->metrics_.failures != nullptr) self->metrics_.failures->Increment();
  }
  int64_t sent_at = 0;
  {
    base::MutexLock lock(self->mu_);
    const auto it = self->outstanding_.find(seq);
    if (it != self->outstanding_.end()) {
      sent_at = it->second;
      self->outstanding_.erase(it);
    }
  }
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR && self->metrics_.delivery != nullptr &&
      sent_at != 0) {
    self->metrics_.delivery->Observe(static_cast<double>(steadyNanos() - sent_at) / 1e9);
  }
}

void ImmediateAlertOutput::sendAlert(std::string_view key, std::string_view value,
                                     std::initializer_list<Header> headers) {
  rd_kafka_headers_t* kafka_headers = kafka::makeHeaders(headers);
  uint64_t seq = 0;
  {
    base::MutexLock lock(mu_);
    seq = ++last_seq_;
    outstanding_.emplace(seq, steadyNanos());
  }
  // The report carries the alert's number, never a pointer: it may be served on any thread.
  void* tag = reinterpret_cast<void*>(static_cast<uintptr_t>(seq));
  const auto err = kafka::produceWaiting(
      producer_.get(), {topic_.c_str(), RD_KAFKA_PARTITION_UA, key, value, kafka_headers, tag},
      kQueueFullPatience);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  spdlog::error("cannot produce an alert to {}: {}; its transaction aborts", topic_,
                rd_kafka_err2str(err));
  ++failures_;
  ++failures_unchecked_;
  if (metrics_.failures != nullptr) metrics_.failures->Increment();
  {
    base::MutexLock lock(mu_);
    outstanding_.erase(seq);  // no report will come for it
  }
}

void ImmediateAlertOutput::serveDeliveries() {
  if (producer_) rd_kafka_poll(producer_.get(), 0);
}

CommitReadiness ImmediateAlertOutput::flushForCommit(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  uint64_t target = 0;
  {
    base::MutexLock lock(mu_);
    target = last_seq_;
  }
  char reason[256];
  if (!producer_) return CommitReadiness::kFatal;
  // Until no alert numbered up to `target` is outstanding. Reports are served here too (the
  // ingest thread serves them between batches).
  while (true) {
    if (rd_kafka_fatal_error(producer_.get(), reason, sizeof(reason)) != 0) {
      spdlog::critical("alert producer failed for good: {}; stopping", reason);
      return CommitReadiness::kFatal;
    }
    {
      base::MutexLock lock(mu_);
      if (outstanding_.empty() || outstanding_.begin()->first > target) break;  // drained
      if (std::chrono::steady_clock::now() >= deadline) {
        spdlog::warn("alerts not acknowledged within {} ms; the transaction aborts", timeout_ms);
        failures_unchecked_.store(0);
        return CommitReadiness::kRetry;
      }
    }
    rd_kafka_poll(producer_.get(), 5);
  }
  return failures_unchecked_.exchange(0) == 0 ? CommitReadiness::kReady : CommitReadiness::kRetry;
}

}  // namespace fraud::service
