#include "service/kafka.h"

namespace fraud::service {

KafkaConf makeKafkaConf(const KafkaProperties& properties, std::string& error) {
  KafkaConf conf(rd_kafka_conf_new());
  std::string problems;
  for (const auto& [key, value] : properties) {
    char message[512];
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), message, sizeof(message)) !=
        RD_KAFKA_CONF_OK) {
      if (!problems.empty()) problems += "; ";
      problems += message;
    }
  }
  if (!problems.empty()) {
    error = problems;
    return nullptr;
  }
  return conf;
}

KafkaHandle makeKafkaClient(rd_kafka_type_t type, KafkaConf conf, std::string& error) {
  char message[512];
  rd_kafka_t* client = rd_kafka_new(type, conf.get(), message, sizeof(message));
  if (client == nullptr) {
    error = message;
    return nullptr;
  }
  (void)conf.release();  // owned by the client now
  return KafkaHandle(client);
}

PartitionList makePartitionList(int size) {
  return PartitionList(rd_kafka_topic_partition_list_new(size));
}

std::optional<int32_t> topicPartitionCount(rd_kafka_t* client, const std::string& topic,
                                           int timeout_ms, std::string& error) {
  rd_kafka_topic_t* handle = rd_kafka_topic_new(client, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  const auto err = rd_kafka_metadata(client, 0, handle, &metadata, timeout_ms);
  rd_kafka_topic_destroy(handle);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = "metadata for topic " + topic + ": " + rd_kafka_err2str(err);
    return std::nullopt;
  }
  std::optional<int32_t> count;
  if (metadata->topic_cnt == 1 && metadata->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
      metadata->topics[0].partition_cnt > 0) {
    count = metadata->topics[0].partition_cnt;
  } else if (metadata->topic_cnt == 1) {
    error = "topic " + topic + ": " +
            (metadata->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR
                 ? std::string(rd_kafka_err2str(metadata->topics[0].err))
                 : std::string("no partitions"));
  } else {
    error = "topic " + topic + " not in metadata";
  }
  rd_kafka_metadata_destroy(metadata);
  return count;
}

}  // namespace fraud::service
