// librdkafka's in-process mock cluster with one topic, "input", for the tests of fraud::kafka
// (kafka_client_test.cc) and of librdkafka's own behaviour (librdkafka_behaviour_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "detectors/base/status.h"
#include "service/kafka/client.h"

namespace fraud::kafka::testing {

class InputMockCluster {
 public:
  explicit InputMockCluster(int partitions) {
    auto host = makeKafkaClient(RD_KAFKA_PRODUCER, KafkaProperties{});
    EXPECT_TRUE(host) << host.message();
    if (host) host_ = std::move(*host);
    cluster_ = rd_kafka_mock_cluster_new(host_.get(), 1);
    EXPECT_EQ(rd_kafka_mock_topic_create(cluster_, "input", partitions, 1),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ~InputMockCluster() { rd_kafka_mock_cluster_destroy(cluster_); }
  InputMockCluster(const InputMockCluster&) = delete;
  InputMockCluster& operator=(const InputMockCluster&) = delete;
  [[nodiscard]] std::string bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }
  [[nodiscard]] rd_kafka_mock_cluster_t* cluster() const { return cluster_; }

  // Commits `offset` of input partition `partition` for `group`, with `metadata` (the owner's
  // instance id, as the service writes it). An error when the commit fails.
  [[nodiscard]] base::Status commitWithMetadata(const std::string& group, int32_t partition,
                                                int64_t offset, const std::string& metadata) const {
    auto made = makeKafkaClient(RD_KAFKA_CONSUMER,
                                {{"bootstrap.servers", bootstrap()}, {"group.id", group}});
    if (!made) return made.status();
    const KafkaHandle committer = std::move(*made);
    auto offsets = makePartitionList(1);
    auto* entry = rd_kafka_topic_partition_list_add(offsets.get(), "input", partition);
    entry->offset = offset;
    entry->metadata = std::malloc(metadata.size());  // the list frees it
    std::memcpy(entry->metadata, metadata.data(), metadata.size());
    entry->metadata_size = metadata.size();
    const rd_kafka_resp_err_t err = rd_kafka_commit(committer.get(), offsets.get(), /*async=*/0);
    rd_kafka_consumer_close(committer.get());
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return base::Status::failed(rd_kafka_err2str(err));
    return {};
  }

 private:
  KafkaHandle host_;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

}  // namespace fraud::kafka::testing
