#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace fraud::service {

// Owning handles for librdkafka's C objects.
struct KafkaDeleter {
  void operator()(rd_kafka_t* p) const { rd_kafka_destroy(p); }
  void operator()(rd_kafka_conf_t* p) const { rd_kafka_conf_destroy(p); }
  void operator()(rd_kafka_message_t* p) const { rd_kafka_message_destroy(p); }
  void operator()(rd_kafka_topic_partition_list_t* p) const {
    rd_kafka_topic_partition_list_destroy(p);
  }
  void operator()(rd_kafka_error_t* p) const { rd_kafka_error_destroy(p); }
  void operator()(rd_kafka_queue_t* p) const { rd_kafka_queue_destroy(p); }
  void operator()(rd_kafka_consumer_group_metadata_t* p) const {
    rd_kafka_consumer_group_metadata_destroy(p);
  }
  void operator()(rd_kafka_headers_t* p) const { rd_kafka_headers_destroy(p); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDeleter>;
using KafkaConf = std::unique_ptr<rd_kafka_conf_t, KafkaDeleter>;
using KafkaMessage = std::unique_ptr<rd_kafka_message_t, KafkaDeleter>;
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, KafkaDeleter>;
using KafkaError = std::unique_ptr<rd_kafka_error_t, KafkaDeleter>;
using KafkaQueue = std::unique_ptr<rd_kafka_queue_t, KafkaDeleter>;
using GroupMetadata = std::unique_ptr<rd_kafka_consumer_group_metadata_t, KafkaDeleter>;

using KafkaProperties = std::map<std::string, std::string>;

// A configuration with every property set; nothing (and `error` naming each rejected property)
// when librdkafka refuses any.
[[nodiscard]] KafkaConf makeKafkaConf(const KafkaProperties& properties, std::string& error);

// A client of the given type; nothing and `error` set on failure. Takes the configuration.
[[nodiscard]] KafkaHandle makeKafkaClient(rd_kafka_type_t type, KafkaConf conf, std::string& error);

[[nodiscard]] PartitionList makePartitionList(int size = 0);

// The partition count of `topic`, or nothing when the topic does not exist or the cluster did
// not answer within the timeout (`error` says which).
[[nodiscard]] std::optional<int32_t> topicPartitionCount(rd_kafka_t* client,
                                                         const std::string& topic, int timeout_ms,
                                                         std::string& error);

[[nodiscard]] inline std::string_view payloadOf(const rd_kafka_message_t* m) {
  return m->payload == nullptr ? std::string_view()
                               : std::string_view(static_cast<const char*>(m->payload), m->len);
}
[[nodiscard]] inline std::string_view keyOf(const rd_kafka_message_t* m) {
  return m->key == nullptr ? std::string_view()
                           : std::string_view(static_cast<const char*>(m->key), m->key_len);
}

}  // namespace fraud::service
