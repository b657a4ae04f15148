#include "tests/support/raw_producer.h"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace fraud::testing {
namespace {

void set(rd_kafka_conf_t* conf, const char* key, const std::string& value) {
  std::array<char, 512> err{};
  if (rd_kafka_conf_set(conf, key, value.c_str(), err.data(), err.size()) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string(key) + ": " + err.data());
  }
}

}  // namespace

RawProducer::RawProducer(const std::string& brokers, int max_message_bytes) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", brokers);
  set(conf, "log_level", "3");
  set(conf, "enable.idempotence", "true");
  set(conf, "linger.ms", "5");
  set(conf, "compression.type", "none");
  set(conf, "message.max.bytes", std::to_string(max_message_bytes));
  set(conf, "batch.size", std::to_string(max_message_bytes));
  rd_kafka_conf_set_dr_msg_cb(conf, &RawProducer::onDelivery);
  rd_kafka_conf_set_opaque(conf, this);
  std::array<char, 512> err{};
  producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err.data(), err.size());
  if (producer_ == nullptr) throw std::runtime_error(err.data());
}

RawProducer::~RawProducer() {
  rd_kafka_flush(producer_, 10'000);
  rd_kafka_destroy(producer_);
}

void RawProducer::onDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  auto* self = static_cast<RawProducer*>(opaque);
  std::lock_guard lock(self->mu_);
  if (self->failed_++ == 0) {
    self->first_error_ = std::string(rd_kafka_topic_name(message->rkt)) + " partition " +
                         std::to_string(message->partition) + ", " + std::to_string(message->len) +
                         " bytes: " + rd_kafka_err2str(message->err);
  }
}

void RawProducer::produce(const std::string& topic, int32_t partition, std::string_view key,
                          std::optional<std::string_view> value) {
  std::vector<rd_kafka_vu_t> fields(5);
  fields[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  fields[0].u.cstr = topic.c_str();
  fields[1].vtype = RD_KAFKA_VTYPE_PARTITION;
  fields[1].u.i32 = partition;
  fields[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  fields[2].u.i = RD_KAFKA_MSG_F_COPY;
  fields[3].vtype = RD_KAFKA_VTYPE_KEY;
  fields[3].u.mem = {const_cast<char*>(key.data()), key.size()};
  // An empty value needs a non-null pointer, or librdkafka writes a null value.
  static const char kEmpty = '\0';
  fields[4].vtype = RD_KAFKA_VTYPE_VALUE;
  fields[4].u.mem = {value ? const_cast<char*>(value->empty() ? &kEmpty : value->data()) : nullptr,
                     value ? value->size() : 0};
  while (true) {
    rd_kafka_error_t* error = rd_kafka_produceva(producer_, fields.data(), fields.size());
    const auto err = error == nullptr ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_error_code(error);
    if (error != nullptr) rd_kafka_error_destroy(error);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR__QUEUE_FULL)
        << "producing " << (value ? value->size() : 0) << " bytes: " << rd_kafka_err2str(err);
    rd_kafka_poll(producer_, 50);
  }
}

void RawProducer::flush() {
  ASSERT_EQ(rd_kafka_flush(producer_, 60'000), RD_KAFKA_RESP_ERR_NO_ERROR)
      << "records still unacknowledged after 60 s";
  std::lock_guard lock(mu_);
  ASSERT_EQ(failed_, 0) << failed_ << " record(s) refused; first: " << first_error_;
}

}  // namespace fraud::testing
