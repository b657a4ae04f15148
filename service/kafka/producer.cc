#include "service/kafka/producer.h"

#include <chrono>

namespace fraud::kafka {

rd_kafka_resp_err_t produce(rd_kafka_t* producer, rd_kafka_topic_t* topic, int32_t partition,
                            std::string_view key, std::string_view value, int64_t timestamp_ms,
                            const Headers& headers) {
  // rd_kafka_produceva rather than the producev macros, which cast C-style.
  constexpr size_t kFixed = 6;
  constexpr size_t kInline = 4;
  rd_kafka_vu_t inline_fields[kFixed + kInline];
  std::vector<rd_kafka_vu_t> grown;
  rd_kafka_vu_t* vus = inline_fields;
  if (headers.size() > kInline) {
    grown.resize(kFixed + headers.size());
    vus = grown.data();
  }
  vus[0].vtype = RD_KAFKA_VTYPE_RKT;
  vus[0].u.rkt = topic;
  vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
  vus[1].u.i32 = partition;
  vus[2].vtype = RD_KAFKA_VTYPE_KEY;
  vus[2].u.mem.ptr = const_cast<char*>(key.data());
  vus[2].u.mem.size = key.size();
  vus[3].vtype = RD_KAFKA_VTYPE_VALUE;
  vus[3].u.mem.ptr = const_cast<char*>(value.data());
  vus[3].u.mem.size = value.size();
  vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vus[4].u.i = RD_KAFKA_MSG_F_COPY;
  vus[5].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
  vus[5].u.i64 = timestamp_ms;
  size_t count = kFixed;
  for (const auto& [name, header_value] : headers) {
    auto& vu = vus[count++];
    vu.vtype = RD_KAFKA_VTYPE_HEADER;
    vu.u.header.name = name.c_str();
    vu.u.header.val = header_value.data();
    vu.u.header.size = static_cast<ssize_t>(header_value.size());
  }
  KafkaError error(rd_kafka_produceva(producer, vus, count));
  return error ? rd_kafka_error_code(error.get()) : RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t produceWaiting(rd_kafka_t* producer, const OutgoingRecord& record,
                                   std::chrono::milliseconds patience,
                                   const std::function<void()>& on_full) {
  rd_kafka_vu_t fields[7];
  size_t count = 0;
  auto add = [&](rd_kafka_vtype_t type) -> rd_kafka_vu_t& {
    rd_kafka_vu_t& field = fields[count++];
    field.vtype = type;
    return field;
  };
  add(RD_KAFKA_VTYPE_TOPIC).u.cstr = record.topic;
  add(RD_KAFKA_VTYPE_PARTITION).u.i32 = record.partition;
  add(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
  add(RD_KAFKA_VTYPE_KEY).u.mem = {const_cast<char*>(record.key.data()), record.key.size()};
  add(RD_KAFKA_VTYPE_VALUE).u.mem = {
      record.value ? const_cast<char*>(record.value->data()) : nullptr,
      record.value ? record.value->size() : 0};
  if (record.headers != nullptr) add(RD_KAFKA_VTYPE_HEADERS).u.headers = record.headers;
  if (record.opaque != nullptr) add(RD_KAFKA_VTYPE_OPAQUE).u.ptr = record.opaque;
  const auto first_try = std::chrono::steady_clock::now();
  while (true) {
    KafkaError error(rd_kafka_produceva(producer, fields, count));
    const auto err = error ? rd_kafka_error_code(error.get()) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return err;  // the headers belong to the message now
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL &&
        std::chrono::steady_clock::now() - first_try < patience) {
      if (on_full) on_full();
      rd_kafka_poll(producer, 100);
      continue;
    }
    if (record.headers != nullptr) rd_kafka_headers_destroy(record.headers);
    return err;
  }
}

SyncProducer::SyncProducer(const KafkaProperties& properties) {
  KafkaProperties all = properties;
  all["enable.idempotence"] = "true";
  all["acks"] = "all";
  all.try_emplace("linger.ms", "0");
  auto conf = makeKafkaConf(all);
  if (!conf) {
    created_ = conf.status();
    return;
  }
  rd_kafka_conf_set_dr_msg_cb(conf->get(), &SyncProducer::onDelivery);
  rd_kafka_conf_set_opaque(conf->get(), this);
  auto producer = makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  if (producer) {
    producer_ = std::move(*producer);
  } else {
    created_ = producer.status();
  }
}

void SyncProducer::onDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  auto* self = static_cast<SyncProducer*>(opaque);
  --self->pending_;
  if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR &&
      self->failed_delivery_ == RD_KAFKA_RESP_ERR_NO_ERROR) {
    self->failed_delivery_ = message->err;
  }
}

base::Status SyncProducer::send(const std::string& topic, int32_t partition, std::string_view key,
                                std::string_view value, const Headers& headers, int timeout_ms) {
  if (auto queued = enqueue(topic, partition, key, value, headers, timeout_ms); !queued.ok()) {
    return queued;
  }
  return flush(timeout_ms);
}

base::Status SyncProducer::enqueue(const std::string& topic, int32_t partition,
                                   std::string_view key, std::string_view value,
                                   const Headers& headers, int timeout_ms) {
  if (!producer_) return created_;
  TopicHandle handle(rd_kafka_topic_new(producer_.get(), topic.c_str(), nullptr));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto err = produce(producer_.get(), handle.get(), partition, key, value, 0, headers);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || std::chrono::steady_clock::now() > deadline) {
      return base::Status::failed("cannot produce to " + topic + ": " + rd_kafka_err2str(err));
    }
    rd_kafka_poll(producer_.get(), 10);
  }
  ++pending_;
  rd_kafka_poll(producer_.get(), 0);
  return {};
}

base::Status SyncProducer::flush(int timeout_ms) {
  if (!producer_) return created_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (pending_ > 0 && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_poll(producer_.get(), 50);
  }
  const auto failed = failed_delivery_;
  failed_delivery_ = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (pending_ > 0) {
    return base::Status::failed(std::to_string(pending_) + " record(s) not acknowledged within " +
                                std::to_string(timeout_ms) + " ms");
  }
  if (failed != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::Status::failed(std::string("delivery failed: ") + rd_kafka_err2str(failed));
  }
  return {};
}

}  // namespace fraud::kafka
