#include "service/embedded_kafka.h"

#include <librdkafka/rdkafka_mock.h>

namespace fraud::service {

EmbeddedKafka::EmbeddedKafka(kafka::KafkaHandle host, rd_kafka_mock_cluster_s* cluster)
    : host_(std::move(host)), cluster_(cluster) {}

EmbeddedKafka::~EmbeddedKafka() {
  if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
}

base::Result<std::unique_ptr<EmbeddedKafka>> EmbeddedKafka::start(const ServiceConfig& config) {
  // The mock cluster lives inside a client instance; it never connects anywhere.
  auto conf = kafka::makeKafkaConf({{"log_level", "3"}});
  if (!conf) return conf.status();
  auto made = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  if (!made) return made.status();
  kafka::KafkaHandle host = std::move(*made);
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(host.get(), 1);
  if (cluster == nullptr) return base::Status::failed("cannot start the mock cluster");
  std::unique_ptr<EmbeddedKafka> embedded(new EmbeddedKafka(std::move(host), cluster));
  for (const auto* topic :
       {&config.input_topic, &config.alerts_topic, &config.dlq_topic, &config.changelog_topic}) {
    if (const auto err =
            rd_kafka_mock_topic_create(cluster, topic->c_str(), config.embedded_partitions, 1)) {
      return base::Status::failed("cannot create topic " + *topic + ": " + rd_kafka_err2str(err));
    }
  }
  return embedded;
}

std::string EmbeddedKafka::bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }

}  // namespace fraud::service
