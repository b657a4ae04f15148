#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "service/kafka/client.h"

namespace fraud::kafka {

// What a metadata request for one topic found. `kUnreachable`: no broker answered in time (all
// brokers down, wrong address, TLS or SASL refused): creating the topic would not help.
enum class TopicStatus { kFound, kUnknownTopic, kUnreachable, kFailed };

struct TopicInfo {
  TopicStatus status = TopicStatus::kFailed;
  int32_t partitions = 0;  // > 0 when kFound
  std::string error;       // a message for every other status
};

// The topic's partition count from the cluster's metadata. Any client type will do.
[[nodiscard]] TopicInfo describeTopic(rd_kafka_t* client, const std::string& topic, int timeout_ms);

// Whether any broker answers a metadata request within the timeout; `error` says why not.
[[nodiscard]] bool brokerReachable(rd_kafka_t* client, int timeout_ms, std::string& error);

// The partition count, or nothing with `error` set (the status folded into the message). A topic
// this client does not know yet is asked again for up to kUnknownTopicSettleMs (within
// `timeout_ms`): a topic another client created a moment ago reaches every broker's metadata
// cache shortly after, not at once.
inline constexpr int kUnknownTopicSettleMs = 3000;
[[nodiscard]] std::optional<int32_t> topicPartitionCount(rd_kafka_t* client,
                                                         const std::string& topic, int timeout_ms,
                                                         std::string& error);

struct NewTopic {
  std::string name;
  int32_t partitions = 1;
  int replication_factor = -1;                // -1: the broker's default
  std::map<std::string, std::string> config;  // e.g. cleanup.policy=compact
};
// Creates a topic; false and `error` set when it fails (it exists, the cluster refused, the
// request timed out).
[[nodiscard]] bool createTopic(rd_kafka_t* client, const NewTopic& topic, int timeout_ms,
                               std::string& error);

// The topic's configuration as the broker reports it (DescribeConfigs: every entry, defaults
// included); nothing, with `error` set, when it cannot be read.
[[nodiscard]] std::optional<std::map<std::string, std::string>> describeTopicConfig(
    rd_kafka_t* client, const std::string& topic, int timeout_ms, std::string& error);

// Sets the topic's configuration to these entries (AlterConfigs: any other entry returns to its
// default).
[[nodiscard]] bool alterTopicConfig(rd_kafka_t* client, const std::string& topic,
                                    const std::map<std::string, std::string>& config,
                                    int timeout_ms, std::string& error);

struct Watermarks {
  int64_t low = 0;   // the first offset still held
  int64_t high = 0;  // the offset after the last record
};
// One partition's watermarks from the broker; nothing and `error` set when the query fails (a
// caller must not read a failed query as offset 0).
[[nodiscard]] std::optional<Watermarks> queryWatermarks(rd_kafka_t* client,
                                                        const std::string& topic, int32_t partition,
                                                        int timeout_ms, std::string& error);
// Every partition's high watermark, 0..partitions-1; nothing when any query fails.
[[nodiscard]] std::optional<std::vector<int64_t>> highWatermarks(rd_kafka_t* client,
                                                                 const std::string& topic,
                                                                 int32_t partitions, int timeout_ms,
                                                                 std::string& error);

// The committed offsets of the consumer group `client` is configured with (group.id), -1 where
// it has none. The client need not join the group.
[[nodiscard]] std::optional<std::vector<int64_t>> committedOffsets(rd_kafka_t* client,
                                                                   const std::string& topic,
                                                                   int32_t partitions,
                                                                   int timeout_ms,
                                                                   std::string& error);

// A member of a consumer group as DescribeConsumerGroups tells it.
struct GroupMember {
  std::string client_id;
  std::string group_instance_id;  // empty without static membership
};
// The group's current members; nothing with `error` set when the request fails or times out.
[[nodiscard]] std::optional<std::vector<GroupMember>> groupMembers(rd_kafka_t* client,
                                                                   const std::string& group,
                                                                   int timeout_ms,
                                                                   std::string& error);

// The metadata string of each partition's committed offset (only partitions that have one),
// without waiting for offsets pending in open transactions (require_stable off). `client` must
// come from makeGroupAdminClient(): on any other client a coordinator move ends the process.
[[nodiscard]] std::optional<std::map<int32_t, std::string>> committedOffsetMetadata(
    rd_kafka_t* client, const std::string& group, const std::string& topic,
    const std::vector<int32_t>& partitions, int timeout_ms, std::string& error);

// A client for committedOffsetMetadata(): a consumer whose group.id is `group` and which never
// subscribes, joins or commits. librdkafka answers NOT_COORDINATOR to the OffsetFetch that
// ListConsumerGroupOffsets sends by asking the client's own consumer group to look the
// coordinator up again; a producer has no group, and its main thread dereferences a null one and
// takes the process down (rd_kafka_handle_OffsetFetch). A broker failover answers exactly that.
// Still so in 2.8.0 as in 2.0.2: LibrdkafkaBehaviour (librdkafka_behaviour_test.cc) probes the
// library the tests run with and fails once a version no longer crashes.
[[nodiscard]] KafkaHandle makeGroupAdminClient(const KafkaProperties& common,
                                               const std::string& group, std::string& error);

// The client.id of the member that owns each assigned partition of `topic` in `group`.
[[nodiscard]] std::optional<std::map<int32_t, std::string>> groupPartitionOwners(
    rd_kafka_t* client, const std::string& group, const std::string& topic, int timeout_ms,
    std::string& error);

}  // namespace fraud::kafka
