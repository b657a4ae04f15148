#include "service/transactional_producer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "service/kafka/admin.h"
#include "service/transactional_output.h"

namespace fraud::service {
namespace {

constexpr int kWarmUpTimeoutMs = 5'000;

}  // namespace

TransactionalProducer::TransactionalProducer(kafka::KafkaProperties properties,
                                             std::vector<std::string> warm_topics,
                                             int init_timeout_ms)
    : properties_(std::move(properties)),
      warm_topics_(std::move(warm_topics)),
      init_timeout_ms_(init_timeout_ms) {}

base::Status TransactionalProducer::start() {
  auto conf = kafka::makeKafkaConf(properties_);
  if (!conf) return conf.status().withPrefix("producer configuration: ");
  TransactionalOutput::installDeliveryReports(conf->get());
  auto handle = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  if (!handle) return handle.status().withPrefix("producer: ");
  handle_ = std::move(*handle);
  // A coordinator failing over (the reason we may be here) answers late: a retriable error is
  // retried within the patience, as librdkafka allows.
  const auto give_up_at =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(init_timeout_ms_);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up_at - std::chrono::steady_clock::now());
    kafka::KafkaError e(rd_kafka_init_transactions(
        handle_.get(), static_cast<int>(std::max<int64_t>(1'000, left.count()))));
    if (!e) break;
    const std::string text = rd_kafka_error_string(e.get());
    if (!rd_kafka_error_is_retriable(e.get()) || std::chrono::steady_clock::now() >= give_up_at) {
      handle_.reset();
      return base::Status::failed("init transactions: " + text);
    }
    spdlog::warn("init transactions: {}; retrying", text);
  }
  // Leaders now, not inside the first transactions (librdkafka then holds those commits for up
  // to a second while it asks).
  for (const auto& topic : warm_topics_) {
    kafka::describeTopic(handle_.get(), topic, kWarmUpTimeoutMs).ignoreError();
  }
  return {};
}

base::Status TransactionalProducer::restart() {
  handle_.reset();
  return start();
}

base::Status TransactionalProducer::fatalError() const {
  if (!handle_) return {};
  char reason[512];
  const auto err = rd_kafka_fatal_error(handle_.get(), reason, sizeof(reason));
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return base::Status::failed(std::string(rd_kafka_err2name(err)) + ": " + reason);
}

rd_kafka_resp_err_t TransactionalProducer::fatalCode() const {
  if (!handle_) return RD_KAFKA_RESP_ERR_NO_ERROR;
  std::array<char, 8> reason{};  // the code is what counts; the text is fatalError()'s
  return rd_kafka_fatal_error(handle_.get(), reason.data(), reason.size());
}

}  // namespace fraud::service
