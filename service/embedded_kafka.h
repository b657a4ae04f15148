#pragma once

#include <memory>
#include <string>

#include "service/config.h"
#include "service/kafka/client.h"

struct rd_kafka_mock_cluster_s;

namespace fraud::service {

// librdkafka's in-process mock cluster with the service's topics, so the product runs with
// nothing else installed. Not a broker to trust with data: it keeps everything in memory, and
// it does not filter aborted transactions or apply transactional offset commits.
class EmbeddedKafka {
 public:
  // The cluster with the input, alerts, dead-letter and changelog topics created; an error on
  // failure.
  [[nodiscard]] static base::Result<std::unique_ptr<EmbeddedKafka>> start(
      const ServiceConfig& config);
  ~EmbeddedKafka();
  EmbeddedKafka(const EmbeddedKafka&) = delete;
  EmbeddedKafka& operator=(const EmbeddedKafka&) = delete;

  [[nodiscard]] std::string bootstrap() const;

 private:
  EmbeddedKafka(kafka::KafkaHandle host, rd_kafka_mock_cluster_s* cluster);
  kafka::KafkaHandle host_;
  rd_kafka_mock_cluster_s* cluster_;
};

}  // namespace fraud::service
