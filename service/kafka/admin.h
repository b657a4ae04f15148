#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "detectors/base/status.h"
#include "service/kafka/client.h"

namespace fraud::kafka {

using base::Result;
using base::Status;

// The topic's partition count (> 0) from the cluster's metadata, or what the request found
// instead: kNotFound for a topic that does not exist; kUnavailable when no broker answered in
// time (all brokers down, wrong address, TLS or SASL refused: creating the topic would not
// help); kFailed otherwise. Any client type will do.
[[nodiscard]] Result<int32_t> describeTopic(rd_kafka_t* client, const std::string& topic,
                                            int timeout_ms);

// Ok when any broker answers a metadata request within the timeout; else why not (kUnavailable
// when none answered).
[[nodiscard]] Status brokerReachable(rd_kafka_t* client, int timeout_ms);

// The partition count, or describeTopic()'s error. A topic
// this client does not know yet is asked again for up to kUnknownTopicSettleMs (within
// `timeout_ms`): a topic another client created a moment ago reaches every broker's metadata
// cache shortly after, not at once.
inline constexpr int kUnknownTopicSettleMs = 3000;
[[nodiscard]] Result<int32_t> topicPartitionCount(rd_kafka_t* client, const std::string& topic,
                                                  int timeout_ms);

struct NewTopic {
  std::string name;
  int32_t partitions = 1;
  int replication_factor = -1;                // -1: the broker's default
  std::map<std::string, std::string> config;  // e.g. cleanup.policy=compact
};
// Creates a topic; an error when it fails (it exists, the cluster refused, the request timed
// out).
[[nodiscard]] Status createTopic(rd_kafka_t* client, const NewTopic& topic, int timeout_ms);

// The topic's configuration as the broker reports it (DescribeConfigs: every entry, defaults
// included), or an error when it cannot be read.
[[nodiscard]] Result<std::map<std::string, std::string>> describeTopicConfig(
    rd_kafka_t* client, const std::string& topic, int timeout_ms);

// Sets the topic's configuration to these entries (AlterConfigs: any other entry returns to its
// default).
[[nodiscard]] Status alterTopicConfig(rd_kafka_t* client, const std::string& topic,
                                      const std::map<std::string, std::string>& config,
                                      int timeout_ms);

struct Watermarks {
  int64_t low = 0;   // the first offset still held
  int64_t high = 0;  // the offset after the last record
};
// One partition's watermarks from the broker, or an error when the query fails (a caller must
// not read a failed query as offset 0).
[[nodiscard]] Result<Watermarks> queryWatermarks(rd_kafka_t* client, const std::string& topic,
                                                 int32_t partition, int timeout_ms);
// Every partition's high watermark, 0..partitions-1; the first failed query's error.
[[nodiscard]] Result<std::vector<int64_t>> highWatermarks(rd_kafka_t* client,
                                                          const std::string& topic,
                                                          int32_t partitions, int timeout_ms);

// Each entry's offset asked of its partition's leader (ListOffsets): in, RD_KAFKA_OFFSET_BEGINNING,
// RD_KAFKA_OFFSET_END or a timestamp; out, the offset. An error when any partition's is not had:
// a caller must not read a failed entry as offset 0. A leader that moved (a broker went) is
// looked up again and asked, up to kLeaderLookups times: librdkafka 2.0.2 does not learn it
// from the old leader's refusal ("Not leader for partition") on a client that consumes none of
// the partitions, and would ask the old one until its metadata aged out (15 minutes).
inline constexpr int kLeaderLookups = 3;
[[nodiscard]] Status listOffsets(rd_kafka_t* client, rd_kafka_topic_partition_list_t* partitions,
                                 int timeout_ms);

// The committed offsets of the consumer group `client` is configured with (group.id), -1 where
// it has none. The client need not join the group.
[[nodiscard]] Result<std::vector<int64_t>> committedOffsets(rd_kafka_t* client,
                                                            const std::string& topic,
                                                            int32_t partitions, int timeout_ms);

// A member of a consumer group as DescribeConsumerGroups tells it.
struct GroupMember {
  std::string client_id;
  std::string group_instance_id;  // empty without static membership
};
// The group's current members; an error when the request fails or times out.
// `stop`, when requested (from any thread), ends the wait within kStopPollMs with an error.
[[nodiscard]] Result<std::vector<GroupMember>> groupMembers(rd_kafka_t* client,
                                                            const std::string& group,
                                                            int timeout_ms,
                                                            const std::stop_token& stop = {});

// The metadata string of each partition's committed offset (only partitions that have one),
// without waiting for offsets pending in open transactions (require_stable off). `client` must
// come from makeGroupAdminClient(): on any other client a coordinator move ends the process.
// A coordinator that moved (NOT_COORDINATOR, loading) is asked again within `timeout_ms`.
// `stop`, when requested (from any thread), ends the waits within kStopPollMs with an error.
inline constexpr int kStopPollMs = 100;
[[nodiscard]] Result<std::map<int32_t, std::string>> committedOffsetMetadata(
    rd_kafka_t* client, const std::string& group, const std::string& topic,
    const std::vector<int32_t>& partitions, int timeout_ms, const std::stop_token& stop = {});

// A client for committedOffsetMetadata(): a consumer whose group.id is `group` and which never
// subscribes, joins or commits. librdkafka answers NOT_COORDINATOR to the OffsetFetch that
// ListConsumerGroupOffsets sends by asking the client's own consumer group to look the
// coordinator up again; a producer has no group, and its main thread dereferences a null one and
// takes the process down (rd_kafka_handle_OffsetFetch). A broker failover answers exactly that.
// Still so in 2.8.0 as in 2.0.2: LibrdkafkaBehaviour (librdkafka_behaviour_test.cc) probes the
// library the tests run with and fails once a version no longer crashes.
[[nodiscard]] Result<KafkaHandle> makeGroupAdminClient(const KafkaProperties& common,
                                                       const std::string& group);

// The client.id of the member that owns each assigned partition of `topic` in `group`.
[[nodiscard]] Result<std::map<int32_t, std::string>> groupPartitionOwners(rd_kafka_t* client,
                                                                          const std::string& group,
                                                                          const std::string& topic,
                                                                          int timeout_ms);

}  // namespace fraud::kafka
