#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/base/status.h"

namespace fraud::kafka {

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
  void operator()(rd_kafka_topic_t* p) const { rd_kafka_topic_destroy(p); }
  void operator()(rd_kafka_event_t* p) const { rd_kafka_event_destroy(p); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDeleter>;
using KafkaConf = std::unique_ptr<rd_kafka_conf_t, KafkaDeleter>;
using KafkaMessage = std::unique_ptr<rd_kafka_message_t, KafkaDeleter>;
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, KafkaDeleter>;
using KafkaError = std::unique_ptr<rd_kafka_error_t, KafkaDeleter>;
using KafkaQueue = std::unique_ptr<rd_kafka_queue_t, KafkaDeleter>;
using GroupMetadata = std::unique_ptr<rd_kafka_consumer_group_metadata_t, KafkaDeleter>;
using TopicHandle = std::unique_ptr<rd_kafka_topic_t, KafkaDeleter>;
using KafkaEvent = std::unique_ptr<rd_kafka_event_t, KafkaDeleter>;

// librdkafka properties by name; setting one again replaces it.
using KafkaProperties = std::map<std::string, std::string>;

// librdkafka's syslog levels (0 emergency .. 7 debug) folded into five.
enum class LogLevel { kDebug, kInfo, kWarning, kError, kCritical };
[[nodiscard]] LogLevel logLevelOfSyslog(int syslog_level);

// Where every client made by makeKafkaConf() logs: called on librdkafka's own threads, so it must
// be thread-safe and must not call back into librdkafka. `facility` is librdkafka's (FAIL,
// BROKER, ...); `client` is the client's name (rd_kafka_name).
using LogSink = std::function<void(LogLevel level, std::string_view client,
                                   std::string_view facility, std::string_view message)>;
// Replaces the process-wide sink (an empty function restores the default: one plain text line on
// stderr per message at warning and above). Thread-safe; takes effect for clients already made.
void setLogSink(LogSink sink);

// A configuration with every property set and its log routed to the sink; kInvalidArgument,
// naming each rejected property, when librdkafka refuses any.
[[nodiscard]] base::Result<KafkaConf> makeKafkaConf(const KafkaProperties& properties);

// A client of the given type (never null); kInvalidArgument with librdkafka's reason when it
// cannot be made. Takes the configuration.
[[nodiscard]] base::Result<KafkaHandle> makeKafkaClient(rd_kafka_type_t type, KafkaConf conf);
// Both steps at once, for a client that needs no callbacks set on its configuration.
[[nodiscard]] base::Result<KafkaHandle> makeKafkaClient(rd_kafka_type_t type,
                                                        const KafkaProperties& properties);

// A consumer for reading by assign() (readToEnd): never joins a group, never commits, reports
// partition ends; `read_committed` hides aborted and open transactions. `properties` (e.g.
// bootstrap.servers, TLS) win over these defaults, except the ones reading needs.
[[nodiscard]] base::Result<KafkaHandle> makeReader(const KafkaProperties& properties,
                                                   bool read_committed);

[[nodiscard]] PartitionList makePartitionList(int size = 0);
// Partitions 0..partitions-1 of `topic`.
[[nodiscard]] PartitionList makePartitionList(const std::string& topic, int32_t partitions);

[[nodiscard]] inline std::string_view payloadOf(const rd_kafka_message_t* m) {
  return m->payload == nullptr ? std::string_view()
                               : std::string_view(static_cast<const char*>(m->payload), m->len);
}
[[nodiscard]] inline std::string_view keyOf(const rd_kafka_message_t* m) {
  return m->key == nullptr ? std::string_view()
                           : std::string_view(static_cast<const char*>(m->key), m->key_len);
}

// The record's timestamp; nothing when the record has none.
[[nodiscard]] std::optional<int64_t> timestampOf(const rd_kafka_message_t* m);

// A record's last header of that name; nothing when absent.
[[nodiscard]] std::optional<std::string> headerValue(const rd_kafka_message_t* m,
                                                     std::string_view name);
// Every header of a record (the last of each name).
[[nodiscard]] std::map<std::string, std::string> headersOf(const rd_kafka_message_t* m);

}  // namespace fraud::kafka
