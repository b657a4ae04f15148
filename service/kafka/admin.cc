#include "service/kafka/admin.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "service/kafka/client.h"

namespace fraud::kafka {
namespace {

bool isUnreachable(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
         err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__RESOLVE ||
         err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
}

// The partition's leader is another broker than the one asked, or none yet: a metadata refresh
// tells which.
bool isLeaderMoved(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
         err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
         err == RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH ||
         err == RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH ||
         err == RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE;
}

using Metadata = std::unique_ptr<const rd_kafka_metadata_t, decltype(&rd_kafka_metadata_destroy)>;

// Waits up to `wait_ms` for one event, looking at `stop` every kStopPollMs: nothing when none
// came in time or once stop is requested. A request left behind is librdkafka's to drop when its
// queue goes.
KafkaEvent pollQueue(rd_kafka_queue_t* queue, int wait_ms, const std::stop_token& stop) {
  if (!stop.stop_possible()) return KafkaEvent(rd_kafka_queue_poll(queue, wait_ms));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (!stop.stop_requested()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    const int slice = static_cast<int>(std::min<int64_t>(left, kStopPollMs));
    if (KafkaEvent event(rd_kafka_queue_poll(queue, slice)); event) return event;
  }
  return {};
}

// Waits for one admin result event; nothing when none came in time (or `stop` was requested).
KafkaEvent awaitResult(rd_kafka_queue_t* queue, int timeout_ms, const std::stop_token& stop = {}) {
  // The operation timeout runs on the broker; give the request itself a margin on top.
  return pollQueue(queue, timeout_ms + 5000, stop);
}

// Sleeps `wait`, in steps of at most kStopPollMs; false, at once, when `stop` is requested.
bool sleepUnlessStopped(std::chrono::milliseconds wait, const std::stop_token& stop) {
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!stop.stop_requested()) {
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        left, std::chrono::milliseconds(kStopPollMs)));
  }
  return false;
}

Status stopped(const std::string& what) { return Status::unavailable(what + ": stopping"); }

}  // namespace

Result<int32_t> describeTopic(rd_kafka_t* client, const std::string& topic, int timeout_ms) {
  TopicHandle handle(rd_kafka_topic_new(client, topic.c_str(), nullptr));
  const rd_kafka_metadata_t* raw = nullptr;
  const auto err = rd_kafka_metadata(client, 0, handle.get(), &raw, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string message = "no metadata for topic " + topic + " within " +
                                std::to_string(timeout_ms) + " ms: " + rd_kafka_err2str(err);
    if (isUnreachable(err)) return Status::unavailable("broker unreachable: " + message);
    return Status::failed(message);
  }
  const Metadata metadata(raw, &rd_kafka_metadata_destroy);
  if (metadata->topic_cnt != 1) return Status::notFound("topic " + topic + " does not exist");
  const auto& entry = metadata->topics[0];
  if (entry.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
    return Status::notFound("topic " + topic + " does not exist");
  }
  if (entry.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("topic " + topic + ": " + rd_kafka_err2str(entry.err));
  }
  if (entry.partition_cnt <= 0) return Status::failed("topic " + topic + " has no partitions");
  return entry.partition_cnt;
}

Status brokerReachable(rd_kafka_t* client, int timeout_ms) {
  const rd_kafka_metadata_t* raw = nullptr;
  // all_topics=0 and no topic: brokers only, the cheapest request that needs an answer.
  const auto err = rd_kafka_metadata(client, 0, nullptr, &raw, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string why =
        " (no answer within " + std::to_string(timeout_ms) + " ms: " + rd_kafka_err2str(err) + ")";
    if (isUnreachable(err)) return Status::unavailable("broker unreachable" + why);
    return Status::failed("cluster metadata failed" + why);
  }
  rd_kafka_metadata_destroy(raw);
  return {};
}

Result<int32_t> topicPartitionCount(rd_kafka_t* client, const std::string& topic, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto settle_until =
      Clock::now() + std::chrono::milliseconds(std::min(timeout_ms, kUnknownTopicSettleMs));
  auto info = describeTopic(client, topic, timeout_ms);
  while (info.code() == base::StatusCode::kNotFound && Clock::now() < settle_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    info = describeTopic(client, topic, timeout_ms);
  }
  return info;
}

Status createTopic(rd_kafka_t* client, const NewTopic& topic, int timeout_ms) {
  char message[512];
  std::unique_ptr<rd_kafka_NewTopic_t, decltype(&rd_kafka_NewTopic_destroy)> new_topic(
      rd_kafka_NewTopic_new(topic.name.c_str(), topic.partitions, topic.replication_factor, message,
                            sizeof(message)),
      &rd_kafka_NewTopic_destroy);
  if (!new_topic) {
    return Status::failed("cannot create topic " + topic.name + ": " + message);
  }
  for (const auto& [key, value] : topic.config) {
    if (const auto err = rd_kafka_NewTopic_set_config(new_topic.get(), key.c_str(), value.c_str());
        err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status::failed("cannot create topic " + topic.name + ": config " + key + ": " +
                            rd_kafka_err2str(err));
    }
  }
  std::unique_ptr<rd_kafka_AdminOptions_t, decltype(&rd_kafka_AdminOptions_destroy)> options(
      rd_kafka_AdminOptions_new(client, RD_KAFKA_ADMIN_OP_CREATETOPICS),
      &rd_kafka_AdminOptions_destroy);
  if (rd_kafka_AdminOptions_set_operation_timeout(options.get(), timeout_ms, message,
                                                  sizeof(message)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed(std::string("cannot create topic: ") + message);
  }
  KafkaQueue queue(rd_kafka_queue_new(client));
  rd_kafka_NewTopic_t* topics[] = {new_topic.get()};
  rd_kafka_CreateTopics(client, topics, 1, options.get(), queue.get());
  const auto event = awaitResult(queue.get(), timeout_ms);
  if (!event) {
    return Status::failed("creating topic " + topic.name + " timed out");
  }
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot create topic " + topic.name + ": " +
                          rd_kafka_event_error_string(event.get()));
  }
  size_t count = 0;
  const auto* results =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event.get()), &count);
  if (count != 1) {
    return Status::failed("cannot create topic " + topic.name + ": no result");
  }
  if (rd_kafka_topic_result_error(results[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot create topic " + topic.name + ": " +
                          rd_kafka_topic_result_error_string(results[0]));
  }
  return {};
}

Result<std::map<std::string, std::string>> describeTopicConfig(rd_kafka_t* client,
                                                               const std::string& topic,
                                                               int timeout_ms) {
  std::unique_ptr<rd_kafka_ConfigResource_t, decltype(&rd_kafka_ConfigResource_destroy)> resource(
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str()),
      &rd_kafka_ConfigResource_destroy);
  KafkaQueue queue(rd_kafka_queue_new(client));
  rd_kafka_ConfigResource_t* resources[] = {resource.get()};
  rd_kafka_DescribeConfigs(client, resources, 1, nullptr, queue.get());
  const auto event = awaitResult(queue.get(), timeout_ms);
  if (!event) {
    return Status::failed("describing the config of " + topic + " timed out");
  }
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot describe " + topic + ": " +
                          rd_kafka_event_error_string(event.get()));
  }
  size_t count = 0;
  const auto* results = rd_kafka_DescribeConfigs_result_resources(
      rd_kafka_event_DescribeConfigs_result(event.get()), &count);
  if (count != 1 || rd_kafka_ConfigResource_error(results[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed(
        "cannot describe " + topic + ": " +
        (count == 1 ? rd_kafka_ConfigResource_error_string(results[0]) : "no result"));
  }
  std::map<std::string, std::string> config;
  size_t entries = 0;
  const auto* configs = rd_kafka_ConfigResource_configs(results[0], &entries);
  for (size_t e = 0; e < entries; ++e) {
    const char* value = rd_kafka_ConfigEntry_value(configs[e]);
    config[rd_kafka_ConfigEntry_name(configs[e])] = value == nullptr ? "" : value;
  }
  return config;
}

Status alterTopicConfig(rd_kafka_t* client, const std::string& topic,
                        const std::map<std::string, std::string>& config, int timeout_ms) {
  std::unique_ptr<rd_kafka_ConfigResource_t, decltype(&rd_kafka_ConfigResource_destroy)> resource(
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str()),
      &rd_kafka_ConfigResource_destroy);
  for (const auto& [key, value] : config) {
    if (const auto err =
            rd_kafka_ConfigResource_set_config(resource.get(), key.c_str(), value.c_str());
        err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::string message = "topic " + topic;
      message.append(" config ").append(key).append(": ").append(rd_kafka_err2str(err));
      return Status::failed(std::move(message));
    }
  }
  KafkaQueue queue(rd_kafka_queue_new(client));
  rd_kafka_ConfigResource_t* resources[] = {resource.get()};
  rd_kafka_AlterConfigs(client, resources, 1, nullptr, queue.get());
  const auto event = awaitResult(queue.get(), timeout_ms);
  if (!event) {
    return Status::failed("altering the config of " + topic + " timed out");
  }
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot alter " + topic + ": " +
                          rd_kafka_event_error_string(event.get()));
  }
  size_t count = 0;
  const auto* results = rd_kafka_AlterConfigs_result_resources(
      rd_kafka_event_AlterConfigs_result(event.get()), &count);
  if (count != 1 || rd_kafka_ConfigResource_error(results[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed(
        "cannot alter " + topic + ": " +
        (count == 1 ? rd_kafka_ConfigResource_error_string(results[0]) : "no result"));
  }
  return {};
}

Result<Watermarks> queryWatermarks(rd_kafka_t* client, const std::string& topic, int32_t partition,
                                   int timeout_ms) {
  Watermarks marks;
  const auto err = rd_kafka_query_watermark_offsets(client, topic.c_str(), partition, &marks.low,
                                                    &marks.high, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot read the offsets of " + topic + "/" + std::to_string(partition) +
                          ": " + rd_kafka_err2str(err));
  }
  return marks;
}

Result<std::vector<int64_t>> highWatermarks(rd_kafka_t* client, const std::string& topic,
                                            int32_t partitions, int timeout_ms) {
  std::vector<int64_t> ends;
  ends.reserve(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    const auto marks = queryWatermarks(client, topic, p, timeout_ms);
    if (!marks) return marks.status();
    ends.push_back(marks->high);
  }
  return ends;
}

Status listOffsets(rd_kafka_t* client, rd_kafka_topic_partition_list_t* partitions,
                   int timeout_ms) {
  std::vector<int64_t> asked;
  std::set<std::string> topics;
  for (int i = 0; i < partitions->cnt; ++i) {
    asked.push_back(partitions->elems[i].offset);
    topics.insert(partitions->elems[i].topic);
  }
  for (int lookup = 0;; ++lookup) {
    auto err = rd_kafka_offsets_for_times(client, partitions, timeout_ms);
    for (int i = 0; i < partitions->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
      err = partitions->elems[i].err;
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
    if (!isLeaderMoved(err) || lookup == kLeaderLookups) {
      return Status::failed(rd_kafka_err2str(err));
    }
    for (int i = 0; i < partitions->cnt; ++i) {
      partitions->elems[i].offset = asked[static_cast<size_t>(i)];
      partitions->elems[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    // describeTopic()'s request names the topic, and its answer updates the client's metadata
    // cache, where the next ListOffsets looks its leaders up. A lookup that fails is left to
    // that ListOffsets to report.
    for (const std::string& name : topics)
      static_cast<void>(describeTopic(client, name, timeout_ms));
  }
}

Result<std::vector<int64_t>> committedOffsets(rd_kafka_t* client, const std::string& topic,
                                              int32_t partitions, int timeout_ms) {
  auto list = makePartitionList(topic, partitions);
  if (const auto err = rd_kafka_committed(client, list.get(), timeout_ms);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot read committed offsets on " + topic + ": " +
                          rd_kafka_err2str(err));
  }
  std::vector<int64_t> offsets(static_cast<size_t>(partitions), -1);
  for (int i = 0; i < list->cnt; ++i) {
    const auto& entry = list->elems[i];
    if (entry.err == RD_KAFKA_RESP_ERR_NO_ERROR && entry.offset >= 0 && entry.partition >= 0 &&
        entry.partition < partitions) {
      offsets[static_cast<size_t>(entry.partition)] = entry.offset;
    }
  }
  return offsets;
}

namespace {

// Describes `group` and visits each of its members; an error when the request fails or times
// out.
Status forEachGroupMember(rd_kafka_t* client, const std::string& group, int timeout_ms,
                          const std::function<void(const rd_kafka_MemberDescription_t*)>& visit,
                          const std::stop_token& stop = {}) {
  const char* groups_asked[] = {group.c_str()};
  KafkaQueue queue(rd_kafka_queue_new(client));
  rd_kafka_DescribeConsumerGroups(client, groups_asked, 1, nullptr, queue.get());
  const auto event = pollQueue(queue.get(), timeout_ms, stop);
  if (stop.stop_requested()) return stopped("describing group " + group);
  if (!event) {
    return Status::failed("describing group " + group + " timed out");
  }
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::failed("cannot describe group " + group + ": " +
                          rd_kafka_event_error_string(event.get()));
  }
  size_t count = 0;
  const auto* groups = rd_kafka_DescribeConsumerGroups_result_groups(
      rd_kafka_event_DescribeConsumerGroups_result(event.get()), &count);
  for (size_t g = 0; g < count; ++g) {
    if (const auto* e = rd_kafka_ConsumerGroupDescription_error(groups[g]); e != nullptr) {
      return Status::failed("cannot describe group " + group + ": " + rd_kafka_error_string(e));
    }
    const size_t members = rd_kafka_ConsumerGroupDescription_member_count(groups[g]);
    for (size_t m = 0; m < members; ++m)
      visit(rd_kafka_ConsumerGroupDescription_member(groups[g], m));
  }
  return {};
}

}  // namespace

Result<std::map<int32_t, std::string>> groupPartitionOwners(rd_kafka_t* client,
                                                            const std::string& group,
                                                            const std::string& topic,
                                                            int timeout_ms) {
  std::map<int32_t, std::string> owners;
  auto described = forEachGroupMember(client, group, timeout_ms, [&](const auto* member) {
    const auto* assigned =
        rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(member));
    for (int i = 0; assigned != nullptr && i < assigned->cnt; ++i) {
      if (topic == assigned->elems[i].topic) {
        owners[assigned->elems[i].partition] = rd_kafka_MemberDescription_client_id(member);
      }
    }
  });
  if (!described.ok()) return described;
  return owners;
}

Result<std::vector<GroupMember>> groupMembers(rd_kafka_t* client, const std::string& group,
                                              int timeout_ms, const std::stop_token& stop) {
  std::vector<GroupMember> result;
  auto described = forEachGroupMember(
      client, group, timeout_ms,
      [&](const auto* member) {
        const char* instance = rd_kafka_MemberDescription_group_instance_id(member);
        result.push_back(GroupMember{rd_kafka_MemberDescription_client_id(member),
                                     instance != nullptr ? instance : ""});
      },
      stop);
  if (!described.ok()) return described;
  return result;
}

Result<KafkaHandle> makeGroupAdminClient(const KafkaProperties& common, const std::string& group) {
  KafkaProperties props = common;
  props["group.id"] = group;
  props["enable.auto.commit"] = "false";
  props.erase("group.instance.id");  // never a member: it must not take a static member's place
  return makeKafkaClient(RD_KAFKA_CONSUMER, props);
}

namespace {

// One ListConsumerGroupOffsets round of committedOffsetMetadata(), and librdkafka's code for why
// it failed (NO_ERROR when it did not fail, or failed before the broker answered).
struct OffsetMetadataRound {
  Result<std::map<int32_t, std::string>> metadata;
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
};
OffsetMetadataRound listOffsetMetadataOnce(rd_kafka_t* client, const std::string& group,
                                           const std::string& topic,
                                           const std::vector<int32_t>& partitions, int timeout_ms,
                                           const std::stop_token& stop) {
  auto asked = makePartitionList(static_cast<int>(partitions.size()));
  for (const int32_t p : partitions) {
    rd_kafka_topic_partition_list_add(asked.get(), topic.c_str(), p);
  }
  rd_kafka_ListConsumerGroupOffsets_t* request =
      rd_kafka_ListConsumerGroupOffsets_new(group.c_str(), asked.get());
  std::unique_ptr<rd_kafka_AdminOptions_t, decltype(&rd_kafka_AdminOptions_destroy)> options(
      rd_kafka_AdminOptions_new(client, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS),
      &rd_kafka_AdminOptions_destroy);
  char reason[256];
  if (rd_kafka_AdminOptions_set_request_timeout(options.get(), timeout_ms, reason,
                                                sizeof(reason)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_ListConsumerGroupOffsets_destroy(request);
    return {Status::failed("cannot list the committed offsets of group " + group + ": " + reason)};
  }
  if (KafkaError e(rd_kafka_AdminOptions_set_require_stable_offsets(options.get(), 0)); e) {
    rd_kafka_ListConsumerGroupOffsets_destroy(request);
    return {Status::failed(rd_kafka_error_string(e.get()))};
  }
  KafkaQueue queue(rd_kafka_queue_new(client));
  rd_kafka_ListConsumerGroupOffsets(client, &request, 1, options.get(), queue.get());
  rd_kafka_ListConsumerGroupOffsets_destroy(request);
  const auto event = awaitResult(queue.get(), timeout_ms, stop);
  if (stop.stop_requested()) return {stopped("listing the committed offsets of group " + group)};
  if (!event) {
    return {Status::failed("listing the committed offsets of group " + group + " timed out")};
  }
  if (const auto code = rd_kafka_event_error(event.get()); code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return {Status::failed("cannot list the committed offsets of group " + group + ": " +
                           rd_kafka_event_error_string(event.get())),
            code};
  }
  std::map<int32_t, std::string> result;
  size_t count = 0;
  const auto* groups = rd_kafka_ListConsumerGroupOffsets_result_groups(
      rd_kafka_event_ListConsumerGroupOffsets_result(event.get()), &count);
  for (size_t g = 0; g < count; ++g) {
    if (const auto* e = rd_kafka_group_result_error(groups[g]); e != nullptr) {
      return {Status::failed("cannot list the committed offsets of group " + group + ": " +
                             rd_kafka_error_string(e)),
              rd_kafka_error_code(e)};
    }
    const auto* offsets = rd_kafka_group_result_partitions(groups[g]);
    for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
      const auto& elem = offsets->elems[i];
      if (elem.err != RD_KAFKA_RESP_ERR_NO_ERROR || elem.offset < 0 || elem.metadata == nullptr ||
          elem.metadata_size == 0) {
        continue;
      }
      result[elem.partition] =
          std::string(static_cast<const char*>(elem.metadata), elem.metadata_size);
    }
  }
  return {std::move(result)};
}

}  // namespace

Result<std::map<int32_t, std::string>> committedOffsetMetadata(
    rd_kafka_t* client, const std::string& group, const std::string& topic,
    const std::vector<int32_t>& partitions, int timeout_ms, const std::stop_token& stop) {
  // The group's coordinator moves when its broker fails: ask again, within the same deadline.
  constexpr auto kRetryBackoff = std::chrono::milliseconds(200);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto round = listOffsetMetadataOnce(client, group, topic, partitions,
                                        static_cast<int>(std::max<int64_t>(1, left.count())), stop);
    const auto code = round.code;
    const bool coordinator_moved = code == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
                                   code == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
                                   code == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    if (round.metadata || !coordinator_moved ||
        std::chrono::steady_clock::now() + kRetryBackoff >= deadline) {
      return std::move(round.metadata);
    }
    if (!sleepUnlessStopped(kRetryBackoff, stop)) {
      return stopped("listing the committed offsets of group " + group);
    }
  }
}

}  // namespace fraud::kafka
