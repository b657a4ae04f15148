#include "loadgen/kafka_clients.h"

namespace fraud::loadgen {
namespace {

void onDelivery(rd_kafka_t* /*producer*/, const rd_kafka_message_t* message, void* opaque) {
  auto& deliveries = *static_cast<Deliveries*>(opaque);
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++deliveries.acked;
  } else {
    deliveries.fail(rd_kafka_err2name(message->err));
  }
}

}  // namespace

kafka::KafkaProperties producerProperties(const std::string& brokers,
                                          const kafka::KafkaProperties& extra) {
  kafka::KafkaProperties properties = {
      {"bootstrap.servers", brokers},
      {"client.id", "fraud-loadgen"},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", "5"},
      {"batch.num.messages", "10000"},
      {"batch.size", "1000000"},
      {"compression.type", "lz4"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"},
  };
  for (const auto& [key, value] : extra) properties[key] = value;
  return properties;
}

kafka::KafkaProperties consumerProperties(const std::string& brokers,
                                          const kafka::KafkaProperties& extra) {
  kafka::KafkaProperties properties = {{"bootstrap.servers", brokers},
                                       {"client.id", "fraud-loadgen-alerts"}};
  for (const auto& [key, value] : extra) properties[key] = value;
  return properties;
}

base::Result<kafka::KafkaHandle> makeProducer(const kafka::KafkaProperties& properties,
                                              Deliveries& deliveries) {
  auto conf = kafka::makeKafkaConf(properties);
  if (!conf) return conf.status().withPrefix("Kafka producer configuration: ");
  rd_kafka_conf_set_dr_msg_cb(conf->get(), &onDelivery);
  rd_kafka_conf_set_opaque(conf->get(), &deliveries);
  auto producer = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  if (!producer) return producer.status().withPrefix("cannot create the Kafka producer: ");
  return producer;
}

}  // namespace fraud::loadgen
