// librdkafka's in-process mock cluster, for unit tests that need a real client talking to a
// broker whose answers can be scripted: injected errors (push_request_errors), slow round
// trips (broker_set_rtt), brokers down.
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafka_mock.h>

#include <string>

#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/transactional_output.h"

namespace fraud::service::testing {

// Kafka protocol API keys for injected errors.
inline constexpr int16_t kApiProduce = 0;
inline constexpr int16_t kApiHeartbeat = 12;
inline constexpr int16_t kApiAddPartitionsToTxn = 24;
inline constexpr int16_t kApiAddOffsetsToTxn = 25;
inline constexpr int16_t kApiEndTxn = 26;

class MockCluster {
 public:
  // `brokers` brokers, numbered from 1; a topic's partitions are led by broker 1 and later ones.
  explicit MockCluster(int brokers = 1) : brokers_(brokers) {
    auto host = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, {{"log_level", "2"}});
    EXPECT_TRUE(host) << host.message();
    if (host) host_ = std::move(*host);
    cluster_ = rd_kafka_mock_cluster_new(host_.get(), brokers);
  }
  ~MockCluster() {
    if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
  }
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  // Replicated on every broker.
  void createTopic(const std::string& topic, int partitions) {
    ASSERT_EQ(rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, brokers_),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  // Leadership of the partition moves to `broker`; clients learn it from their next metadata.
  void moveLeader(const std::string& topic, int32_t partition, int32_t broker) {
    ASSERT_EQ(rd_kafka_mock_partition_set_leader(cluster_, topic.c_str(), partition, broker),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  [[nodiscard]] std::string bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }
  [[nodiscard]] rd_kafka_mock_cluster_t* get() const { return cluster_; }

  // The next `count` requests of `api` fail with `err`.
  void failNext(int16_t api, size_t count, rd_kafka_resp_err_t err) {
    for (size_t i = 0; i < count; ++i) rd_kafka_mock_push_request_errors(cluster_, api, 1, err);
  }
  void setRoundTripMs(int ms) { rd_kafka_mock_broker_set_rtt(cluster_, 1, ms); }

  // A transactional producer with transactions initialised.
  [[nodiscard]] kafka::KafkaHandle transactionalProducer(
      const std::string& transactional_id) const {
    auto conf = kafka::makeKafkaConf({{"bootstrap.servers", bootstrap()},
                                      {"transactional.id", transactional_id},
                                      {"enable.idempotence", "true"},
                                      {"linger.ms", "1"},
                                      {"log_level", "2"}});
    EXPECT_TRUE(conf) << conf.message();
    if (!conf) return nullptr;
    TransactionalOutput::installDeliveryReports(conf->get());
    auto made = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
    EXPECT_TRUE(made) << made.message();
    if (!made) return nullptr;
    kafka::KafkaHandle producer = std::move(*made);
    kafka::KafkaError init(rd_kafka_init_transactions(producer.get(), 10'000));
    EXPECT_FALSE(init) << (init ? rd_kafka_error_string(init.get()) : "");
    return producer;
  }

 private:
  int brokers_;
  kafka::KafkaHandle host_;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

}  // namespace fraud::service::testing
