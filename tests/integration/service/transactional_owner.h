// A transactional producer of an integration test, standing for one owner of a changelog
// partition: it can leave a transaction open the way an owner killed mid-commit does.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>

#include "service/kafka/client.h"
#include "service/kafka/producer.h"

namespace fraud::testing {

class Owner {
 public:
  Owner(const std::string& brokers, const std::string& transactional_id) {
    auto producer =
        kafka::makeKafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", brokers},
                                                   {"transactional.id", transactional_id},
                                                   {"transaction.timeout.ms", "60000"},
                                                   {"log_level", "2"}});
    EXPECT_TRUE(producer) << producer.message();
    if (producer) producer_ = std::move(*producer);
    kafka::KafkaError e(rd_kafka_init_transactions(producer_.get(), 30'000));
    EXPECT_FALSE(e) << rd_kafka_error_string(e.get());
  }
  void begin() { EXPECT_FALSE(kafka::KafkaError(rd_kafka_begin_transaction(producer_.get()))); }
  void send(const std::string& topic, std::string_view key, std::string_view value) {
    EXPECT_EQ(kafka::produceWaiting(producer_.get(), {topic.c_str(), 0, key, value},
                                    std::chrono::seconds(10)),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  void flush() { EXPECT_EQ(rd_kafka_flush(producer_.get(), 10'000), RD_KAFKA_RESP_ERR_NO_ERROR); }
  void commit() {
    kafka::KafkaError e = tryCommit();
    EXPECT_FALSE(e) << rd_kafka_error_string(e.get());
  }
  [[nodiscard]] kafka::KafkaError tryCommit() {
    return kafka::KafkaError(rd_kafka_commit_transaction(producer_.get(), 30'000));
  }

 private:
  kafka::KafkaHandle producer_;
};

}  // namespace fraud::testing
