// librdkafka's in-process mock cluster with one topic, "input", for the tests of fraud::kafka
// (kafka_client_test.cc) and of librdkafka's own behaviour (librdkafka_behaviour_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafka_mock.h>

#include <string>

#include "service/kafka/client.h"

namespace fraud::kafka::testing {

class InputMockCluster {
 public:
  explicit InputMockCluster(int partitions) {
    std::string error;
    host_ = makeKafkaClient(RD_KAFKA_PRODUCER, makeKafkaConf({}, error), error);
    cluster_ = rd_kafka_mock_cluster_new(host_.get(), 1);
    EXPECT_EQ(rd_kafka_mock_topic_create(cluster_, "input", partitions, 1),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ~InputMockCluster() { rd_kafka_mock_cluster_destroy(cluster_); }
  InputMockCluster(const InputMockCluster&) = delete;
  InputMockCluster& operator=(const InputMockCluster&) = delete;
  [[nodiscard]] std::string bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }
  [[nodiscard]] rd_kafka_mock_cluster_t* cluster() const { return cluster_; }

 private:
  KafkaHandle host_;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

}  // namespace fraud::kafka::testing
