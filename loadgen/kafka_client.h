#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// A thin edge over librdkafka's C API: librdkafka errors become messages here, so the rest of
// loadgen/ handles strings, not rd_kafka_resp_err_t.
namespace fraud::loadgen::kafka {

using Properties = std::vector<std::pair<std::string, std::string>>;

// librdkafka's delivery report callback (rd_kafka_conf_set_dr_msg_cb).
using DeliveryCallback = void(rd_kafka_t* producer, const rd_kafka_message_t* message,
                              void* opaque);

struct ClientDeleter {
  void operator()(rd_kafka_t* client) const;
};
using Client = std::unique_ptr<rd_kafka_t, ClientDeleter>;

// Parses "KEY=VALUE"; nothing when there is no '=' or the key is empty.
[[nodiscard]] std::optional<std::pair<std::string, std::string>> parseProperty(
    std::string_view text);

// A producer. `on_delivery` is librdkafka's dr_msg_cb, called from rd_kafka_poll/flush with
// `opaque`. Later properties win over earlier ones.
[[nodiscard]] Client makeProducer(const Properties& properties, DeliveryCallback* on_delivery,
                                  void* opaque, std::string& error);
// A consumer for assign()-based reading: no subscription, no commits.
[[nodiscard]] Client makeConsumer(const Properties& properties, std::string& error);

// The topic's partition count from the cluster's metadata.
[[nodiscard]] std::optional<int32_t> partitionCount(rd_kafka_t* client, const std::string& topic,
                                                    int timeout_ms, std::string& error);

// Each partition's high watermark (the offset after its last record).
[[nodiscard]] std::optional<std::vector<int64_t>> highWatermarks(rd_kafka_t* client,
                                                                 const std::string& topic,
                                                                 int32_t partitions, int timeout_ms,
                                                                 std::string& error);

// The consumer group's committed offsets on the topic (-1 where the group has none). `client`
// must be a consumer configured with that group.id; it does not join the group.
[[nodiscard]] std::optional<std::vector<int64_t>> committedOffsets(rd_kafka_t* client,
                                                                   const std::string& topic,
                                                                   int32_t partitions,
                                                                   int timeout_ms,
                                                                   std::string& error);

// Enqueues one record for `partition` (copied). `timestamp_ms` 0 lets librdkafka stamp it.
// Returns librdkafka's code: RD_KAFKA_RESP_ERR__QUEUE_FULL means poll and try again.
[[nodiscard]] rd_kafka_resp_err_t produce(rd_kafka_t* producer, rd_kafka_topic_t* topic,
                                          int32_t partition, std::string_view key,
                                          std::string_view value, int64_t timestamp_ms,
                                          const Properties& headers = {});

// A record's header value; nothing when absent.
[[nodiscard]] std::optional<std::string> headerValue(const rd_kafka_message_t* message,
                                                     const char* name);

// Reads every partition of `topic` from its beginning up to `end_offsets` (exclusive), in each
// partition's order, and hands each record to `visit`. `consumer` must be made by makeConsumer
// with enable.partition.eof=true (it is). A partition with records still to come but none
// delivered for `stall_timeout_ms` (an open transaction, a lost broker) fails the read.
[[nodiscard]] bool readTopic(rd_kafka_t* consumer, const std::string& topic,
                             const std::vector<int64_t>& end_offsets,
                             const std::function<void(const rd_kafka_message_t&)>& visit,
                             int stall_timeout_ms, std::string& error);

// Creates a topic (an error when it exists). For tests and tools.
[[nodiscard]] bool createTopic(rd_kafka_t* client, const std::string& topic, int32_t partitions,
                               int timeout_ms, std::string& error);

}  // namespace fraud::loadgen::kafka
